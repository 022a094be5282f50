// The flannel node agent's effectful edge (flanneld with the Kubernetes subnet manager): waits
// for its Node's podCIDR, finds the uplink, creates the VXLAN device, publishes flannel's Node
// annotations (backend type and data with the VTEP MAC, public IP), writes subnet.env, installs
// the masquerade rules, then keeps the kernel in step with the Nodes: every Node event and
// every `resyncMs` it reads the kernel (links, routes, neighbours, FDB) through the Ip seam,
// asks plan-flannel.ts for the ops and applies them in one `ip -batch` and one
// `bridge -batch`. The periodic read is what brings back a deleted flannel.1 within seconds
// (flanneld listens for link events; a 1 s poll is simpler and as prompt here). Syncs never
// overlap; a failed one is logged and retried on the next tick. Runs in the node's own network
// namespace; unit tests drive it on FakeIp and FakeInformer.

import type { Logger } from 'pino';
import { SvcnetError } from '../errors.js';
import type { Informer } from '../kube/informer.js';
import type { Node } from '../kube/types.js';
import type { Execer } from '../os/exec.js';
import type { Ip, IpLink } from '../os/ip.js';
import { MASQ_JUMPS, renderMasqRules } from './render-masq-flannel.js';
import {
  desiredState,
  nodePodCIDR,
  peersFromNodes,
  planOps,
  podMTU,
  type Uplink,
} from './plan-flannel.js';
import type { FlannelNetConf } from './parse-net-conf.js';
import { renderSubnetEnv } from './subnet-env.js';
import {
  ANNOTATION_BACKEND_DATA,
  ANNOTATION_BACKEND_TYPE,
  ANNOTATION_KUBE_SUBNET_MANAGER,
  ANNOTATION_PUBLIC_IP,
  vxlanDeviceName,
} from './names.js';

export interface FlannelAgentOptions {
  readonly nodeName: string;
  readonly conf: FlannelNetConf;
  /** The uplink device; default: the device of the default route. */
  readonly iface?: string | undefined;
  readonly subnetFile: string;
  readonly ipMasq: boolean;
  readonly ip: Ip;
  /** For iptables (masquerade rules). */
  readonly execer: Execer;
  readonly nodes: Informer<Node>;
  /** JSON merge patch of a Node (KubeClient.patch('Node', '', …) in production). */
  readonly patchNode: (name: string, patch: Record<string, unknown>) => Promise<unknown>;
  readonly writeFile: (path: string, text: string) => Promise<void>;
  readonly log: Logger;
  readonly resyncMs?: number;
  /** How long to wait between looks for this Node's podCIDR at start. */
  readonly waitMs?: number;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** The uplink: `iface`, else the default route's device; its first IPv4 address. */
export async function findUplink(ip: Ip, iface: string | undefined): Promise<Uplink> {
  let name = iface;
  if (name === undefined) {
    const def = (await ip.routes(undefined, 'IPv4')).find((r) => r.dst === '0.0.0.0/0');
    if (!def)
      throw new SvcnetError('INVALID_INPUT', '--iface: not given and there is no default route');
    name = def.dev;
  }
  const link = (await ip.links(undefined)).find((l) => l.name === name);
  if (!link) throw new SvcnetError('INVALID_INPUT', `--iface ${name}: no such device`);
  const addr = link.addrs.find((a) => a.family === 'IPv4');
  if (!addr) throw new SvcnetError('INVALID_INPUT', `--iface ${name}: has no IPv4 address`);
  return { name, mtu: link.mtu, ip: addr.local, prefixlen: addr.prefixlen };
}

export class FlannelAgent {
  private readonly o: FlannelAgentOptions;
  private uplink: Uplink | undefined;
  private podCIDR = '';
  private vtepMAC: string | undefined;
  private published: string | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Set once the first sync and the annotations are done: events sync from then on. */
  private ready = false;
  private readonly skippedLogged = new Map<string, string>();
  /** Completed syncs (for tests and the log). */
  syncs = 0;

  constructor(o: FlannelAgentOptions) {
    this.o = o;
  }

  private get dev(): string | undefined {
    const b = this.o.conf.backend;
    return b.type === 'vxlan' ? vxlanDeviceName(b.vni) : undefined;
  }

  /** Starts the informer, waits for the podCIDR, programs the node; resolves when serving. */
  async start(): Promise<void> {
    const { o } = this;
    o.nodes.addHandlers({
      onAdd: () => {
        this.kick();
      },
      onUpdate: () => {
        this.kick();
      },
      onDelete: () => {
        this.kick();
      },
      onError: (err) => {
        o.log.warn({ err }, 'Node list/watch failed; retrying');
      },
    });
    o.log.info({ node: o.nodeName }, 'Listing Nodes');
    await o.nodes.start();
    this.podCIDR = await this.waitForPodCIDR();
    this.uplink = await findUplink(o.ip, o.iface);
    const dev = this.dev;
    if (dev !== undefined) {
      const have = (await o.ip.links(undefined)).find((l) => l.name === dev);
      this.vtepMAC = have?.kind === 'vxlan' ? have.mac : undefined;
    }
    o.log.info(
      { node: o.nodeName, podCIDR: this.podCIDR, uplink: this.uplink, backend: o.conf.backend },
      'Flannel starting',
    );
    await this.syncOnce();
    await this.publish();
    this.ready = true;
    const mtu = podMTU(o.conf, this.uplink);
    await o.writeFile(o.subnetFile, renderSubnetEnv(o.conf, this.podCIDR, mtu, o.ipMasq));
    if (o.ipMasq) await this.installMasq();
    this.timer = setInterval(() => {
      this.kick();
    }, o.resyncMs ?? 1000);
    o.log.info({ subnetFile: o.subnetFile, vtepMAC: this.vtepMAC }, 'Flannel running');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
    await this.o.nodes.stop();
  }

  private async waitForPodCIDR(): Promise<string> {
    const { o } = this;
    let said = '';
    for (;;) {
      const node = o.nodes.get(o.nodeName);
      const cidr = node
        ? nodePodCIDR(node, o.conf)
        : { reason: `Node ${o.nodeName} does not exist` };
      if (typeof cidr === 'string') return cidr;
      if (cidr.reason !== said) o.log.warn({ reason: cidr.reason }, 'Waiting for the podCIDR');
      said = cidr.reason;
      if (this.stopped) throw new SvcnetError('INTERNAL', 'stopped');
      await sleep(o.waitMs ?? 1000);
    }
  }

  /** Asks for a sync; one runs at a time, and a request during a sync runs one more after. */
  kick(): void {
    if (!this.ready || this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop().finally(() => {
      this.running = undefined;
    });
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.syncOnce();
      } catch (e) {
        this.o.log.error({ err: e }, 'Flannel sync failed; retrying');
      }
    } while (this.wantsAgain());
  }

  /** Set by kick() during a sync (a method: the compiler cannot see kick() change it). */
  private wantsAgain(): boolean {
    return this.again && !this.stopped;
  }

  /** Asks for a sync and waits until no sync is running (tests). */
  async syncNow(): Promise<void> {
    this.kick();
    for (let p = this.running; p !== undefined; p = this.running) await p;
  }

  private async readDevice(): Promise<IpLink | undefined> {
    const dev = this.dev;
    if (dev === undefined) return undefined;
    return (await this.o.ip.links(undefined)).find((l) => l.name === dev);
  }

  private async syncOnce(): Promise<void> {
    const { o } = this;
    const uplink = this.uplink;
    if (!uplink) return;
    const device = await this.readDevice();
    const dev = this.dev;
    const observed = {
      device,
      routes: await o.ip.routes(undefined, 'IPv4'),
      neighbours: device && dev ? await o.ip.neighbours(undefined, dev) : [],
      fdb: device && dev ? await o.ip.fdb(undefined, dev) : [],
    };
    const { peers, skipped } = peersFromNodes(
      o.nodes.list(),
      o.nodeName,
      this.podCIDR,
      o.conf,
      uplink,
    );
    this.logSkipped(skipped);
    const desired = desiredState(o.conf, this.podCIDR, uplink, peers, this.vtepMAC);
    const ops = planOps(o.conf, this.podCIDR, uplink, desired, observed);
    if (ops.createsDevice)
      o.log.info({ device: dev, recreated: device !== undefined }, 'Creating the VXLAN device');
    await o.ip.batch(undefined, ops.ip);
    await o.ip.fdbBatch(undefined, ops.fdb);
    if (ops.ip.length + ops.fdb.length > 0)
      o.log.info(
        { peers: peers.length, ipOps: ops.ip.length, fdbOps: ops.fdb.length },
        'Flannel sync applied',
      );
    if (ops.createsDevice) {
      this.vtepMAC = (await this.readDevice())?.mac;
      if (this.published !== undefined) await this.publish();
    }
    this.syncs++;
  }

  private logSkipped(skipped: readonly { node: string; reason: string }[]): void {
    const now = new Map(skipped.map((s) => [s.node, s.reason]));
    for (const [node, reason] of now)
      if (this.skippedLogged.get(node) !== reason)
        this.o.log.warn({ node, reason }, 'Skipping Node');
    this.skippedLogged.clear();
    for (const [k, v] of now) this.skippedLogged.set(k, v);
  }

  /** Patches this Node's flannel annotations (again when the VTEP MAC changed). */
  private async publish(): Promise<void> {
    const { o } = this;
    const data =
      o.conf.backend.type === 'vxlan'
        ? JSON.stringify({ VNIType: o.conf.backend.vni, VtepMAC: this.vtepMAC })
        : 'null';
    if (this.published === data) return;
    await o.patchNode(o.nodeName, {
      metadata: {
        annotations: {
          [ANNOTATION_BACKEND_TYPE]: o.conf.backend.type,
          [ANNOTATION_BACKEND_DATA]: data,
          [ANNOTATION_PUBLIC_IP]: this.uplink?.ip,
          [ANNOTATION_KUBE_SUBNET_MANAGER]: 'true',
        },
      },
    });
    this.published = data;
  }

  private async installMasq(): Promise<void> {
    const { o } = this;
    const has = async (table: 'nat' | 'filter'): Promise<boolean> =>
      (
        await o.execer.run({
          cmd: 'iptables',
          args: ['-w', '5', '-t', table, '-C', ...MASQ_JUMPS[table]],
        })
      ).code === 0;
    const withJumps = { nat: !(await has('nat')), filter: !(await has('filter')) };
    const res = await o.execer.run({
      cmd: 'iptables-restore',
      args: ['-w', '5', '--noflush'],
      stdin: renderMasqRules(o.conf.network, this.podCIDR, withJumps),
    });
    if (res.code !== 0)
      throw new SvcnetError('IPTABLES_RESTORE_FAILED', `iptables-restore: ${res.stderr.trim()}`);
  }
}
