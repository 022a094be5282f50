// The rules view's chain graph: one table of a node's ruleset (rules-view.ts's model) as
// chains joined by their jump/goto rules (KUBE-SERVICES → KUBE-SVC-… → KUBE-SEP-…, or nft's
// `numgen … vmap { 0 : goto endpoint-… }`), each edge with the statistic probability of its
// rule and the share of the chain's packets it takes, each chain with the Services and
// endpoints its rules' kube-proxy comments name. Scoped by the page's search so it stays
// readable, and capped. Pure and DOM-free: the page (src/ui/page, which includes this file
// in its tsconfig) lays it out with ELK; not an evaluator (the tracer is).

import type { RuleInfo, RulesTable } from './api-types.js';

export interface ChainNode {
  /** A chain's name, or `DNAT ip:port` for a dnat target (see ChainEdge.kind). */
  readonly chain: string;
  /** `dnat`: not a chain but an address an nft rule's numgen map DNATs to. */
  readonly kind: 'chain' | 'dnat';
  /** Built-in chain policy or nft hook line; '' for a user chain. */
  readonly policy: string;
  /** Service ports (`ns/name:port`) the chain's rules name. */
  readonly services: readonly string[];
  /**
   * Endpoints (`ip:port`) the chain's rules name, else those the rules jumping to it name
   * (kube-proxy comments a KUBE-SEP chain with its Service only; the KUBE-SVC rule names the
   * endpoint).
   */
  readonly endpoints: readonly string[];
}

export interface ChainEdge {
  readonly id: string;
  readonly from: string;
  readonly to: string;
  /** 1-based index of the rule in `from`. */
  readonly rule: number;
  /**
   * `dnat`: kube-proxy's nft mode picks a Service's endpoint inline, `dnat to numgen random
   * mod N map { 0 : IP . PORT, … }`, with no endpoint chain; each map element is an edge to a
   * `DNAT IP:PORT` node.
   */
  readonly kind: 'jump' | 'goto' | 'dnat';
  /** The rule's own statistic probability (`--probability`, or 1/N of `numgen random mod N`). */
  readonly probability?: number;
  /** The share of the packets entering `from`'s random branch that take this edge. */
  readonly share?: number;
  readonly servicePort?: string;
  readonly endpoint?: string;
}

export interface ChainGraph {
  readonly nodes: readonly ChainNode[];
  readonly edges: readonly ChainEdge[];
  /** Matching edges left out because of the cap. */
  readonly omitted: number;
}

/** An nft chain name as kube-proxy writes it: `ns/svc/proto/port`, `__ip/port` (IPv6: colons). */
export const NFT_CHAIN_NAME = String.raw`[\w./:-]+`;

const IPT_TARGET = /(?:^|\s)(-j|--jump|-g|--goto) (\S+)/;
const IPT_PROBABILITY = /--probability (\S+)/;
const NFT_TARGETS = new RegExp(String.raw`\b(jump|goto) (${NFT_CHAIN_NAME})`, 'g');
const NFT_NUMGEN = /\bnumgen random mod (\d+)/;

const NFT_DNAT_MAP =
  /\bdnat (?:ip6? )?(?:addr \. port )?to numgen random mod (\d+) map \{([^}]*)\}/;

interface RawEdge {
  readonly to: string;
  readonly kind: 'jump' | 'goto' | 'dnat';
  readonly probability?: number;
}

/** The chains a rule sends packets to, with the rule's statistic probability. */
function ruleEdges(r: RuleInfo, chains: ReadonlySet<string>): RawEdge[] {
  const ipt = IPT_TARGET.exec(r.text);
  if (ipt) {
    const to = ipt[2] ?? '';
    if (!chains.has(to)) return [];
    const p = Number(IPT_PROBABILITY.exec(r.text)?.[1]);
    const kind = ipt[1] === '-g' || ipt[1] === '--goto' ? 'goto' : 'jump';
    return [{ to, kind, ...(Number.isFinite(p) ? { probability: p } : {}) }];
  }
  const dnat = NFT_DNAT_MAP.exec(r.text);
  if (dnat) {
    const n = Number(dnat[1]);
    return (dnat[2] ?? '')
      .split(',')
      .map((el) => /:\s*(\S+)\s*\.\s*(\d+)\s*$/.exec(el))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => {
        const ip = m[1] ?? '';
        return {
          to: `DNAT ${ip.includes(':') ? `[${ip}]` : ip}:${m[2] ?? ''}`,
          kind: 'dnat' as const,
          probability: 1 / n,
        };
      });
  }
  const mod = Number(NFT_NUMGEN.exec(r.text)?.[1]);
  const out: RawEdge[] = [];
  for (const m of r.text.matchAll(NFT_TARGETS)) {
    const to = m[2] ?? '';
    if (!chains.has(to)) continue;
    out.push({
      to,
      kind: m[1] === 'goto' ? 'goto' : 'jump',
      ...(Number.isInteger(mod) && mod > 0 ? { probability: 1 / mod } : {}),
    });
  }
  return out;
}

function ruleMatches(r: RuleInfo, q: string): boolean {
  const hay = `${r.text} ${r.servicePort ?? ''} ${r.endpoint ?? ''} ${r.role ?? ''}`;
  return hay.toLowerCase().includes(q);
}

const uniq = (xs: readonly (string | undefined)[]): string[] =>
  [...new Set(xs.filter((x): x is string => x !== undefined))].sort();

/**
 * The graph of `table`'s jumps matching `query` (case-insensitive, over rule text, annotations
 * and chain names; '' takes every jump), at most `maxEdges` edges in rule order.
 *
 * Shares: in a chain with statistic rules (kube-proxy's KUBE-SVC-…), the rules from the first
 * statistic one on are a random branch: each takes `p` of what the earlier ones left, and a
 * jump without a probability takes the rest. An nft `numgen random mod N` vmap or dnat map
 * gives each of its N targets 1/N.
 */
export function buildChainGraph(table: RulesTable, query: string, maxEdges = 60): ChainGraph {
  const q = query.trim().toLowerCase();
  const names = new Set(table.chains.map((c) => c.name));
  const edges: ChainEdge[] = [];
  const inbound = new Map<string, string[]>();
  let omitted = 0;
  for (const c of table.chains) {
    let remaining = 1;
    let branching = false;
    for (const r of c.rules) {
      const raw = ruleEdges(r, names);
      const hit =
        q === '' ||
        ruleMatches(r, q) ||
        c.name.toLowerCase().includes(q) ||
        raw.some((e) => e.to.toLowerCase().includes(q));
      const numgen = NFT_NUMGEN.test(r.text);
      for (const [i, e] of raw.entries()) {
        if (r.endpoint !== undefined) inbound.set(e.to, [...(inbound.get(e.to) ?? []), r.endpoint]);
        let share: number | undefined;
        if (numgen) share = e.probability;
        else if (e.probability !== undefined || branching) {
          branching = true;
          share = remaining * (e.probability ?? 1);
          remaining -= share;
        }
        if (!hit) continue;
        if (edges.length >= maxEdges) {
          omitted++;
          continue;
        }
        edges.push({
          id: `${c.name}#${String(r.index)}${raw.length > 1 ? `.${String(i)}` : ''}>${e.to}`,
          from: c.name,
          to: e.to,
          rule: r.index,
          kind: e.kind,
          ...(e.probability !== undefined ? { probability: e.probability } : {}),
          ...(share !== undefined ? { share } : {}),
          ...(r.servicePort !== undefined ? { servicePort: r.servicePort } : {}),
          ...(r.endpoint !== undefined ? { endpoint: r.endpoint } : {}),
        });
      }
    }
  }
  const used = new Set(edges.flatMap((e) => [e.from, e.to]));
  const targets: ChainNode[] = [
    ...new Set(edges.filter((e) => e.kind === 'dnat').map((e) => e.to)),
  ].map((to) => ({ chain: to, kind: 'dnat', policy: '', services: [], endpoints: [to.slice(5)] }));
  const nodes: ChainNode[] = table.chains
    .filter((c) => used.has(c.name))
    .map((c) => ({
      chain: c.name,
      kind: 'chain' as const,
      policy: c.policy,
      services: uniq(c.rules.map((r) => r.servicePort)),
      endpoints: uniq(
        c.rules.some((r) => r.endpoint !== undefined)
          ? c.rules.map((r) => r.endpoint)
          : (inbound.get(c.name) ?? []),
      ),
    }));
  return { nodes: [...nodes, ...targets], edges, omitted };
}
