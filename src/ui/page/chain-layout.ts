// The chain graph's layout: the chains of chain-graph.ts as boxes (name, and the Service or
// endpoint behind them) and their jumps as labelled edges (the branch's share of packets, or
// `goto`), laid out top down by ELK's layered algorithm in the map's Web Worker. Returns
// absolute boxes, edge polylines and label positions for chain-graph-view.tsx's SVG.

import type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api.js';
import type { ChainEdge, ChainGraph, ChainNode } from '../chain-graph.js';
import { engine } from './graph.js';
import { fraction } from './url.js';

/** A character's width in a box's bold name (12px, mostly capitals) and subtitle (11px). */
const NAME_W = 9.2;
const SUB_W = 6.9;
const LABEL_H = 14;

export interface ChainBox {
  readonly chain: string;
  readonly kind: ChainNode['kind'];
  readonly sub: string;
  /** Every Service and endpoint the chain is for (the box's tooltip). */
  readonly title: string;
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
}

export interface ChainEdgeLayout {
  readonly edge: ChainEdge;
  readonly label: string;
  /** What the label abbreviates: rule number, kind and statistic probability. */
  readonly title: string;
  readonly points: readonly { x: number; y: number }[];
  readonly labelAt?: { x: number; y: number };
}

export interface ChainLayout {
  readonly width: number;
  readonly height: number;
  readonly boxes: readonly ChainBox[];
  readonly edges: readonly ChainEdgeLayout[];
}

/** What a chain box says under its name: the Service or endpoint its rules are for. */
export function chainSubtitle(n: ChainNode): string {
  if (n.kind === 'dnat') return 'picked by an nft numgen map';
  const eps = n.endpoints.length;
  if (eps === 1) return `endpoint ${n.endpoints[0] ?? ''}`;
  if (n.services.length === 1) {
    const svc = `Service ${n.services[0] ?? ''}`;
    return eps > 1 ? `${svc} · ${String(eps)} endpoints` : svc;
  }
  if (n.services.length > 1) return `${String(n.services.length)} Service ports`;
  return n.policy !== '' ? n.policy : '';
}

/** The label on an edge: the share of the branch (`1/3`), else `goto`, else ''. */
export function edgeLabel(e: ChainEdge): string {
  if (e.share !== undefined) return fraction(e.share);
  return e.kind === 'goto' ? 'goto' : '';
}

function edgeTitle(e: ChainEdge): string {
  const parts = [`${e.from} rule ${String(e.rule)}: ${e.kind} ${e.to}`];
  if (e.probability !== undefined) parts.push(`statistic probability ${String(e.probability)}`);
  if (e.share !== undefined)
    parts.push(`${(e.share * 100).toFixed(1)}% of the packets entering the branch`);
  if (e.servicePort !== undefined) parts.push(`Service ${e.servicePort}`);
  if (e.endpoint !== undefined) parts.push(`endpoint ${e.endpoint}`);
  return parts.join('; ');
}

export async function layoutChains(g: ChainGraph): Promise<ChainLayout> {
  const subs = new Map(g.nodes.map((n) => [n.chain, chainSubtitle(n)]));
  const titles = new Map(
    g.nodes.map((n) => [
      n.chain,
      [
        n.chain,
        ...n.services.map((x) => `Service ${x}`),
        ...n.endpoints.map((x) => `endpoint ${x}`),
      ].join('; '),
    ]),
  );
  const children: ElkNode[] = g.nodes.map((n) => ({
    id: n.chain,
    width: Math.max(n.chain.length * NAME_W, (subs.get(n.chain) ?? '').length * SUB_W) + 18,
    height: 40,
  }));
  const labels = new Map(g.edges.map((e) => [e.id, edgeLabel(e)]));
  const edges: ElkExtendedEdge[] = g.edges.map((e) => {
    const text = labels.get(e.id) ?? '';
    return {
      id: e.id,
      sources: [e.from],
      targets: [e.to],
      labels:
        text === ''
          ? []
          : [{ id: `${e.id}:label`, text, width: text.length * 7 + 6, height: LABEL_H }],
    };
  });
  const root: ElkNode = {
    id: 'chains',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.layered.spacing.nodeNodeBetweenLayers': '50',
      'elk.spacing.nodeNode': '16',
      'elk.spacing.edgeLabel': '2',
      'elk.edgeLabels.placement': 'CENTER',
      'elk.edgeRouting': 'POLYLINE',
    },
    children,
    edges,
  };
  const out = await engine().layout(root);
  const kinds = new Map(g.nodes.map((n) => [n.chain, n.kind]));
  const boxes: ChainBox[] = (out.children ?? []).map((c) => ({
    chain: c.id,
    kind: kinds.get(c.id) ?? 'chain',
    sub: subs.get(c.id) ?? '',
    title: titles.get(c.id) ?? c.id,
    x: c.x ?? 0,
    y: c.y ?? 0,
    w: c.width ?? 0,
    h: c.height ?? 0,
  }));
  const byId = new Map(g.edges.map((e) => [e.id, e]));
  const laid: ChainEdgeLayout[] = [];
  for (const e of out.edges ?? []) {
    const edge = byId.get(e.id);
    if (!edge) continue;
    const sec = e.sections?.[0];
    const label = e.labels?.[0];
    laid.push({
      edge,
      label: labels.get(e.id) ?? '',
      title: edgeTitle(edge),
      points: sec ? [sec.startPoint, ...(sec.bendPoints ?? []), sec.endPoint] : [],
      ...(label?.x !== undefined && label.y !== undefined
        ? { labelAt: { x: label.x, y: label.y + LABEL_H - 3 } }
        : {}),
    });
  }
  return { width: out.width ?? 0, height: out.height ?? 0, boxes, edges: laid };
}
