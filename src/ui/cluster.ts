// The live side of `svcnet ui`: the UiCluster over four informers (Nodes, Pods, Services,
// EndpointSlices), whose snapshot is rebuilt only after a change and whose subscribers hear
// of changes at most once per debounce window; and the RulesProvider that reads a node's
// rules from its `--rules NODE=FILE` (read on every request, so an edited file shows), from a
// live reader (`svcnet lab ui`: the node's own iptables-save / nft list ruleset), or else
// renders what svcnet's iptables planner would program on that node from the same objects.

import { readFile } from 'node:fs/promises';
import type { Informer } from '../kube/informer.js';
import { nodeIPOf, resolveNode } from '../kube/node-model.js';
import type { EndpointSlice, KubeObject, Node, Pod, Service } from '../kube/types.js';
import { renderDocument } from '../netfilter/iptables/render.js';
import { rulesFromManifests } from '../trace/from-manifests.js';
import { parseCIDR } from '../util/ip.js';
import type { ChangeEvent, ClusterSnapshot, RulesSourceInfo } from './api-types.js';
import type { NodeRules, RulesProvider, UiCluster } from './server.js';
import { buildSnapshot } from './snapshot.js';

export interface UiInformers {
  readonly nodes: Informer<Node>;
  readonly pods: Informer<Pod>;
  readonly services: Informer<Service>;
  readonly endpointSlices: Informer<EndpointSlice>;
}

/** Reads one node's live ruleset (the lab); undefined when the node has none to read. */
export type LiveRulesReader = (node: string) => Promise<string | undefined>;

/** kube-proxy's --cluster-cidr when rendering (the lab's and kind's pod network). */
const RENDER_CLUSTER_CIDRS = ['10.244.0.0/16', 'fd00:10:244::/56'];

export class InformerCluster implements UiCluster, RulesProvider {
  private revision = 0;
  private cached: ClusterSnapshot | undefined;
  private readonly listeners = new Set<(e: ChangeEvent) => void>();
  private pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  private readonly informers: UiInformers;
  private readonly files: ReadonlyMap<string, string>;
  private readonly live: LiveRulesReader | undefined;
  private readonly debounceMs: number;

  constructor(
    informers: UiInformers,
    files: ReadonlyMap<string, string>,
    live?: LiveRulesReader,
    debounceMs = 100,
  ) {
    this.informers = informers;
    this.files = files;
    this.live = live;
    this.debounceMs = debounceMs;
    const watch = <T extends KubeObject>(kind: string, inf: Informer<T>): void => {
      const changed = (): void => {
        this.changed(kind);
      };
      inf.addHandlers({ onAdd: changed, onUpdate: changed, onDelete: changed });
    };
    watch('Node', informers.nodes);
    watch('Pod', informers.pods);
    watch('Service', informers.services);
    watch('EndpointSlice', informers.endpointSlices);
  }

  async start(): Promise<void> {
    await Promise.all(Object.values(this.informers).map((i: Informer<KubeObject>) => i.start()));
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    await Promise.all(Object.values(this.informers).map((i: Informer<KubeObject>) => i.stop()));
  }

  private changed(kind: string): void {
    this.revision++;
    this.cached = undefined;
    this.pending.add(kind);
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      const e: ChangeEvent = { revision: this.revision, kinds: [...this.pending].sort() };
      this.pending = new Set();
      for (const l of this.listeners) l(e);
    }, this.debounceMs);
  }

  subscribe(listener: (e: ChangeEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private sourceOf(node: string): RulesSourceInfo {
    const file = this.files.get(node);
    if (file !== undefined) return { node, origin: 'file', description: `rules file ${file}` };
    if (this.live)
      return { node, origin: 'lab', description: `the lab node's live ruleset (${node})` };
    return {
      node,
      origin: 'rendered',
      description: "svcnet's iptables planner over the cluster's Services and EndpointSlices",
    };
  }

  snapshot(): ClusterSnapshot {
    if (this.cached) return this.cached;
    const nodes = this.informers.nodes.list();
    const names = [...new Set([...nodes.map((n) => n.metadata?.name ?? ''), ...this.files.keys()])];
    this.cached = buildSnapshot({
      nodes,
      pods: this.informers.pods.list(),
      services: this.informers.services.list(),
      endpointSlices: this.informers.endpointSlices.list(),
      rules: names
        .filter((n) => n !== '')
        .sort()
        .map((n) => this.sourceOf(n)),
      revision: this.revision,
    });
    return this.cached;
  }

  async read(node: string): Promise<NodeRules | undefined> {
    if (!this.snapshot().rules.some((r) => r.node === node)) return undefined;
    const source = this.sourceOf(node);
    if (source.origin === 'file')
      return { text: await readFile(this.files.get(node) ?? '', 'utf8'), source };
    if (source.origin === 'lab' && this.live) {
      const text = await this.live(node);
      return text === undefined ? undefined : { text, source };
    }
    return { text: this.render(node), source };
  }

  private render(nodeName: string): string {
    const nodes = this.informers.nodes.list();
    const node = resolveNode(nodes, { name: nodeName });
    const set = {
      services: this.informers.services.list(),
      endpointSlices: this.informers.endpointSlices.list(),
      nodes,
      pods: [],
      others: [],
      all: [],
      duplicates: [],
    };
    const family = 'IPv4';
    const rendered = rulesFromManifests(set, {
      family,
      nodeName: node.name,
      nodeIP: nodeIPOf(node, family),
      localAddresses: node.nodeIPs,
      clusterCIDR: RENDER_CLUSTER_CIDRS.find((c) => parseCIDR(c)?.family === family) ?? '',
      options: { nodeZone: node.zone },
    });
    return renderDocument(rendered.document);
  }
}
