// Typed builders of rules: part constructors (`matchPart`, `commentPart`, `setPart`,
// `protocolPart`, `addressPart`, `jumpPart`, …) that `buildRule` strings into a TypedRule in
// the order given, for rules of any shape; and the common shape of a capture rule — comment,
// protocol, source, destination, destination port, target — in the word order kube-proxy
// writes them (`-m comment --comment C -m tcp -p tcp [-s S] [-d D] [--dport N] -j T`), with
// the renderer from a typed rule straight to restore text. Every built rule parses back
// (`parseRule(renderRuleArgs(rule))`) to the same typed rule. Pure.

import { quoteArg } from './render.js';
import type {
  AddressMatch,
  MatchModule,
  ModuleMatch,
  ProtocolMatch,
  RuleOption,
  RulePart,
  TargetPart,
  TypedRule,
} from './rule.js';
import { renderRuleArgs } from './rule.js';

/** The parts of a simple rule; every field but `jump` is optional. */
export interface SimpleRuleSpec {
  readonly comment?: string;
  /** `-m P -p P`: the protocol and its match extension. */
  readonly proto?: 'tcp' | 'udp' | 'sctp';
  readonly src?: string;
  readonly dst?: string;
  /** `--dport N` of the protocol's extension (needs `proto`). */
  readonly dport?: number;
  /** The target: a chain or a built-in target such as ACCEPT, DROP, REJECT. */
  readonly jump: string;
}

/** A known option of a match or target: `[!] NAME VALUES...`. */
export function ruleOption(
  name: string,
  values: readonly string[] = [],
  negate = false,
): RuleOption {
  return { name, values, negate, known: true };
}

function option(name: string, value: string): RuleOption {
  return ruleOption(name, [value]);
}

function module(
  module: MatchModule,
  header: ModuleMatch['header'],
  options: RuleOption[],
): ModuleMatch {
  return { kind: 'match', module, header, flag: '-m', negate: false, options };
}

/** `-m MODULE OPTIONS...`: an instance of a match extension, written here. */
export function matchPart(name: MatchModule, ...options: RuleOption[]): ModuleMatch {
  return module(name, 'explicit', options);
}

/** `-m comment --comment TEXT` (rendered quoted when TEXT needs it). */
export function commentPart(text: string): ModuleMatch {
  return matchPart('comment', option('--comment', text));
}

/**
 * `-m set [!] --match-set NAME FLAGS`: the packet is (not) in ipset NAME, where FLAGS is the
 * comma-separated `src`/`dst` word per dimension of the set (`dst,dst` for hash:ip,port).
 */
export function setPart(name: string, flags: string, negate = false): ModuleMatch {
  return matchPart('set', ruleOption('--match-set', [name, flags], negate));
}

/** `[!] -p PROTO`, without its match extension (`-m tcp`): see buildSimpleRule for that. */
export function protocolPart(value: string, negate = false): ProtocolMatch {
  return { kind: 'protocol', flag: '-p', negate, value };
}

/** `[!] -s ADDR` (source) or `[!] -d ADDR` (destination). */
export function addressPart(
  kind: 'source' | 'destination',
  value: string,
  negate = false,
): AddressMatch {
  return { kind, flag: kind === 'source' ? '-s' : '-d', negate, value };
}

/** `-j NAME OPTIONS...`: a built-in target with its options, or a jump to chain NAME. */
export function jumpPart(name: string, ...options: RuleOption[]): TargetPart {
  return { kind: 'target', name, header: 'explicit', flag: '-j', negate: false, options };
}

/** A typed rule of these parts, in the order given (arrays of parts are spliced in). */
export function buildRule(...parts: readonly (RulePart | readonly RulePart[])[]): TypedRule {
  return { parts: parts.flat() };
}

/** The typed rule of a SimpleRuleSpec (see file header for the word order). */
export function buildSimpleRule(spec: SimpleRuleSpec): TypedRule {
  const parts: RulePart[] = [];
  if (spec.comment !== undefined) parts.push(commentPart(spec.comment));
  if (spec.proto !== undefined) parts.push(matchPart(spec.proto), protocolPart(spec.proto));
  if (spec.src !== undefined) parts.push(addressPart('source', spec.src));
  if (spec.dst !== undefined) parts.push(addressPart('destination', spec.dst));
  if (spec.dport !== undefined && spec.proto !== undefined)
    parts.push(module(spec.proto, 'continued', [option('--dport', String(spec.dport))]));
  parts.push(jumpPart(spec.jump));
  return { parts };
}

/**
 * The restore text of a SimpleRuleSpec: exactly `renderRuleText(buildSimpleRule(spec))`
 * (the tests hold it to that), written without the intermediate parts because the planner
 * renders one per Service address on every full sync.
 */
export function renderSimpleRule(spec: SimpleRuleSpec): string {
  let out = spec.comment === undefined ? '' : `-m comment --comment ${quoteArg(spec.comment)} `;
  const proto = spec.proto;
  if (proto !== undefined) out += `-m ${proto} -p ${proto} `;
  if (spec.src !== undefined) out += `-s ${quoteArg(spec.src)} `;
  if (spec.dst !== undefined) out += `-d ${quoteArg(spec.dst)} `;
  if (spec.dport !== undefined && proto !== undefined) out += `--dport ${spec.dport} `;
  return `${out}-j ${quoteArg(spec.jump)}`;
}

/** A typed rule's arguments as restore text, quoted as iptables-save quotes them. */
export function renderRuleText(rule: TypedRule): string {
  return renderRuleArgs(rule).map(quoteArg).join(' ');
}
