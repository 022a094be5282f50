// The cluster map's layout: the Services shown, the Pods behind their endpoints grouped in
// their Nodes, and an edge per endpoint, laid out by ELK's layered algorithm (elkjs, in a Web
// Worker so a big cluster never blocks the page). Returns absolute boxes and edge polylines
// for the SVG in map-view.tsx. A large cluster shows at most MAX_SERVICES Services (those
// matching the filter) so the layout stays quick; the lists beside the map show everything.

import ELK from 'elkjs/lib/elk-api.js';
import type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api.js';
import workerUrl from 'elkjs/lib/elk-worker.min.js?url';
import type { ClusterSnapshot, ServiceInfo } from '../api-types.js';

export const MAX_SERVICES = 40;
/** Up to this many Pods, every Pod is drawn, not only endpoints. */
const ALL_PODS_UP_TO = 120;

export interface Box {
  readonly id: string;
  readonly kind: 'node' | 'pod' | 'service';
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
  readonly label: string;
  readonly sub: string;
  readonly ready: boolean;
}

export interface Edge {
  readonly id: string;
  readonly from: string;
  readonly to: string;
  readonly points: readonly { x: number; y: number }[];
}

export interface Layout {
  readonly width: number;
  readonly height: number;
  readonly boxes: readonly Box[];
  readonly edges: readonly Edge[];
  /** Services left out because of MAX_SERVICES. */
  readonly hidden: number;
}

let elk: InstanceType<typeof ELK> | undefined;
/** The page's one ELK instance (its worker is shared by the map and the chain graph). */
export function engine(): InstanceType<typeof ELK> {
  elk ??= new ELK({ workerFactory: () => new Worker(workerUrl) });
  return elk;
}

export const serviceId = (s: { namespace: string; name: string }): string =>
  `svc:${s.namespace}/${s.name}`;
export const podId = (ns: string, name: string): string => `pod:${ns}/${name}`;

/** The pod ids a Service's endpoints point at (by targetRef, else by address). */
export function endpointPods(snap: ClusterSnapshot, svc: ServiceInfo): string[] {
  const byIP = new Map<string, string>();
  for (const p of snap.pods) for (const ip of p.ips) byIP.set(ip, podId(p.namespace, p.name));
  const out = new Set<string>();
  for (const e of svc.endpoints) {
    if (e.pod !== undefined) out.add(`pod:${e.pod}`);
    else
      for (const a of e.addresses) {
        const id = byIP.get(a);
        if (id !== undefined) out.add(id);
      }
  }
  return [...out];
}

const CHAR_W = 7.6;

export async function layoutCluster(
  snap: ClusterSnapshot,
  services: readonly ServiceInfo[],
): Promise<Layout> {
  const shown = services.slice(0, MAX_SERVICES);
  const edges: ElkExtendedEdge[] = [];
  const wanted = new Set<string>();
  for (const s of shown)
    for (const p of endpointPods(snap, s)) {
      wanted.add(p);
      edges.push({ id: `${serviceId(s)}>${p}`, sources: [serviceId(s)], targets: [p] });
    }
  const allPods = snap.pods.length <= ALL_PODS_UP_TO;
  const pods = snap.pods.filter((p) => allPods || wanted.has(podId(p.namespace, p.name)));
  const present = new Set(pods.map((p) => podId(p.namespace, p.name)));
  const meta = new Map<string, Omit<Box, 'x' | 'y' | 'w' | 'h' | 'id'>>();
  const groups = new Map<string, ElkNode[]>();
  for (const p of pods) {
    const id = podId(p.namespace, p.name);
    const label = p.name;
    const sub = p.ips[0] ?? p.phase;
    meta.set(id, { kind: 'pod', label, sub, ready: p.ready });
    const w = Math.max(label.length, sub.length) * CHAR_W + 16;
    const g = p.node === '' ? '(unscheduled)' : p.node;
    groups.set(g, [...(groups.get(g) ?? []), { id, width: w, height: 38 }]);
  }
  const children: ElkNode[] = [];
  for (const n of snap.nodes) groups.set(n.name, groups.get(n.name) ?? []);
  for (const [name, kids] of groups) {
    const node = snap.nodes.find((n) => n.name === name);
    const id = `node:${name}`;
    meta.set(id, {
      kind: 'node',
      label: name,
      sub: node?.addresses[0] ?? '',
      ready: node?.ready ?? true,
    });
    children.push({
      id,
      children: kids,
      // One layered layout over the whole hierarchy: edges cross into the Node groups.
      layoutOptions: { 'elk.padding': '[top=34,left=10,bottom=10,right=10]' },
      width: Math.max(name.length * CHAR_W + 20, 120),
      height: 60,
    });
  }
  for (const s of shown) {
    const id = serviceId(s);
    const label = s.name;
    const sub = `${s.clusterIPs[0] ?? (s.headless ? 'headless' : s.type)}:${s.ports.map((p) => p.port).join(',')}`;
    meta.set(id, { kind: 'service', label, sub, ready: s.endpoints.some((e) => e.ready) });
    children.push({ id, width: Math.max(label.length, sub.length) * CHAR_W + 20, height: 40 });
  }
  const graph: ElkNode = {
    id: 'root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'RIGHT',
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.layered.spacing.nodeNodeBetweenLayers': '60',
      'elk.spacing.nodeNode': '14',
      'elk.edgeRouting': 'POLYLINE',
    },
    children,
    edges: edges.filter((e) => present.has(e.targets[0] ?? '')),
  };
  const out = await engine().layout(graph);
  const boxes: Box[] = [];
  const place = (n: ElkNode, dx: number, dy: number): void => {
    const x = dx + (n.x ?? 0);
    const y = dy + (n.y ?? 0);
    const m = meta.get(n.id);
    if (m) boxes.push({ id: n.id, x, y, w: n.width ?? 0, h: n.height ?? 0, ...m });
    for (const c of n.children ?? []) place(c, x, y);
  };
  for (const c of out.children ?? []) place(c, 0, 0);
  const laidEdges: Edge[] = (out.edges ?? []).map((e) => {
    const sec = e.sections?.[0];
    // With INCLUDE_CHILDREN, edge coordinates are relative to the root here.
    const pts = sec ? [sec.startPoint, ...(sec.bendPoints ?? []), sec.endPoint] : [];
    return { id: e.id, from: e.sources[0] ?? '', to: e.targets[0] ?? '', points: pts };
  });
  return {
    width: out.width ?? 0,
    height: out.height ?? 0,
    boxes,
    edges: laidEdges,
    hidden: Math.max(services.length - shown.length, 0),
  };
}
