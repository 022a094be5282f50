// Typed builders for the common shape of a rule — comment, protocol, source, destination,
// destination port, target — in the word order kube-proxy writes them
// (`-m comment --comment C -m tcp -p tcp [-s S] [-d D] [--dport N] -j T`), and the renderer
// from a typed rule straight to restore text. For planners that write text fast: the rule is
// described once, typed, and rendered once. Pure.

import { quoteArg } from './render.js';
import type { ModuleMatch, RuleOption, RulePart, TypedRule } from './rule.js';
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

function option(name: string, value: string): RuleOption {
  return { name, values: [value], negate: false, known: true };
}

function module(
  module: ModuleMatch['module'],
  header: ModuleMatch['header'],
  options: RuleOption[],
): ModuleMatch {
  return { kind: 'match', module, header, flag: '-m', negate: false, options };
}

/** The typed rule of a SimpleRuleSpec (see file header for the word order). */
export function buildSimpleRule(spec: SimpleRuleSpec): TypedRule {
  const parts: RulePart[] = [];
  if (spec.comment !== undefined)
    parts.push(module('comment', 'explicit', [option('--comment', spec.comment)]));
  if (spec.proto !== undefined) {
    parts.push(module(spec.proto, 'explicit', []));
    parts.push({ kind: 'protocol', flag: '-p', negate: false, value: spec.proto });
  }
  if (spec.src !== undefined)
    parts.push({ kind: 'source', flag: '-s', negate: false, value: spec.src });
  if (spec.dst !== undefined)
    parts.push({ kind: 'destination', flag: '-d', negate: false, value: spec.dst });
  if (spec.dport !== undefined && spec.proto !== undefined)
    parts.push(module(spec.proto, 'continued', [option('--dport', String(spec.dport))]));
  parts.push({
    kind: 'target',
    name: spec.jump,
    header: 'explicit',
    flag: '-j',
    negate: false,
    options: [],
  });
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
