// Presents a trace: a readable tree for people (every outcome with its probability, verdict
// and the rules on its path, indented by chain depth, each kube-proxy chain explained and the
// Service/endpoint behind a rule named) and a JSON document for programs (addresses as
// text, probabilities as numbers, the same paths). Pure.

import { formatIP } from '../util/ip.js';
import { chainPurpose } from './explain.js';
import { formatHopLines } from './hop.js';
import type { TraceContext } from './packet.js';
import { formatHostPort } from './packet.js';
import type { Outcome, TraceResult, TraceStep } from './result.js';

const ORIGIN_TEXT: Readonly<Record<TraceContext['origin'], string>> = {
  pod: 'from a pod on this node',
  node: 'from the node itself',
  external: 'from outside the node',
};

/** `33.3%`, or more digits when needed to tell small values apart. */
export function formatPercent(p: number): string {
  const pct = p * 100;
  if (pct === 100) return '100%';
  if (pct >= 1) return `${Number(pct.toFixed(1))}%`;
  return `${Number(pct.toPrecision(3))}%`;
}

/** One line saying what finally happens in an outcome. */
export function describeOutcome(o: Outcome): string {
  const parts: string[] = [];
  if (o.verdict === 'drop')
    parts.push(
      o.verdictBy === 'policy'
        ? 'DROPPED by a chain policy'
        : 'DROPPED (the client sees a timeout)',
    );
  else if (o.verdict === 'reject') parts.push('REJECTED (the client sees "connection refused")');
  else if (o.dnat !== undefined) parts.push(`DNAT to ${o.dnat}`);
  else parts.push('accepted, no Service translation');
  if (o.servicePort !== undefined)
    parts.push(
      `Service ${o.servicePort}${o.endpoint !== undefined ? `, endpoint ${o.endpoint}` : ''}${o.endpointObject !== undefined ? ` (${o.endpointObject})` : ''}`,
    );
  if (o.verdict === 'accept') {
    if (o.delivery === 'local') parts.push('delivered to the node itself');
    else if (o.delivery === 'forward') parts.push('forwarded');
    parts.push(
      o.masquerade
        ? `source masqueraded${o.snat !== undefined && o.snat !== 'masquerade' ? ` (SNAT to ${o.snat})` : " (SNAT to the node's address)"}`
        : 'source IP kept',
    );
  }
  return parts.join(' — ');
}

function stepLine(s: TraceStep): string {
  const where = `${s.table} ${s.chain}${s.rule !== undefined ? ` #${s.rule}` : ''}${s.assumed ? ' (assumed)' : ''}`;
  let what = s.detail;
  if (s.effect === 'jump' || s.effect === 'goto') {
    const target = s.detail.split(' ').at(-1) ?? '';
    // Say what kube-proxy's chains are for, once per jump.
    const purpose = chainPurpose(target);
    if (purpose !== undefined) what += ` — ${purpose}`;
  }
  if (s.empty === true) what += ' — no rule matched there';
  const objects: string[] = [];
  if (s.servicePort !== undefined) objects.push(`Service ${s.servicePort}`);
  if (s.endpoint !== undefined) objects.push(`endpoint ${s.endpoint}`);
  if (s.role !== undefined) objects.push(s.role);
  return `${where}: ${what}${objects.length > 0 ? `  [${objects.join(', ')}]` : ''}`;
}

/** Rule text is shown for steps that did something (all steps when verbose). */
function showText(s: TraceStep, verbose: boolean): boolean {
  if (s.text === undefined || s.assumed === true) return false;
  if (verbose) return true;
  return s.empty !== true && s.effect !== 'return';
}

/** How much of each path the tree shows. */
export type Detail = 'brief' | 'normal' | 'verbose';

/**
 * The readable tree. `brief` prints only the outcomes; `verbose` also prints the rule text
 * of jumps that found nothing and of RETURNs.
 */
export function formatTraceText(r: TraceResult, detail: Detail = 'normal'): string {
  const verbose = detail === 'verbose';
  const p = r.packet;
  const ctx = r.context;
  const lines: string[] = [];
  lines.push(
    `${p.protocol.toUpperCase()} ${formatHostPort(p.src, p.srcPort)} -> ${formatHostPort(p.dst, p.dstPort)}, ${ORIGIN_TEXT[ctx.origin]}, connection state ${ctx.ctState}${ctx.mode === 'fixture-compatible' ? ' (fixture-compatible mode)' : ''}`,
  );
  const local = ['127.0.0.0/8', ...ctx.localAddresses.map(formatIP)];
  const localWord = r.dataplane === 'nftables' ? 'fib type local' : 'addrtype LOCAL';
  lines.push(`node addresses (${localWord}): ${local.join(', ')}`);
  if (ctx.recent.length > 0)
    lines.push(
      `existing affinity: ${ctx.recent.map((e) => `${e.name} (${e.ageSeconds}s ago)`).join(', ')}`,
    );
  if (ctx.mark !== 0n) lines.push(`initial packet mark: 0x${ctx.mark.toString(16)}`);
  lines.push('');
  const n = r.outcomes.length;
  lines.push(n === 1 ? '1 outcome:' : `${n} possible outcomes:`);
  r.outcomes.forEach((o, i) => {
    lines.push('');
    lines.push(`[${i + 1}] ${formatPercent(o.probability)}  ${describeOutcome(o)}`);
    if (o.hop !== undefined) for (const l of formatHopLines(o.hop)) lines.push(`    ${l}`);
    if (detail === 'brief') return;
    let hook = '';
    for (const s of o.path) {
      if (s.hook !== hook) {
        hook = s.hook;
        lines.push(`    ${hook}`);
      }
      const pad = '      ' + '  '.repeat(s.depth);
      lines.push(pad + stepLine(s));
      if (showText(s, verbose)) lines.push(`${pad}    ${s.text ?? ''}`);
    }
  });
  if (r.unsupported.length > 0) {
    lines.push('');
    lines.push('Rules on the way that could not be evaluated (assumed not to match):');
    for (const u of r.unsupported)
      lines.push(
        `  ${u.table} ${u.chain} #${u.rule}${u.line !== undefined ? ` (line ${u.line})` : ''}: ${u.reasons.join('; ')}\n    ${u.text}`,
      );
  }
  if (r.notes.length > 0) {
    lines.push('');
    lines.push('Notes:');
    for (const note of r.notes) lines.push(`  - ${note}`);
  }
  return lines.join('\n') + '\n';
}

/** The JSON document (`--json`). */
export function traceToJSON(r: TraceResult): unknown {
  const p = r.packet;
  const ctx = r.context;
  return {
    ...(r.dataplane !== undefined ? { dataplane: r.dataplane } : {}),
    packet: {
      src: formatIP(p.src),
      dst: formatIP(p.dst),
      protocol: p.protocol,
      srcPort: p.srcPort,
      dstPort: p.dstPort,
    },
    context: {
      origin: ctx.origin,
      mode: ctx.mode,
      localAddresses: ['127.0.0.0/8', ...ctx.localAddresses.map(formatIP)],
      ctState: ctx.ctState,
      mark: `0x${ctx.mark.toString(16)}`,
      recent: ctx.recent,
      ...(ctx.inInterface !== undefined ? { inInterface: ctx.inInterface } : {}),
      ...(ctx.outInterface !== undefined ? { outInterface: ctx.outInterface } : {}),
    },
    outcomes: r.outcomes.map((o) => ({ ...o, summary: describeOutcome(o) })),
    unsupported: r.unsupported,
    notes: r.notes,
  };
}
