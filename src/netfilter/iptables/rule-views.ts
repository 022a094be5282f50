// Typed views of the options of each match extension and target of the rule vocabulary
// (rule.ts): `portMatchOf(options)` says "destination port 80, negated" where the parsed part
// only holds `{name: '--dport', values: ['80']}`. Readers (the tracer) switch on these views
// and never compare option-name strings. A view is lenient the way readers have always been:
// an option it does not model still appears, by its written name, so it can be reported
// exactly as written. Values stay text where a reader echoes them in its messages. Pure.

import type { RuleOption } from './rule.js';

function first(opts: readonly RuleOption[], name: string): RuleOption | undefined {
  return opts.find((o) => o.name === name);
}

function has(opts: readonly RuleOption[], name: string): boolean {
  return opts.some((o) => o.name === name);
}

/** An option's first value, '' when it has none. */
function one(o: RuleOption | undefined): string {
  return o?.values[0] ?? '';
}

/** A negatable option value, as written (`name` for messages). */
export interface OptionValue {
  readonly name: string;
  readonly text: string;
  readonly negate: boolean;
}

function valueOf(o: RuleOption): OptionValue {
  return { name: o.name, text: one(o), negate: o.negate };
}

// --- match extensions -------------------------------------------------------------------

export const ALL_TCP_FLAGS: readonly string[] = [
  'SYN',
  'ACK',
  'FIN',
  'RST',
  'URG',
  'PSH',
  'ECE',
  'CWR',
];

/**
 * One option of tcp/udp/sctp, in written order: a port (`dir` `other` for an option the view
 * does not know, read as a port as the tracer always has) or a TCP flags test (`--syn` is
 * `--tcp-flags SYN,RST,ACK,FIN SYN`).
 */
export type PortOption =
  | (OptionValue & { readonly kind: 'port'; readonly dir: 'dst' | 'src' | 'other' })
  | {
      readonly kind: 'tcp-flags';
      readonly mask: readonly string[];
      readonly comp: readonly string[];
      readonly negate: boolean;
    };

const PORT_DIR: Readonly<Record<string, 'dst' | 'src'>> = {
  '--dport': 'dst',
  '--destination-port': 'dst',
  '--sport': 'src',
  '--source-port': 'src',
};

function tcpFlagList(s: string): readonly string[] {
  return s === 'ALL' ? ALL_TCP_FLAGS : s === 'NONE' ? [] : s.split(',');
}

export function portMatchOf(opts: readonly RuleOption[]): PortOption[] {
  return opts.map((o): PortOption => {
    if (o.name === '--syn')
      return {
        kind: 'tcp-flags',
        mask: ['SYN', 'RST', 'ACK', 'FIN'],
        comp: ['SYN'],
        negate: o.negate,
      };
    if (o.name === '--tcp-flags')
      return {
        kind: 'tcp-flags',
        mask: tcpFlagList(o.values[0] ?? ''),
        comp: tcpFlagList(o.values[1] ?? ''),
        negate: o.negate,
      };
    const dir = Object.hasOwn(PORT_DIR, o.name) ? PORT_DIR[o.name] : undefined;
    return { kind: 'port', dir: dir ?? 'other', ...valueOf(o) };
  });
}

/** One multiport list; the direction follows the name (`--d…`, `--s…`, else either). */
export type MultiportOption = OptionValue & { readonly dir: 'dst' | 'src' | 'either' };

export function multiportOf(opts: readonly RuleOption[]): MultiportOption[] {
  return opts.map((o) => ({
    dir: o.name.startsWith('--d') ? 'dst' : o.name.startsWith('--s') ? 'src' : 'either',
    ...valueOf(o),
  }));
}

/** `--src-type`/`--dst-type` (an unknown option reads as a dst type), or `--limit-iface-*`. */
export type AddrtypeOption =
  | { readonly kind: 'limit-iface'; readonly name: string }
  | {
      readonly kind: 'type';
      readonly dir: 'src' | 'dst';
      readonly types: readonly string[];
      readonly negate: boolean;
    };

export function addrtypeOf(opts: readonly RuleOption[]): AddrtypeOption[] {
  return opts.map((o): AddrtypeOption => {
    if (o.name === '--limit-iface-in' || o.name === '--limit-iface-out')
      return { kind: 'limit-iface', name: o.name };
    return {
      kind: 'type',
      dir: o.name === '--src-type' ? 'src' : 'dst',
      types: one(o).split(','),
      negate: o.negate,
    };
  });
}

/** statistic: the first of each option; `mode` `other` for a mode it does not know. */
export interface StatisticView {
  readonly mode: 'random' | 'nth' | 'other' | undefined;
  readonly probability: OptionValue | undefined;
  readonly every: OptionValue | undefined;
  readonly packet: OptionValue | undefined;
}

export function statisticOf(opts: readonly RuleOption[]): StatisticView {
  const opt = (name: string): OptionValue | undefined => {
    const o = first(opts, name);
    return o && valueOf(o);
  };
  const mode = first(opts, '--mode');
  const modeText = one(mode);
  return {
    mode:
      mode === undefined
        ? undefined
        : modeText === 'random' || modeText === 'nth'
          ? modeText
          : 'other',
    probability: opt('--probability'),
    every: opt('--every'),
    packet: opt('--packet'),
  };
}

export type RecentCommand = 'set' | 'rcheck' | 'update' | 'remove';

const RECENT_COMMANDS: Readonly<Record<string, RecentCommand>> = {
  '--set': 'set',
  '--rcheck': 'rcheck',
  '--update': 'update',
  '--remove': 'remove',
};

/** recent: the first command, list name (`DEFAULT`), and its modifiers. */
export interface RecentView {
  readonly command: { readonly kind: RecentCommand; readonly negate: boolean } | undefined;
  readonly name: string;
  /** `--seconds` as a number (NaN when unreadable). */
  readonly seconds: number | undefined;
  readonly reap: boolean;
  readonly rsource: boolean;
  readonly rdest: boolean;
  readonly mask: string | undefined;
  readonly hitcount: string | undefined;
  readonly rttl: boolean;
}

export function recentOf(opts: readonly RuleOption[]): RecentView {
  const cmd = opts.find((o) => Object.hasOwn(RECENT_COMMANDS, o.name));
  const name = first(opts, '--name');
  const seconds = first(opts, '--seconds');
  const mask = first(opts, '--mask');
  const hitcount = first(opts, '--hitcount');
  return {
    command: cmd && { kind: RECENT_COMMANDS[cmd.name] ?? 'set', negate: cmd.negate },
    name: name ? one(name) : 'DEFAULT',
    seconds: seconds ? Number(one(seconds)) : undefined,
    reap: has(opts, '--reap'),
    rsource: has(opts, '--rsource'),
    rdest: has(opts, '--rdest'),
    mask: mask && one(mask),
    hitcount: hitcount && one(hitcount),
    rttl: has(opts, '--rttl'),
  };
}

/** mark `--mark VALUE[/MASK]`: every option read as a mark test. */
export function markOf(opts: readonly RuleOption[]): OptionValue[] {
  return opts.map(valueOf);
}

/** conntrack `--ctstate` / state `--state`: every option read as a state list. */
export function conntrackOf(
  opts: readonly RuleOption[],
): { readonly states: readonly string[]; readonly negate: boolean }[] {
  return opts.map((o) => ({ states: one(o).split(','), negate: o.negate }));
}

/** The words of a known `--comment` option (one per word when written unquoted). */
export function commentWordsOf(o: RuleOption): readonly string[] | undefined {
  return o.name === '--comment' && o.known ? o.values : undefined;
}

/** set `--match-set NAME FLAGS`. */
export interface SetView {
  readonly sets: readonly {
    readonly name: string;
    readonly flags: readonly string[];
    readonly negate: boolean;
  }[];
  readonly returnNomatch: boolean;
}

export function setOf(opts: readonly RuleOption[]): SetView {
  return {
    sets: opts
      .filter((o) => o.name === '--match-set')
      .map((o) => ({ name: one(o), flags: (o.values[1] ?? '').split(','), negate: o.negate })),
    returnNomatch: has(opts, '--return-nomatch'),
  };
}

export interface PhysdevView {
  readonly in: OptionValue | undefined;
  readonly out: OptionValue | undefined;
  readonly isIn: boolean;
  readonly isOut: boolean;
  readonly isBridged: boolean;
}

export function physdevOf(opts: readonly RuleOption[]): PhysdevView {
  const opt = (name: string): OptionValue | undefined => {
    const o = first(opts, name);
    return o && valueOf(o);
  };
  return {
    in: opt('--physdev-in'),
    out: opt('--physdev-out'),
    isIn: has(opts, '--physdev-is-in'),
    isOut: has(opts, '--physdev-is-out'),
    isBridged: has(opts, '--physdev-is-bridged'),
  };
}

export function limitOf(opts: readonly RuleOption[]): {
  readonly limit: string | undefined;
  readonly burst: number | undefined;
} {
  const burst = first(opts, '--limit-burst');
  return { limit: first(opts, '--limit')?.values[0], burst: burst && Number(one(burst)) };
}

// --- targets (given the target's known options) -----------------------------------------

/** DNAT `--to-destination` / SNAT `--to-source`, and their flags. */
export interface NatView {
  readonly to: string | undefined;
  readonly random: boolean;
  readonly randomFully: boolean;
  readonly persistent: boolean;
}

function natOf(opts: readonly RuleOption[], toName: string): NatView {
  return {
    to: first(opts, toName)?.values[0],
    random: has(opts, '--random'),
    randomFully: has(opts, '--random-fully'),
    persistent: has(opts, '--persistent'),
  };
}

export function dnatOf(opts: readonly RuleOption[]): NatView {
  return natOf(opts, '--to-destination');
}

export function snatOf(opts: readonly RuleOption[]): NatView {
  return natOf(opts, '--to-source');
}

export type MarkOp = 'set' | 'or' | 'and' | 'xor' | 'xset';

const MARK_OPS: Readonly<Record<string, MarkOp>> = {
  '--set-mark': 'set',
  '--set-xmark': 'xset',
  '--or-mark': 'or',
  '--and-mark': 'and',
};

/** MARK: its first option as an operation and value text; undefined without options. */
export function markTargetOf(
  opts: readonly RuleOption[],
): { readonly op: MarkOp; readonly text: string } | undefined {
  const o = opts[0];
  if (!o) return undefined;
  return {
    op: (Object.hasOwn(MARK_OPS, o.name) ? MARK_OPS[o.name] : undefined) ?? 'xor',
    text: one(o),
  };
}

export function rejectOf(opts: readonly RuleOption[]): { readonly rejectWith: string | undefined } {
  return { rejectWith: first(opts, '--reject-with')?.values[0] };
}

export function logOf(opts: readonly RuleOption[]): {
  readonly prefix: string | undefined;
  readonly level: string | undefined;
} {
  return {
    prefix: first(opts, '--log-prefix')?.values[0],
    level: first(opts, '--log-level')?.values[0],
  };
}

/** MASQUERADE: its options, and `words` as written (what the tracer shows). */
export interface MasqueradeView {
  readonly toPorts: string | undefined;
  readonly random: boolean;
  readonly randomFully: boolean;
  readonly words: readonly string[];
}

export function masqueradeOf(opts: readonly RuleOption[]): MasqueradeView {
  return {
    toPorts: first(opts, '--to-ports')?.values[0],
    random: has(opts, '--random'),
    randomFully: has(opts, '--random-fully'),
    words: opts.flatMap((o) => [o.name, ...o.values]),
  };
}
