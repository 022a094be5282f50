// A typed model of an iptables-restore / iptables-save document: tables, chain declarations,
// rules (as argument vectors after `-A CHAIN`), and chain deletions. It is the common
// currency of the renderer (proxy/iptables), the parser (real `iptables-save` dumps), the
// atomic Fake and the tracer. A rule's matches and targets are typed by rule.ts
// (`typedRuleOf(rule.args)`, parsed lazily on first use and shared by every reader).

export type IptablesTableName = 'raw' | 'mangle' | 'nat' | 'filter' | 'security';

/** Tables in the order the kernel traverses them within one hook (and iptables-save prints them). */
export const TABLE_NAMES: readonly IptablesTableName[] = [
  'raw',
  'mangle',
  'nat',
  'filter',
  'security',
];

/** Built-in chains of each table. */
export const BUILTIN_CHAINS: Readonly<Record<IptablesTableName, readonly string[]>> = {
  raw: ['PREROUTING', 'OUTPUT'],
  mangle: ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'],
  nat: ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'],
  filter: ['INPUT', 'FORWARD', 'OUTPUT'],
  security: ['INPUT', 'FORWARD', 'OUTPUT'],
};

export interface Counters {
  readonly packets: bigint;
  readonly bytes: bigint;
}

/** `:NAME POLICY [p:b]` — policy is `-` for user-defined chains. */
export interface ChainDecl {
  readonly name: string;
  readonly policy: string;
  readonly counters?: Counters;
}

/** `-A CHAIN args...` (or `-I CHAIN [n] args...` in restore input). */
export interface Rule {
  readonly chain: string;
  /** Arguments after the chain name, unquoted, e.g. `['-m','comment','--comment','a b','-j','X']`. */
  readonly args: readonly string[];
  readonly counters?: Counters;
  /** `-I` instead of `-A` (restore input only); 1-based position when given. */
  readonly insert?: { readonly position?: number };
  /** 1-based source line, when parsed. */
  readonly line?: number;
}

export interface TableDoc {
  readonly name: IptablesTableName;
  readonly chains: readonly ChainDecl[];
  readonly rules: readonly Rule[];
  /** `-X CHAIN` lines: chains to delete (restore input only). */
  readonly deleteChains: readonly string[];
  /** `-F CHAIN` lines: chains to flush without redeclaring them. */
  readonly flushChains?: readonly string[];
}

export interface IptablesDocument {
  readonly tables: readonly TableDoc[];
}

export function isBuiltinChain(table: IptablesTableName, chain: string): boolean {
  return BUILTIN_CHAINS[table].includes(chain);
}

export function isTableName(s: string): s is IptablesTableName {
  return (TABLE_NAMES as readonly string[]).includes(s);
}
