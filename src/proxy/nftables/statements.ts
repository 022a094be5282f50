// Small builders for the typed rule statements (netfilter/nftables/model.ts) kube-proxy's
// nftables mode writes: `ip daddr @set`, `meta l4proto tcp`, `ct state new`, concatenated
// `vmap` lookups, `mark set mark or 0x4000`, `numgen random mod N` maps, dnat, masquerade,
// verdicts; and the local-traffic detector as nft matches. They keep plan-fixed.ts and
// plan-service.ts readable. Pure.

import type {
  MapEntry,
  NftChain,
  NftElement,
  NftRule,
  NftSet,
  Operand,
  Operation,
  Selector,
  Statement,
  TableRef,
  Verdict,
} from '../../netfilter/nftables/model.js';
import type { IPFamily } from '../../util/ip.js';
import type { LocalDetector } from './options.js';

/** `ip` or `ip6`: the family's payload base and nat qualifier. */
export type IpX = 'ip' | 'ip6';

export function ipX(family: IPFamily): IpX {
  return family === 'IPv4' ? 'ip' : 'ip6';
}

export function addrType(family: IPFamily): string {
  return family === 'IPv4' ? 'ipv4_addr' : 'ipv6_addr';
}

export const saddr = (x: IpX): Selector => ({ kind: 'payload', base: x, field: 'saddr' });
export const daddr = (x: IpX): Selector => ({ kind: 'payload', base: x, field: 'daddr' });
export const L4PROTO: Selector = { kind: 'meta', key: 'l4proto' };
export const TH_DPORT: Selector = { kind: 'payload', base: 'th', field: 'dport' };
export const MARK: Selector = { kind: 'meta', key: 'mark' };

export const concat = (...parts: Selector[]): Selector => ({ kind: 'concat', parts });
export const value = (v: string): Operand => ({ kind: 'value', value: v });
export const setref = (name: string): Operand => ({ kind: 'setref', name });
export const anonset = (items: readonly string[]): Operand => ({
  kind: 'anonset',
  items: items.map((i) => [i]),
});

export function match(left: Selector, right: Operand, op: '==' | '!=' = '=='): Statement {
  return { kind: 'match', left, op, right };
}

export function verdict(v: Verdict): Statement {
  return { kind: 'verdict', verdict: v };
}

export const goto = (chain: string): Verdict => ({ kind: 'goto', chain });
export const jump = (chain: string): Verdict => ({ kind: 'jump', chain });

export const CT_STATE_NEW: Statement = match({ kind: 'ct', key: 'state' }, value('new'));

/** `fib saddr type local` / `fib daddr type local`. */
export function fibLocal(field: 'saddr' | 'daddr'): Statement {
  return match({ kind: 'fib', flags: [field], result: 'type' }, value('local'));
}

/** `mark set mark or M`. */
export function markOr(mark: string): Statement {
  return {
    kind: 'set',
    target: MARK,
    value: { kind: 'binop', left: MARK, op: 'or', value: mark },
  };
}

/** `ADDR . meta l4proto . th dport vmap @map` (ADDR omitted for NodePort maps). */
export function dispatchVmap(addr: Selector | undefined, map: string): Statement {
  const key = addr === undefined ? concat(L4PROTO, TH_DPORT) : concat(addr, L4PROTO, TH_DPORT);
  return { kind: 'vmap', key, map: { kind: 'setref', name: map } };
}

export const NUMGEN = (n: number): Selector => ({ kind: 'numgen', mode: 'random', modulus: n });

/** `meta l4proto P dnat ip addr . port to numgen random mod N map { i : ip . port , … }`. */
export function dnatToNumgenMap(
  x: IpX,
  proto: string,
  targets: readonly { ip: string; port: number }[],
): Statement[] {
  const entries: MapEntry[] = targets.map((t, i) => ({
    key: [String(i)],
    value: { kind: 'data', parts: [t.ip, String(t.port)] },
  }));
  return [
    match(L4PROTO, value(proto)),
    {
      kind: 'nat',
      type: 'dnat',
      family: x,
      addrPort: true,
      to: { kind: 'map', key: NUMGEN(targets.length), entries },
    },
  ];
}

/** `meta l4proto P dnat to ip:port` (IPv6 `[ip]:port`, the renderer's job). */
export function dnatTo(proto: string, ip: string, port: number): Statement[] {
  return [
    match(L4PROTO, value(proto)),
    { kind: 'nat', type: 'dnat', addrPort: false, to: { kind: 'address', addr: ip, port } },
  ];
}

/** `numgen random mod N vmap { i : goto chain , … }`. */
export function numgenVmap(chains: readonly string[]): Statement {
  return {
    kind: 'vmap',
    key: NUMGEN(chains.length),
    map: {
      kind: 'anonmap',
      entries: chains.map((c, i) => ({ key: [String(i)], value: goto(c) })),
    },
  };
}

/** Matches for "comes from a local pod" (empty for the no-op detector). */
export function ifLocal(d: LocalDetector, x: IpX): Statement[] {
  return detectorMatch(d, x, '==');
}

/** Matches for "does not come from a local pod" (empty for the no-op detector). */
export function ifNotLocal(d: LocalDetector, x: IpX): Statement[] {
  return detectorMatch(d, x, '!=');
}

function detectorMatch(d: LocalDetector, x: IpX, op: '==' | '!='): Statement[] {
  const iifname: Selector = { kind: 'meta', key: 'iifname' };
  switch (d.mode) {
    case 'ClusterCIDR':
    case 'NodeCIDR':
      return [match(saddr(x), value(d.cidr), op)];
    case 'BridgeInterface':
      return [match(iifname, value(d.interfaceName), op)];
    case 'InterfaceNamePrefix':
      return [match(iifname, value(`${d.prefix}*`), op)];
    case 'None':
      return [];
  }
}

/** Builds the objects of one table (`ip kube-proxy` / `ip6 kube-proxy`). */
export class TableObjects {
  readonly ref: TableRef;

  constructor(ref: TableRef) {
    this.ref = ref;
  }

  chain(name: string, extra: Partial<Omit<NftChain, 'kind' | 'name'>> = {}): NftChain {
    return { ...this.ref, kind: 'chain', name, ...extra };
  }

  rule(chain: string, statements: readonly Statement[], comment?: string): NftRule {
    return comment === undefined
      ? { ...this.ref, kind: 'rule', chain, statements }
      : { ...this.ref, kind: 'rule', chain, statements, comment };
  }

  set(
    kind: 'set' | 'map',
    name: string,
    keyType: readonly string[],
    extra: Partial<Omit<NftSet, 'kind' | 'name' | 'keyType'>> = {},
  ): NftSet {
    return { ...this.ref, kind, name, keyType, ...extra };
  }

  element(
    set: string,
    key: readonly string[],
    v?: NftElement['value'],
    comment?: string,
  ): NftElement {
    const { family, table } = this.ref;
    if (v === undefined)
      return comment === undefined
        ? { family, table, kind: 'element', set, key }
        : { family, table, kind: 'element', set, key, comment };
    return comment === undefined
      ? { family, table, kind: 'element', set, key, value: v }
      : { family, table, kind: 'element', set, key, value: v, comment };
  }
}

/** Appends operations to a transaction. */
export class OpList {
  readonly ops: Operation[] = [];

  add(object: Operation['object']): void {
    this.ops.push({ verb: 'add', object });
  }

  flush(object: Operation['object']): void {
    this.ops.push({ verb: 'flush', object });
  }

  delete(object: Operation['object']): void {
    this.ops.push({ verb: 'delete', object });
  }
}
