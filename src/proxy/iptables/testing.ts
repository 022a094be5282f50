// Test support for the iptables proxy: assertions on what a plan or a kernel dump *does*, as
// kube-proxy's own tests check theirs. `assertRulesEqual` compares two iptables-restore texts
// in canonical order (compare.ts), shows a line diff when they differ, and checks jump
// consistency. `assertFlows` traces packets through the rules with the real tracer
// (src/trace, kernel mode) and checks the set of outcomes each one can have — the DNAT
// destination, REJECT, DROP, masquerade — instead of the text of any rule. Test code only:
// nothing at run time imports it.

import { AssertionError } from 'node:assert';
import { parseDocument } from '../../netfilter/iptables/parse.js';
import type { IptablesDocument } from '../../netfilter/iptables/model.js';
import { renderDocument } from '../../netfilter/iptables/render.js';
import {
  defaultContext,
  inferOrigin,
  type Origin,
  type Packet,
  type Protocol,
  type RecentEntry,
} from '../../trace/packet.js';
import { prepareRuleset, tracePacket, type Outcome, type TraceResult } from '../../trace/walk.js';
import { parseCIDR, parseIP, type ParsedCIDR, type ParsedIP } from '../../util/ip.js';
import { checkRuleJumps, sortIptablesText } from './compare.js';
import type { IptablesProxierOptions } from './options.js';
import type { IptablesPlan } from './plan.js';

/** What the assertions accept as rules: a plan, a parsed document, or restore/save text. */
export type RulesInput = IptablesPlan | IptablesDocument | string;

function isPlan(r: RulesInput): r is IptablesPlan {
  return typeof r !== 'string' && 'counts' in r;
}

function textOf(r: RulesInput): string {
  if (typeof r === 'string') return r;
  return isPlan(r) ? r.text : renderDocument(r);
}

function documentOf(r: RulesInput): IptablesDocument {
  if (typeof r === 'string') return parseDocument(r);
  return isPlan(r) ? r.document : r;
}

/** Trims every line and drops blank ones, so expected rules can be indented inline. */
function dedent(text: string): string {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return lines.join('\n') + '\n';
}

type DiffLine = readonly [' ' | '-' | '+', string];

/** Longest-common-subsequence diff of two line lists (only the differing middle is compared). */
function diffLines(a: readonly string[], b: readonly string[]): DiffLine[] {
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let post = 0;
  while (
    post < a.length - pre &&
    post < b.length - pre &&
    a[a.length - 1 - post] === b[b.length - 1 - post]
  )
    post++;
  const am = a.slice(pre, a.length - post);
  const bm = b.slice(pre, b.length - post);
  const middle: DiffLine[] = [];
  if (am.length * bm.length > 4_000_000) {
    // Too big for the table: every differing line as removed, then as added.
    const inB = new Set(bm);
    const inA = new Set(am);
    for (const l of am) middle.push([inB.has(l) ? ' ' : '-', l]);
    for (const l of bm) if (!inA.has(l)) middle.push(['+', l]);
  } else {
    const n = am.length;
    const m = bm.length;
    // lcs[i][j]: LCS length of am[i..] and bm[j..], row-major in one array.
    const lcs = new Uint32Array((n + 1) * (m + 1));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        lcs[i * (m + 1) + j] =
          am[i] === bm[j]
            ? (lcs[(i + 1) * (m + 1) + j + 1] ?? 0) + 1
            : Math.max(lcs[(i + 1) * (m + 1) + j] ?? 0, lcs[i * (m + 1) + j + 1] ?? 0);
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && am[i] === bm[j]) {
        middle.push([' ', am[i] ?? '']);
        i++;
        j++;
      } else if (
        i < n &&
        (j >= m || (lcs[(i + 1) * (m + 1) + j] ?? 0) >= (lcs[i * (m + 1) + j + 1] ?? 0))
      ) {
        middle.push(['-', am[i] ?? '']);
        i++;
      } else {
        middle.push(['+', bm[j] ?? '']);
        j++;
      }
    }
  }
  return [
    ...a.slice(0, pre).map((l): DiffLine => [' ', l]),
    ...middle,
    ...a.slice(a.length - post).map((l): DiffLine => [' ', l]),
  ];
}

/** A unified-style rendering of the differing lines with two lines of context. */
function formatDiff(diff: readonly DiffLine[], context = 2): string {
  const keep = diff.map(() => false);
  diff.forEach(([op], i) => {
    if (op === ' ') return;
    for (let k = Math.max(0, i - context); k <= Math.min(diff.length - 1, i + context); k++)
      keep[k] = true;
  });
  const out: string[] = ['--- expected', '+++ actual'];
  let skipped = false;
  diff.forEach(([op, line], i) => {
    if (!keep[i]) {
      skipped = true;
      return;
    }
    if (skipped) out.push('@@ …');
    skipped = false;
    out.push(`${op} ${line}`);
  });
  return out.join('\n');
}

export interface RulesEqualOptions {
  /**
   * Check kube-proxy's jump consistency on the actual rules (default true): every `-j` chain
   * declared, every declared service chain jumped to (compare.ts `checkRuleJumps`). Turn it
   * off for a partial sync's document, which jumps to chains an earlier sync wrote.
   */
  readonly checkJumps?: boolean;
}

/**
 * Asserts that `actual` holds exactly the rules of `expected` (iptables-restore text; each
 * line is trimmed, blank lines dropped, so it can be written indented inline), both taken in
 * canonical order (compare.ts). On a mismatch throws an AssertionError with a line diff and
 * the full actual text in canonical order. Then checks jump consistency (see options).
 */
export function assertRulesEqual(
  expected: string,
  actual: RulesInput,
  options: RulesEqualOptions = {},
): void {
  const want = sortIptablesText(dedent(expected));
  const got = sortIptablesText(textOf(actual));
  if (want !== got) {
    const diff = formatDiff(diffLines(want.split('\n'), got.split('\n')));
    throw new AssertionError({
      message: `rules do not match:\n${diff}\n\nfull actual rules (canonical order):\n${got}`,
      actual: got,
      expected: want,
      operator: 'assertRulesEqual',
    });
  }
  if (options.checkJumps ?? true) {
    const problems = checkRuleJumps(documentOf(actual));
    if (problems.length > 0)
      throw new AssertionError({
        message: `rules are not jump-consistent:\n${problems.join('\n')}`,
        operator: 'assertRulesEqual',
      });
  }
}

/** One packet and what must become of it. */
export interface Flow {
  /** Names the flow in failure messages (default: `src -> dst:port/proto`). */
  readonly name?: string;
  readonly src: string;
  readonly dst: string;
  readonly port: number;
  /** Default `tcp`. */
  readonly proto?: Protocol;
  /**
   * Where the packet enters: `node` (OUTPUT), `pod` or `external` (PREROUTING). Default:
   * inferred from `src` (a node address or loopback → node; in the pod CIDR → pod; else
   * external).
   */
  readonly from?: Origin;
  /** The incoming interface (for interface-based local-traffic detectors). */
  readonly inInterface?: string;
  /** ClientIP affinity already recorded for `src` (xt_recent entries). */
  readonly recent?: readonly RecentEntry[];
  /**
   * The set of possible outcomes, each `IP:PORT` (DNAT to it, accepted), `ACCEPT` (accepted
   * by a rule, no DNAT), `NONE` (no rule decided: accepted by a built-in chain's policy or at
   * the end of the path, no DNAT), `REJECT` or `DROP`, with ` masq` appended when the source
   * is masqueraded. A string may list several, comma-separated (kube-proxy's packet-flow
   * format). As a record, each outcome maps to its probability (outcomes with the same label
   * add up).
   */
  readonly want: string | readonly string[] | Readonly<Record<string, number>>;
  /** Shorthand: every accepted outcome in `want` is masqueraded (` masq` appended). */
  readonly masq?: boolean;
}

/** The node a flow is traced on: its addresses and pod CIDR, as the proxier options say. */
export type FlowNode = Pick<IptablesProxierOptions, 'nodeIP' | 'localAddresses' | 'localDetector'>;

/** The label of one outcome (see `Flow.want`). */
function outcomeLabel(o: Outcome): string {
  if (o.verdict === 'drop') return 'DROP';
  if (o.verdict === 'reject') return 'REJECT';
  const acceptedByRule = o.path.some((s) => s.effect === 'accept');
  const label = o.dnat ?? (acceptedByRule ? 'ACCEPT' : 'NONE');
  return `${label}${o.masquerade ? ' masq' : ''}`;
}

/** The wanted outcome labels of a flow, each with its probability when given. */
function wantedOutcomes(f: Flow): Map<string, number | undefined> {
  const withMasq = (l: string): string =>
    f.masq === true && l !== 'DROP' && l !== 'REJECT' && !l.endsWith(' masq') ? `${l} masq` : l;
  const out = new Map<string, number | undefined>();
  if (typeof f.want === 'string' || Array.isArray(f.want)) {
    const list: readonly string[] = typeof f.want === 'string' ? f.want.split(',') : f.want;
    for (const l of list) out.set(withMasq(l.trim()), undefined);
  } else
    for (const [l, p] of Object.entries(f.want as Readonly<Record<string, number>>))
      out.set(withMasq(l.trim()), p);
  return out;
}

function ip(text: string, what: string): ParsedIP {
  const a = parseIP(text.replace(/\/\d+$/, ''));
  if (!a) throw new Error(`assertFlows: ${what} is not an IP address: ${JSON.stringify(text)}`);
  return a;
}

/** The node's own addresses and its pod CIDR (for inferring a flow's origin). */
function nodeContext(node: FlowNode): { local: ParsedIP[]; podCIDRs: ParsedCIDR[] } {
  const local = [node.nodeIP, ...node.localAddresses]
    .filter((a) => a !== '')
    .map((a) => ip(a, 'node address'));
  const d = node.localDetector;
  const cidr = d.mode === 'ClusterCIDR' || d.mode === 'NodeCIDR' ? parseCIDR(d.cidr) : undefined;
  return { local, podCIDRs: cidr ? [cidr] : [] };
}

/** The chains an outcome went through, e.g. `PREROUTING > KUBE-SERVICES > KUBE-SVC-…`. */
function describePath(o: Outcome): string {
  const chains: string[] = [];
  for (const s of o.path)
    if (s.effect !== 'random-not-taken' && chains.at(-1) !== s.chain) chains.push(s.chain);
  return chains.join(' > ');
}

/** What is wrong with one traced flow, or undefined. */
function checkFlow(f: Flow, r: TraceResult): string | undefined {
  const got = new Map<string, number>();
  for (const o of r.outcomes)
    got.set(outcomeLabel(o), (got.get(outcomeLabel(o)) ?? 0) + o.probability);
  const want = wantedOutcomes(f);
  const problems: string[] = [];
  const sameSet = got.size === want.size && [...want.keys()].every((l) => got.has(l));
  if (!sameSet)
    problems.push(
      `want ${[...want.keys()].sort().join(', ')}; got ${[...got.keys()].sort().join(', ')}`,
    );
  else
    for (const [l, p] of want)
      if (p !== undefined && Math.abs((got.get(l) ?? 0) - p) > 1e-6)
        problems.push(`${l}: want probability ${p}, got ${got.get(l)}`);
  if (r.unsupported.length > 0)
    problems.push(
      `the tracer met rules it cannot evaluate: ${r.unsupported.map((u) => `${u.chain} #${u.rule}: ${u.reasons.join('; ')}`).join(' | ')}`,
    );
  if (problems.length === 0) return undefined;
  const paths = r.outcomes.map(
    (o) => `    ${outcomeLabel(o)} (p=${Number(o.probability.toFixed(6))}) via ${describePath(o)}`,
  );
  return [...problems.map((p) => `  ${p}`), ...paths].join('\n');
}

export interface FlowOptions {
  /**
   * The rules are a kernel dump that must carry kube-proxy's jumps from the built-in chains
   * itself (default false: when a built-in chain has no jump into kube-proxy's chains, as in
   * a plan, the tracer adds the ones kube-proxy installs).
   */
  readonly requireHooks?: boolean;
}

/**
 * Traces every flow through `rules` with the real tracer (kernel mode: the hooks of the
 * packet's path, in kernel order; first packet of a new connection) on `node`, and asserts
 * that the set of outcomes is exactly `want` (and the probabilities, when given), with no rule
 * the tracer cannot evaluate on the way. Throws one AssertionError naming every failing flow
 * with the chains each of its outcomes went through.
 */
export function assertFlows(
  rules: RulesInput,
  flows: readonly Flow[],
  node: FlowNode,
  options: FlowOptions = {},
): void {
  const requireHooks = options.requireHooks ?? false;
  const prepared = prepareRuleset(documentOf(rules), { assumeKubeProxyHooks: !requireHooks });
  const { local, podCIDRs } = nodeContext(node);
  const failures: string[] = [];
  for (const f of flows) {
    const src = ip(f.src, 'src');
    const dst = ip(f.dst, 'dst');
    const proto = f.proto ?? 'tcp';
    const packet: Packet = { src, dst, protocol: proto, srcPort: 40000, dstPort: f.port };
    const from = f.from ?? inferOrigin(src, local, podCIDRs);
    const ctx = defaultContext(from, local, {
      ...(f.inInterface !== undefined ? { inInterface: f.inInterface } : {}),
      ...(f.recent !== undefined ? { recent: f.recent } : {}),
    });
    const failure = checkFlow(f, tracePacket(prepared, packet, ctx));
    if (failure !== undefined)
      failures.push(
        `flow ${JSON.stringify(f.name ?? `${f.src} -> ${f.dst}:${f.port}/${proto}`)} from ${from}:\n${failure}`,
      );
  }
  if (failures.length > 0)
    throw new AssertionError({
      message: `${failures.length} of ${flows.length} flows differ:\n${failures.join('\n')}`,
      operator: 'assertFlows',
    });
}
