// A closed, typed model of the nftables objects kube-proxy's nftables mode writes, after
// sigs.k8s.io/knftables: a table, chains (base chains with type/hook/priority), sets and
// maps (key types, flags, timeout), elements (key, optional verdict or data value, comment)
// and rules (a list of typed statements plus a comment), and the verbs of an `nft -f`
// transaction (add/create/insert/replace/delete/flush). It is the common currency of the
// planner (proxy/nftables), the renderer and parser (render.ts, parse.ts: `nft -f` text as
// kube-proxy's test dumps write it, and `nft list ruleset` output), the atomic Fake
// (fake.ts) and the tracer (trace/). A rule body is typed (Statement below); what the model
// does not know stays an explicit `unsupported` statement that keeps its words. Pure types.

export type NftFamily = 'ip' | 'ip6' | 'inet' | 'arp' | 'bridge' | 'netdev';

export type ChainType = 'filter' | 'nat' | 'route';
export type ChainHook = 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting' | 'ingress';

/** Identifies a table: `ip kube-proxy`. */
export interface TableRef {
  readonly family: NftFamily;
  readonly table: string;
}

export interface NftTable extends TableRef {
  readonly kind: 'table';
  readonly comment?: string;
}

export interface NftChain extends TableRef {
  readonly kind: 'chain';
  readonly name: string;
  /** Base chains only: all three are set together. Priority is numeric (-110, -100, 0, 100). */
  readonly type?: ChainType;
  readonly hook?: ChainHook;
  readonly priority?: number;
  /** Base chains: `policy accept` (the default when absent). */
  readonly policy?: 'accept' | 'drop';
  readonly comment?: string;
}

/**
 * A named set or map. `keyType` lists the concatenated key's datatypes (`ipv4_addr`,
 * `inet_proto`, `inet_service`, …). A map also has `valueType` (`verdict`, or data types
 * such as `ipv4_addr . inet_service` split into a list).
 */
export interface NftSet extends TableRef {
  readonly kind: 'set' | 'map';
  readonly name: string;
  readonly keyType: readonly string[];
  /** Maps only. `['verdict']` for verdict maps. */
  readonly valueType?: readonly string[];
  /** `flags dynamic,timeout` / `interval` / `constant` … in the order written. */
  readonly flags?: readonly string[];
  /** Default element timeout, in seconds. */
  readonly timeoutSeconds?: number;
  readonly comment?: string;
}

/**
 * One element of a set or map: the key's parts in order (`['172.30.0.41','tcp','80']`), and
 * for a map its value: a verdict or data parts. Key parts are written as nft prints them
 * (addresses canonical, protocols lower case, ports decimal, prefixes `a/n`, ranges `a-b`).
 */
export interface NftElement extends TableRef {
  readonly kind: 'element';
  /** The set or map the element belongs to. */
  readonly set: string;
  readonly key: readonly string[];
  readonly value?: Verdict | { readonly kind: 'data'; readonly parts: readonly string[] };
  readonly comment?: string;
}

export interface NftRule extends TableRef {
  readonly kind: 'rule';
  readonly chain: string;
  readonly statements: readonly Statement[];
  readonly comment?: string;
  /** Kernel handle (from `nft -a list`, or as a `delete`/`replace`/`insert` position). */
  readonly handle?: number;
  /** `insert`/`add … index N` position (0-based among the chain's rules). */
  readonly index?: number;
}

export type NftObject = NftTable | NftChain | NftSet | NftElement | NftRule;

/** The verbs of an `nft -f` transaction, as knftables uses them. */
export type Verb = 'add' | 'create' | 'insert' | 'replace' | 'delete' | 'flush';

/**
 * One command. `add` creates if missing (and for an element, fails if it exists with a
 * different value); `create` fails if present; `delete` fails if missing or (table/chain/set)
 * still referenced or non-empty where nft requires it; `flush` empties a chain/set/map/table;
 * `insert`/`replace` apply to rules.
 */
export interface Operation {
  readonly verb: Verb;
  readonly object: NftObject;
}

export type Transaction = readonly Operation[];

// ---------------------------------------------------------------------------------------
// Rule statements (a closed union of what kube-proxy and common nft rulesets write)

export type Verdict =
  | { readonly kind: 'accept' | 'drop' | 'return' | 'continue' }
  | { readonly kind: 'reject'; readonly with?: string }
  | { readonly kind: 'jump' | 'goto'; readonly chain: string };

/** Something a rule reads from the packet or its context. */
export type Selector =
  /** `ip saddr`, `ip6 daddr`, `th dport`, `tcp dport`, `udp sport` … */
  | {
      readonly kind: 'payload';
      readonly base: 'ip' | 'ip6' | 'th' | 'tcp' | 'udp' | 'sctp';
      readonly field: 'saddr' | 'daddr' | 'sport' | 'dport' | 'protocol' | 'nexthdr';
    }
  /** `meta l4proto`, `meta mark` (written `mark`), `iifname`, `oifname`, `meta nfproto` … */
  | {
      readonly kind: 'meta';
      readonly key: 'l4proto' | 'mark' | 'iifname' | 'oifname' | 'iif' | 'oif' | 'nfproto';
    }
  /** `ct state`, `ct status`, `ct mark`. */
  | { readonly kind: 'ct'; readonly key: 'state' | 'status' | 'mark' }
  /** `fib saddr type`, `fib daddr type`, `fib daddr . iif type`. */
  | {
      readonly kind: 'fib';
      readonly flags: readonly ('saddr' | 'daddr' | 'iif' | 'oif' | 'mark')[];
      readonly result: 'type' | 'oif' | 'oifname';
    }
  /** `numgen random mod N` (`inc` too). */
  | { readonly kind: 'numgen'; readonly mode: 'random' | 'inc'; readonly modulus: number }
  /** `mark and 0x4000`: a selector masked/combined with a constant. */
  | {
      readonly kind: 'binop';
      readonly left: Selector;
      readonly op: 'and' | 'or' | 'xor';
      readonly value: string;
    }
  /** `ip daddr . meta l4proto . th dport` */
  | { readonly kind: 'concat'; readonly parts: readonly Selector[] };

/** The right-hand side of a match or lookup. */
export type Operand =
  /** One value as written: `10.0.0.0/8`, `tcp`, `80`, `new`, `local`, `0x4000`, `"eth0"`. */
  | { readonly kind: 'value'; readonly value: string }
  /** A comma list, e.g. `ct state established,related` or `ct status dnat,snat`. */
  | { readonly kind: 'list'; readonly values: readonly string[] }
  /** `@name` */
  | { readonly kind: 'setref'; readonly name: string }
  /** `{ a, b . c }`: each item's concatenated parts. */
  | { readonly kind: 'anonset'; readonly items: readonly (readonly string[])[] };

/** One entry of an anonymous map: `0 : 10.180.0.4 . 80` or `0 : goto endpoint-…`. */
export interface MapEntry {
  readonly key: readonly string[];
  readonly value: Verdict | { readonly kind: 'data'; readonly parts: readonly string[] };
}

export type Statement =
  /** `SELECTOR [op] OPERAND`; `op` absent means the implicit `==` (or set membership). */
  | {
      readonly kind: 'match';
      readonly left: Selector;
      readonly op: '==' | '!=' | '<' | '>' | '<=' | '>=';
      readonly right: Operand;
    }
  /** `SELECTOR vmap @map` or `SELECTOR vmap { k : verdict, … }`. */
  | {
      readonly kind: 'vmap';
      readonly key: Selector;
      readonly map:
        | { readonly kind: 'setref'; readonly name: string }
        | { readonly kind: 'anonmap'; readonly entries: readonly MapEntry[] };
    }
  /** `mark set mark or 0x4000`, `meta mark set 0x1`, `ct mark set mark`. */
  | { readonly kind: 'set'; readonly target: Selector; readonly value: Selector | Operand }
  /**
   * `dnat to 10.180.0.3:80`, `dnat ip to 10.0.0.1`, `dnat ip addr . port to numgen random mod
   * 2 map { 0 : a . p, … }`, `snat to …`. `family` is the `ip`/`ip6` qualifier when written.
   */
  | {
      readonly kind: 'nat';
      readonly type: 'dnat' | 'snat';
      readonly family?: 'ip' | 'ip6';
      /** `addr . port` form (the target yields a concatenated address and port). */
      readonly addrPort: boolean;
      readonly to:
        | { readonly kind: 'address'; readonly addr: string; readonly port?: number }
        | { readonly kind: 'map'; readonly key: Selector; readonly entries: readonly MapEntry[] };
      readonly flags?: readonly string[];
    }
  /** `masquerade [fully-random] [persistent] [to :port]`. */
  | { readonly kind: 'masquerade'; readonly flags: readonly string[] }
  /** `update @set { ip saddr }` / `add @set { … }`. */
  | {
      readonly kind: 'setupdate';
      readonly op: 'update' | 'add';
      readonly set: string;
      readonly key: Selector;
    }
  /** `counter [packets N bytes M]` or `counter name X`. */
  | { readonly kind: 'counter'; readonly name?: string }
  /** `log [prefix "…"]`. */
  | { readonly kind: 'log'; readonly prefix?: string }
  /** accept/drop/reject/return/jump/goto. */
  | { readonly kind: 'verdict'; readonly verdict: Verdict }
  /** Anything else, with its words: the tracer reports it by name. */
  | { readonly kind: 'unsupported'; readonly text: string };

// ---------------------------------------------------------------------------------------
// A ruleset: the state of the kernel (or the Fake) — what `nft list ruleset` prints.

export interface ChainState {
  readonly chain: NftChain;
  readonly rules: NftRule[];
}

export interface SetState {
  readonly set: NftSet;
  /** Keyed by the element's key parts joined with ` . `. */
  readonly elements: Map<string, NftElement>;
}

export interface TableState {
  readonly table: NftTable;
  readonly chains: Map<string, ChainState>;
  /** Sets and maps by name. */
  readonly sets: Map<string, SetState>;
}

export interface Ruleset {
  /** Keyed by `family name`, e.g. `ip kube-proxy`. */
  readonly tables: Map<string, TableState>;
}

export function tableKey(ref: TableRef): string {
  return `${ref.family} ${ref.table}`;
}

export function elementKey(key: readonly string[]): string {
  return key.join(' . ');
}

export function emptyRuleset(): Ruleset {
  return { tables: new Map() };
}

/** Whether a chain is a base chain (has a hook). */
export function isBaseChain(c: NftChain): boolean {
  return c.hook !== undefined;
}
