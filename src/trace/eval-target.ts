// The tracer's target evaluators: one small compiler per target of the typed rule vocabulary
// (netfilter/iptables/rule.ts), turning the target's options (read through their typed views,
// netfilter/iptables/rule-views.ts) into what the walker applies
// (a verdict, a NAT, a mark change, a log line). Any other target name is a jump or goto to a
// chain; the walker reports it when the table has no such chain. Pure.

import {
  dnatOf,
  logOf,
  markTargetOf,
  masqueradeOf,
  rejectOf,
  snatOf,
  type MarkOp,
} from '../netfilter/iptables/rule-views.js';
import { isTargetName, type RuleOption, type TargetName } from '../netfilter/iptables/rule.js';
import type { ParsedIP } from '../util/ip.js';
import type { Bad } from './eval-match.js';
import { parseMarkValue, parseNatAddress } from './eval-values.js';

export type { MarkOp };

export type Target =
  | { readonly kind: 'none' }
  | { readonly kind: 'chain'; readonly chain: string; readonly goto: boolean }
  | { readonly kind: 'ACCEPT' | 'DROP' | 'RETURN' }
  | { readonly kind: 'REJECT'; readonly rejectWith: string }
  | {
      readonly kind: 'DNAT' | 'SNAT';
      readonly ip: ParsedIP | undefined;
      readonly port: number | undefined;
      readonly text: string;
    }
  | { readonly kind: 'MASQUERADE'; readonly text: string }
  | { readonly kind: 'MARK'; readonly op: MarkOp; readonly value: bigint; readonly mask: bigint }
  | { readonly kind: 'LOG'; readonly prefix: string };

type TargetCompiler = (opts: readonly RuleOption[], bad: Bad) => Target;

function nat(kind: 'DNAT' | 'SNAT'): TargetCompiler {
  const view = kind === 'DNAT' ? dnatOf : snatOf;
  return (opts, bad) => {
    const text = view(opts).to ?? '';
    const parsed = parseNatAddress(text);
    if (!parsed) {
      bad(`${kind} ${text}: not an address[:port] this tracer understands`);
      return { kind: 'none' };
    }
    return { kind, ip: parsed.ip, port: parsed.port, text };
  };
}

const markTarget: TargetCompiler = (opts, bad) => {
  const view = markTargetOf(opts);
  const mv = view ? parseMarkValue(view.text) : undefined;
  if (!view || !mv) {
    bad('MARK: missing or bad mark value');
    return { kind: 'none' };
  }
  return { kind: 'MARK', op: view.op, value: mv.value, mask: mv.mask };
};

/** The targets the walker implements (besides jumps/gotos to user chains). */
export const TARGET_COMPILERS: Readonly<Record<TargetName, TargetCompiler>> = {
  ACCEPT: () => ({ kind: 'ACCEPT' }),
  DROP: () => ({ kind: 'DROP' }),
  RETURN: () => ({ kind: 'RETURN' }),
  REJECT: (opts) => ({
    kind: 'REJECT',
    rejectWith: rejectOf(opts).rejectWith ?? 'icmp-port-unreachable',
  }),
  DNAT: nat('DNAT'),
  SNAT: nat('SNAT'),
  MASQUERADE: (opts) => ({
    kind: 'MASQUERADE',
    text: masqueradeOf(opts).words.join(' '),
  }),
  MARK: markTarget,
  LOG: (opts) => ({ kind: 'LOG', prefix: logOf(opts).prefix ?? '' }),
};

/** Compiles a target: a goto is always to a chain; unknown names are chains too. */
export function compileTarget(
  name: string,
  opts: readonly RuleOption[],
  isGoto: boolean,
  bad: Bad,
): Target {
  if (isGoto) return { kind: 'chain', chain: name, goto: true };
  return isTargetName(name)
    ? TARGET_COMPILERS[name](opts, bad)
    : { kind: 'chain', chain: name, goto: false };
}
