// The `Ip` boundary: configuring links, addresses and routes in a network namespace with
// iproute2 (typed `IpOp`s from util/ip-ops.ts rendered to one `ip -batch -`, entered with
// `nsenter --net=PATH` for a namespace given by path), creating and deleting named
// namespaces (`ip netns add|del`), and reading state back as JSON (`ip -j`). RealIp runs `ip`
// through an Execer; FakeIp is an in-memory model of namespaces that applies the same typed
// ops, raises the same errors as the kernel for the cases svcnet relies on, and dumps
// canonical text. Neighbour entries (`ip neigh`) and a VXLAN device's FDB (`bridge fdb`, run
// as `bridge -batch -`) belong to the seam too: the pod-network agent programs them. Not a
// general iproute2 emulator: it models only the ops of the union.

import { access } from 'node:fs/promises';
import { SvcnetError } from '../errors.js';
import {
  cidrContains,
  formatCIDR,
  formatIP,
  parseCIDR,
  parseIP,
  type IPFamily,
} from '../util/ip.js';
import {
  bridge,
  ipOpWords,
  netnsPath,
  renderIpBatch,
  renderIpOp,
  renderFdbBatch,
  type AddrOp,
  type FdbOp,
  type IpOp,
  type LinkAddOp,
  type LinkSetOp,
  type NeighOp,
  type RouteOp,
} from '../util/ip-ops.js';
import { runChecked, type Execer } from './exec.js';
import { netnsNameOf, runBatchPair } from './ip-batch-pair.js';

/** A namespace: undefined = the one the process runs in ("host"); else a netns path. */
export type NetnsPath = string | undefined;

export interface IpAddress {
  readonly family: IPFamily;
  readonly local: string;
  readonly prefixlen: number;
}

export interface IpLink {
  readonly name: string;
  readonly ifindex: number;
  readonly mac: string;
  readonly mtu: number;
  /** Administratively up. */
  readonly up: boolean;
  /** `veth`, `bridge`, … (undefined for plain devices such as lo). */
  readonly kind: string | undefined;
  readonly master: string | undefined;
  readonly addrs: readonly IpAddress[];
  /** A VXLAN device's parameters (absent for other kinds). */
  readonly vxlan?: IpVxlanInfo;
}

export interface IpVxlanInfo {
  readonly id: number;
  readonly port: number;
  readonly local: string | undefined;
  readonly learning: boolean;
}

/** A neighbour (ARP/NDP) entry of one device. */
export interface IpNeighbour {
  readonly dst: string;
  readonly lladdr: string | undefined;
  readonly permanent: boolean;
}

/** A `bridge fdb` entry of one device that has a remote (`dst`): a VXLAN device's VTEPs. */
export interface FdbEntry {
  readonly mac: string;
  readonly dst: string;
}

export interface IpRoute {
  /** Always CIDR form (`0.0.0.0/0` for default, `/32` or `/128` for hosts). */
  readonly dst: string;
  readonly gateway: string | undefined;
  readonly dev: string;
  readonly scope: 'global' | 'link' | 'host';
}

export interface Ip {
  /** Runs the ops in one `ip -batch -`; stops at the first failing op and throws IpError. */
  batch(netns: NetnsPath, ops: readonly IpOp[]): Promise<void>;
  /**
   * hostOps here, then podOps in the namespace at podNetns (ip-batch-pair.ts: one exec for a
   * named namespace); stops at the first failing op and throws IpError.
   */
  batchPair(hostOps: readonly IpOp[], podNetns: string, podOps: readonly IpOp[]): Promise<void>;
  /** Deletes a link; false when it did not exist. */
  deleteLink(netns: NetnsPath, name: string): Promise<boolean>;
  /** Creates a bridge unless present (safe under concurrent callers). */
  ensureBridge(netns: NetnsPath, name: string, mtu?: number): Promise<void>;
  links(netns: NetnsPath): Promise<IpLink[]>;
  routes(netns: NetnsPath, family: IPFamily): Promise<IpRoute[]>;
  /** `ip -j neigh show dev DEV` (IPv4 and IPv6). */
  neighbours(netns: NetnsPath, dev: string): Promise<IpNeighbour[]>;
  /** The entries of `bridge -j fdb show dev DEV` that have a `dst`. */
  fdb(netns: NetnsPath, dev: string): Promise<FdbEntry[]>;
  /** Runs FDB ops in one `bridge -batch -`; throws IpError at the first failing op. */
  fdbBatch(netns: NetnsPath, ops: readonly FdbOp[]): Promise<void>;
  netnsExists(path: string): Promise<boolean>;
  /** `ip netns add NAME`: a new namespace at netnsPath(NAME); throws IpError if it exists. */
  addNetns(name: string): Promise<void>;
  /** `ip netns del NAME`; false when it did not exist. */
  deleteNetns(name: string): Promise<boolean>;
}

export class IpError extends SvcnetError {
  readonly stderr: string;
  constructor(message: string, stderr: string) {
    super('EXEC_FAILED', message);
    this.name = 'IpError';
    this.stderr = stderr;
  }
}

const NOT_FOUND_RE = /Cannot find device|does not exist|No such device/;
const EXISTS_RE = /File exists/;

/** iproute2 through an Execer; `nsenter --net=PATH` for namespaces given by path. */
export class RealIp implements Ip {
  private readonly execer: Execer;
  constructor(execer: Execer) {
    this.execer = execer;
  }

  private argv(
    netns: NetnsPath,
    args: readonly string[],
    tool: 'ip' | 'bridge' = 'ip',
  ): { cmd: string; args: string[] } {
    return netns === undefined
      ? { cmd: tool, args: [...args] }
      : { cmd: 'nsenter', args: [`--net=${netns}`, tool, ...args] };
  }

  async batch(netns: NetnsPath, ops: readonly IpOp[]): Promise<void> {
    if (ops.length === 0) return;
    const res = await this.execer.run({
      ...this.argv(netns, ['-batch', '-']),
      stdin: renderIpBatch(ops),
    });
    if (res.code !== 0) {
      const where = netns ?? 'host namespace';
      const err = (res.stderr || res.stdout).trim();
      const failed = /Command failed -:(\d+)/.exec(err);
      const op = failed ? ops[Number(failed[1]) - 1] : undefined;
      throw new IpError(
        `ip in ${where}: ${op ? `"${renderIpOp(op)}": ` : ''}${err.replace(/\s*Command failed -:\d+\s*/, ' ').trim()}`,
        err,
      );
    }
  }

  async batchPair(hostOps: readonly IpOp[], podNetns: string, podOps: readonly IpOp[]) {
    const name = netnsNameOf(podNetns);
    if (name === undefined || hostOps.length === 0 || podOps.length === 0) {
      await this.batch(undefined, hostOps);
      await this.batch(podNetns, podOps);
    } else await runBatchPair(this.execer, hostOps, podNetns, name, podOps);
  }

  async deleteLink(netns: NetnsPath, name: string): Promise<boolean> {
    const res = await this.execer.run(this.argv(netns, ['link', 'del', name]));
    if (res.code === 0) return true;
    if (NOT_FOUND_RE.test(res.stderr)) return false;
    throw new IpError(
      `ip link del ${name} in ${netns ?? 'host namespace'}: ${res.stderr.trim()}`,
      res.stderr,
    );
  }

  async ensureBridge(netns: NetnsPath, name: string, mtu?: number): Promise<void> {
    const args = ipOpWords(bridge(name, mtu ? { mtu } : {}));
    const res = await this.execer.run(this.argv(netns, args));
    if (res.code === 0 || EXISTS_RE.test(res.stderr)) return;
    throw new IpError(`ip ${args.join(' ')}: ${res.stderr.trim()}`, res.stderr);
  }

  async links(netns: NetnsPath): Promise<IpLink[]> {
    const res = await runChecked(this.execer, this.argv(netns, ['-j', '-d', 'addr', 'show']));
    return parseIpAddrJson(res.stdout);
  }

  async routes(netns: NetnsPath, family: IPFamily): Promise<IpRoute[]> {
    const res = await runChecked(
      this.execer,
      this.argv(netns, [family === 'IPv4' ? '-4' : '-6', '-j', 'route', 'show']),
    );
    return parseIpRouteJson(res.stdout, family);
  }

  async neighbours(netns: NetnsPath, dev: string): Promise<IpNeighbour[]> {
    const res = await runChecked(
      this.execer,
      this.argv(netns, ['-j', 'neigh', 'show', 'dev', dev]),
    );
    return parseIpNeighJson(res.stdout);
  }

  async fdb(netns: NetnsPath, dev: string): Promise<FdbEntry[]> {
    const res = await runChecked(
      this.execer,
      this.argv(netns, ['-j', 'fdb', 'show', 'dev', dev], 'bridge'),
    );
    return parseBridgeFdbJson(res.stdout);
  }

  async fdbBatch(netns: NetnsPath, ops: readonly FdbOp[]): Promise<void> {
    if (ops.length === 0) return;
    const res = await this.execer.run({
      ...this.argv(netns, ['-batch', '-'], 'bridge'),
      stdin: renderFdbBatch(ops),
    });
    if (res.code !== 0)
      throw new IpError(
        `bridge in ${netns ?? 'host namespace'}: ${(res.stderr || res.stdout).trim()}`,
        res.stderr,
      );
  }

  async netnsExists(path: string): Promise<boolean> {
    try {
      await access(path);
      return true;
    } catch {
      return false;
    }
  }

  async addNetns(name: string): Promise<void> {
    await this.run(['netns', 'add', name]);
  }

  async deleteNetns(name: string): Promise<boolean> {
    const res = await this.execer.run({ cmd: 'ip', args: ['netns', 'del', name] });
    if (res.code === 0) return true;
    if (/No such file/.test(res.stderr)) return false;
    throw new IpError(`ip netns del ${name}: ${res.stderr.trim()}`, res.stderr);
  }

  private async run(args: string[]): Promise<void> {
    const res = await this.execer.run({ cmd: 'ip', args });
    if (res.code !== 0) throw new IpError(`ip ${args.join(' ')}: ${res.stderr.trim()}`, res.stderr);
  }
}

type J = Record<string, unknown>;

/** Parses `ip -j -d addr show`. */
export function parseIpAddrJson(text: string): IpLink[] {
  const arr = JSON.parse(text === '' ? '[]' : text) as J[];
  return arr.map((l) => {
    const info = l.linkinfo as J | undefined;
    const addrs = ((l.addr_info ?? []) as J[]).map((a): IpAddress => ({
      family: a.family === 'inet6' ? 'IPv6' : 'IPv4',
      local: String(a.local),
      prefixlen: Number(a.prefixlen),
    }));
    const data = info?.info_data as J | undefined;
    return {
      name: String(l.ifname),
      ifindex: Number(l.ifindex),
      mac: typeof l.address === 'string' ? l.address : '',
      mtu: Number(l.mtu),
      up: ((l.flags ?? []) as string[]).includes('UP'),
      kind: typeof info?.info_kind === 'string' ? info.info_kind : undefined,
      master: typeof l.master === 'string' ? l.master : undefined,
      addrs,
      ...(info?.info_kind === 'vxlan' && data
        ? {
            vxlan: {
              id: Number(data.id),
              port: Number(data.port),
              local: typeof data.local === 'string' ? data.local : undefined,
              learning: data.learning === true,
            },
          }
        : {}),
    };
  });
}

/** Parses `ip -j neigh show dev DEV`. */
export function parseIpNeighJson(text: string): IpNeighbour[] {
  const arr = JSON.parse(text === '' ? '[]' : text) as J[];
  return arr.map((n) => ({
    dst: String(n.dst),
    lladdr: typeof n.lladdr === 'string' ? n.lladdr : undefined,
    permanent: ((n.state ?? []) as string[]).includes('PERMANENT'),
  }));
}

/** Parses `bridge -j fdb show dev DEV`, keeping the entries with a remote (`dst`). */
export function parseBridgeFdbJson(text: string): FdbEntry[] {
  const arr = JSON.parse(text === '' ? '[]' : text) as J[];
  return arr.flatMap((e) =>
    typeof e.dst === 'string' && typeof e.mac === 'string' ? [{ mac: e.mac, dst: e.dst }] : [],
  );
}

function routeDst(dst: string, family: IPFamily): string {
  if (dst === 'default') return family === 'IPv4' ? '0.0.0.0/0' : '::/0';
  return dst.includes('/') ? dst : `${dst}/${family === 'IPv4' ? 32 : 128}`;
}

/** Parses `ip -j route show`. */
export function parseIpRouteJson(text: string, family: IPFamily): IpRoute[] {
  const arr = JSON.parse(text === '' ? '[]' : text) as J[];
  return arr.map((r) => ({
    dst: routeDst(String(r.dst), family),
    gateway: typeof r.gateway === 'string' ? r.gateway : undefined,
    dev: String(r.dev),
    scope: r.scope === 'link' || r.scope === 'host' ? r.scope : 'global',
  }));
}

// ---------------------------------------------------------------------------------------
// FakeIp

interface FakeLink {
  name: string;
  ifindex: number;
  mac: string;
  mtu: number;
  up: boolean;
  kind: string | undefined;
  master: string | undefined;
  hairpin: boolean;
  isolated?: boolean;
  promisc?: boolean;
  addrs: IpAddress[];
  /** veth peer: namespace key and name. */
  peer: { ns: string; name: string } | undefined;
  vxlan?: IpVxlanInfo;
  /** Neighbour entries by address, FDB remotes by MAC. */
  neigh: Map<string, string>;
  fdb: Map<string, string>;
}

interface FakeRoute extends IpRoute {
  /** Kernel-made prefix route of an address (goes away with the address). */
  readonly proto: 'kernel' | 'static';
}

interface FakeNs {
  links: Map<string, FakeLink>;
  routes: FakeRoute[];
}

const HOST = '';

/** A synchronous body as a promise: its throw becomes a rejection, as with RealIp. */
function settle<T>(body: () => T): Promise<T> {
  try {
    return Promise.resolve(body());
  } catch (e) {
    return Promise.reject(e instanceof Error ? e : new Error(String(e)));
  }
}

/** In-memory namespaces driven by the same typed ops as RealIp. */
export class FakeIp implements Ip {
  private readonly spaces = new Map<string, FakeNs>([[HOST, FakeIp.emptyNs()]]);
  private nextIndex = 2;
  private macSeq = 1;
  /** Every batch applied, as text, for assertions. */
  readonly history: string[] = [];

  private static emptyNs(): FakeNs {
    return {
      links: new Map([
        [
          'lo',
          {
            name: 'lo',
            ifindex: 1,
            mac: '00:00:00:00:00:00',
            mtu: 65536,
            up: false,
            kind: undefined,
            master: undefined,
            hairpin: false,
            addrs: [],
            peer: undefined,
            neigh: new Map(),
            fdb: new Map(),
          },
        ],
      ]),
      routes: [],
    };
  }

  /** Creates a pod/node namespace reachable at `path` (a test's CNI_NETNS). */
  addNetnsAt(path: string): void {
    this.spaces.set(path, FakeIp.emptyNs());
  }

  /** Removes a namespace; veth peers elsewhere disappear with it, as in the kernel. */
  removeNetns(path: string): void {
    const ns = this.spaces.get(path);
    if (!ns) return;
    for (const l of ns.links.values()) if (l.peer) this.dropLink(l.peer.ns, l.peer.name, false);
    this.spaces.delete(path);
  }

  private ns(netns: NetnsPath): FakeNs {
    const ns = this.spaces.get(netns ?? HOST);
    if (!ns)
      throw new IpError(
        `nsenter: cannot open ${netns ?? ''}: No such file or directory`,
        'No such file or directory',
      );
    return ns;
  }

  private dropLink(nsKey: string, name: string, withPeer: boolean): void {
    const ns = this.spaces.get(nsKey);
    const l = ns?.links.get(name);
    if (!ns || !l) return;
    ns.links.delete(name);
    ns.routes = ns.routes.filter((r) => r.dev !== name);
    for (const other of ns.links.values()) if (other.master === name) other.master = undefined;
    if (withPeer && l.peer) this.dropLink(l.peer.ns, l.peer.name, false);
  }

  private newLink(name: string, kind: string | undefined, mtu: number, mac?: string): FakeLink {
    const m =
      mac ??
      `02:00:00:00:${((this.macSeq >> 8) & 255).toString(16).padStart(2, '0')}:${(this.macSeq & 255).toString(16).padStart(2, '0')}`;
    this.macSeq++;
    return {
      name,
      ifindex: this.nextIndex++,
      mac: m,
      mtu,
      up: false,
      kind,
      master: undefined,
      hairpin: false,
      addrs: [],
      peer: undefined,
      neigh: new Map(),
      fdb: new Map(),
    };
  }

  async batchPair(hostOps: readonly IpOp[], podNetns: string, podOps: readonly IpOp[]) {
    await this.batch(undefined, hostOps);
    await this.batch(podNetns, podOps);
  }

  batch(netns: NetnsPath, ops: readonly IpOp[]): Promise<void> {
    return settle(() => {
      const ns = this.ns(netns);
      ops.forEach((op, i) => {
        const line = renderIpOp(op);
        try {
          this.history.push(`${netns ?? 'host'}: ${line}`);
          this.apply(netns ?? HOST, ns, op);
        } catch (e) {
          const msg = e instanceof Error ? e.message : String(e);
          throw new IpError(
            `ip in ${netns ?? 'host namespace'}: "${line}": ${msg}`,
            `${msg}\nCommand failed -:${i + 1}`,
          );
        }
      });
    });
  }

  deleteLink(netns: NetnsPath, name: string): Promise<boolean> {
    return settle(() => {
      if (!this.ns(netns).links.has(name)) return false;
      this.dropLink(netns ?? HOST, name, true);
      return true;
    });
  }

  ensureBridge(netns: NetnsPath, name: string, mtu?: number): Promise<void> {
    return settle(() => {
      const ns = this.ns(netns);
      if (!ns.links.has(name)) ns.links.set(name, this.newLink(name, 'bridge', mtu ?? 1500));
    });
  }

  links(netns: NetnsPath): Promise<IpLink[]> {
    return settle(() =>
      [...this.ns(netns).links.values()].map((l) => ({
        name: l.name,
        ifindex: l.ifindex,
        mac: l.mac,
        mtu: l.mtu,
        up: l.up,
        kind: l.kind,
        master: l.master,
        addrs: [...l.addrs],
        ...(l.vxlan ? { vxlan: l.vxlan } : {}),
      })),
    );
  }

  neighbours(netns: NetnsPath, dev: string): Promise<IpNeighbour[]> {
    return settle(() =>
      [...this.link(this.ns(netns), dev).neigh].map(([dst, lladdr]) => ({
        dst,
        lladdr,
        permanent: true,
      })),
    );
  }

  fdb(netns: NetnsPath, dev: string): Promise<FdbEntry[]> {
    return settle(() =>
      [...this.link(this.ns(netns), dev).fdb].map(([mac, dst]) => ({ mac, dst })),
    );
  }

  fdbBatch(netns: NetnsPath, ops: readonly FdbOp[]): Promise<void> {
    return settle(() => {
      const ns = this.ns(netns);
      for (const op of ops) {
        this.history.push(`${netns ?? 'host'}: bridge ${op.op} ${op.mac} ${op.dst} ${op.dev}`);
        const l = this.link(ns, op.dev);
        if (l.kind !== 'vxlan')
          throw new IpError(
            `bridge in ${netns ?? 'host namespace'}: ${op.dev}: not a vxlan device`,
            'Operation not supported',
          );
        if (op.op === 'fdbReplace') l.fdb.set(op.mac, op.dst);
        else if (l.fdb.get(op.mac) === op.dst) l.fdb.delete(op.mac);
        else
          throw new IpError(
            `bridge in ${netns ?? 'host namespace'}: RTNETLINK answers: No such file or directory`,
            'No such file or directory',
          );
      }
    });
  }

  routes(netns: NetnsPath, family: IPFamily): Promise<IpRoute[]> {
    return settle(() =>
      this.ns(netns)
        .routes.filter((r) => parseCIDR(r.dst)?.family === family)
        .map(({ dst, gateway, dev, scope }) => ({ dst, gateway, dev, scope })),
    );
  }

  netnsExists(path: string): Promise<boolean> {
    return Promise.resolve(this.spaces.has(path));
  }

  addNetns(name: string): Promise<void> {
    return settle(() => {
      const path = netnsPath(name);
      if (this.spaces.has(path))
        throw new IpError(
          `ip netns add ${name}: Cannot create namespace file "${path}": File exists`,
          'File exists',
        );
      this.addNetnsAt(path);
    });
  }

  deleteNetns(name: string): Promise<boolean> {
    const path = netnsPath(name);
    const had = this.spaces.has(path);
    this.removeNetns(path);
    return Promise.resolve(had);
  }

  /** True when `dev` in namespace `netns` has hairpin mode on. */
  hairpin(netns: NetnsPath, dev: string): boolean {
    return this.spaces.get(netns ?? HOST)?.links.get(dev)?.hairpin ?? false;
  }

  /** True when bridge port `dev` in namespace `netns` is isolated. */
  isolated(netns: NetnsPath, dev: string): boolean {
    return this.spaces.get(netns ?? HOST)?.links.get(dev)?.isolated ?? false;
  }

  /** True when `dev` in namespace `netns` is in promiscuous mode. */
  promisc(netns: NetnsPath, dev: string): boolean {
    return this.spaces.get(netns ?? HOST)?.links.get(dev)?.promisc ?? false;
  }

  /** Canonical dump of one namespace: links (with master, state, addrs) then routes. */
  dump(netns: NetnsPath): string {
    const ns = this.spaces.get(netns ?? HOST);
    if (!ns) return '';
    const links = [...ns.links.values()]
      .sort((a, b) => a.name.localeCompare(b.name))
      .map(
        (l) =>
          `link ${l.name}${l.kind ? ` ${l.kind}` : ''}${l.up ? ' up' : ''}${l.master ? ` master ${l.master}` : ''}${l.addrs.map((a) => ` ${a.local}/${a.prefixlen}`).join('')}`,
      );
    const neigh = [...ns.links.values()].flatMap((l) => [
      ...[...l.neigh].map(([dst, mac]) => `neigh ${dst} lladdr ${mac} dev ${l.name}`),
      ...[...l.fdb].map(([mac, dst]) => `fdb ${mac} dst ${dst} dev ${l.name}`),
    ]);
    const routes = ns.routes
      .map(
        (r) =>
          `route ${r.dst}${r.gateway ? ` via ${r.gateway}` : ''} dev ${r.dev}${r.scope === 'global' ? '' : ` scope ${r.scope}`}`,
      )
      .sort();
    return [...links, ...routes, ...neigh.sort()].join('\n');
  }

  private link(ns: FakeNs, name: string | undefined): FakeLink {
    const l = name === undefined ? undefined : ns.links.get(name);
    if (!l) throw new Error(`Cannot find device "${name ?? ''}"`);
    return l;
  }

  private apply(nsKey: string, ns: FakeNs, op: IpOp): void {
    switch (op.op) {
      case 'linkAdd':
        this.linkAdd(nsKey, ns, op);
        return;
      case 'linkSet':
        this.linkSet(ns, op);
        return;
      case 'linkDel':
        this.link(ns, op.dev);
        this.dropLink(nsKey, op.dev, true);
        return;
      case 'addrAdd':
      case 'addrReplace':
      case 'addrDel':
        this.addr(ns, op);
        return;
      case 'routeAdd':
      case 'routeReplace':
      case 'routeDel':
        this.route(ns, op);
        return;
      case 'neighReplace':
      case 'neighDel':
        this.neigh(ns, op);
        return;
    }
  }

  private neigh(ns: FakeNs, op: NeighOp): void {
    const l = this.link(ns, op.dev);
    const ip = parseIP(op.dst);
    if (!ip) throw new Error(`Error: any valid address is expected rather than "${op.dst}".`);
    const dst = formatIP(ip);
    if (op.op === 'neighReplace') l.neigh.set(dst, op.lladdr);
    else if (!l.neigh.delete(dst)) throw new Error('RTNETLINK answers: No such file or directory');
  }

  private linkAdd(nsKey: string, ns: FakeNs, op: LinkAddOp): void {
    const { name } = op;
    if (ns.links.has(name)) throw new Error('RTNETLINK answers: File exists');
    if (op.kind !== 'veth') {
      const l = this.newLink(name, op.kind, op.mtu ?? 1500, op.address);
      if (op.kind === 'vxlan') {
        const { id, dstport, local, learning } = op.vxlan;
        l.vxlan = { id, port: dstport, local, learning };
      }
      ns.links.set(name, l);
      return;
    }
    // As iproute2: a value without a slash names a namespace in /run/netns.
    const peerNs0 = op.peer.netns;
    const peerNsKey =
      peerNs0 === undefined ? nsKey : peerNs0.includes('/') ? peerNs0 : netnsPath(peerNs0);
    const peerNs = this.spaces.get(peerNsKey);
    if (!peerNs) throw new Error(`Invalid "netns" value "${peerNs0 ?? nsKey}"`);
    if (peerNs.links.has(op.peer.name) || (peerNsKey === nsKey && op.peer.name === name))
      throw new Error('RTNETLINK answers: File exists');
    const a = this.newLink(name, 'veth', op.mtu ?? 1500, op.address);
    const b = this.newLink(op.peer.name, 'veth', op.peer.mtu ?? op.mtu ?? 1500, op.peer.address);
    a.peer = { ns: peerNsKey, name: op.peer.name };
    b.peer = { ns: nsKey, name };
    ns.links.set(name, a);
    peerNs.links.set(op.peer.name, b);
  }

  private linkSet(ns: FakeNs, op: LinkSetOp): void {
    const l = this.link(ns, op.dev);
    if (op.mtu !== undefined) l.mtu = op.mtu;
    if (op.master === null) l.master = undefined;
    else if (op.master !== undefined) {
      const m = this.link(ns, op.master);
      if (m.kind !== 'bridge') throw new Error('RTNETLINK answers: Operation not supported');
      l.master = m.name;
    }
    if (op.up !== undefined) l.up = op.up;
    if (op.promisc !== undefined) l.promisc = op.promisc;
    if (op.hairpin !== undefined) {
      if (!l.master) throw new Error('RTNETLINK answers: Operation not supported');
      l.hairpin = op.hairpin;
    }
    if (op.isolated !== undefined) {
      if (!l.master) throw new Error('RTNETLINK answers: Operation not supported');
      l.isolated = op.isolated;
    }
  }

  private addr(ns: FakeNs, op: AddrOp): void {
    const cidrText = op.cidr;
    const slash = cidrText.indexOf('/');
    const ip = parseIP(slash < 0 ? cidrText : cidrText.slice(0, slash));
    if (!ip) throw new Error(`Error: any valid prefix is expected rather than "${cidrText}".`);
    const bits = ip.family === 'IPv4' ? 32 : 128;
    const prefixlen = slash < 0 ? bits : Number(cidrText.slice(slash + 1));
    const l = this.link(ns, op.dev);
    const local = formatIP(ip);
    const existing = l.addrs.findIndex((a) => a.local === local);
    if (op.op === 'addrDel') {
      if (existing < 0) throw new Error('RTNETLINK answers: Cannot assign requested address');
      l.addrs.splice(existing, 1);
      ns.routes = ns.routes.filter((r) => !(r.proto === 'kernel' && r.dev === l.name));
      return;
    }
    if (existing >= 0) {
      if (op.op === 'addrAdd') throw new Error('RTNETLINK answers: File exists');
      return;
    }
    l.addrs.push({ family: ip.family, local, prefixlen });
    if (prefixlen < bits && op.noprefixroute !== true) {
      const dst = formatCIDR({
        family: ip.family,
        base: parseCIDR(`${local}/${prefixlen}`)?.base ?? 0n,
        prefix: prefixlen,
      });
      ns.routes.push({ dst, gateway: undefined, dev: l.name, scope: 'link', proto: 'kernel' });
    }
  }

  private route(ns: FakeNs, op: RouteOp): void {
    const dstText = op.dst === 'default' ? undefined : op.dst;
    // A multipath route is modelled by its first nexthop (enough for the planners' tests).
    const first = op.nexthops?.[0];
    const via = op.via ?? first?.via;
    const devName = op.dev ?? first?.dev;
    const family: IPFamily = (dstText ?? via ?? '').includes(':') ? 'IPv6' : 'IPv4';
    const parsed = parseCIDR(
      dstText === undefined ? routeDst('default', family) : routeDst(dstText, family),
    );
    if (!parsed) throw new Error(`Error: any valid prefix is expected rather than "${op.dst}".`);
    const dst = formatCIDR(parsed);
    if (op.op === 'routeDel') {
      const i = ns.routes.findIndex(
        (r) => r.dst === dst && (devName === undefined || r.dev === devName),
      );
      if (i < 0) throw new Error('RTNETLINK answers: No such process');
      ns.routes.splice(i, 1);
      return;
    }
    let dev = devName;
    if (via !== undefined) {
      const gw = parseIP(via);
      if (!gw) throw new Error(`Error: inet prefix is expected rather than "${via}".`);
      if (op.onlink !== true) {
        const reach = ns.routes.find(
          (r) =>
            r.gateway === undefined &&
            (dev === undefined || r.dev === dev) &&
            cidrContains(parseCIDR(r.dst) ?? { family: 'IPv4', base: 1n, prefix: 32 }, gw),
        );
        if (!reach) throw new Error('Error: Nexthop has invalid gateway.');
        dev = reach.dev;
      }
    }
    const l = this.link(ns, dev);
    if (!l.up) throw new Error('Error: Nexthop device is not up.');
    const scope: IpRoute['scope'] = op.scope ?? (via === undefined ? 'link' : 'global');
    const i = ns.routes.findIndex((r) => r.dst === dst);
    if (i >= 0) {
      if (op.op === 'routeAdd') throw new Error('RTNETLINK answers: File exists');
      ns.routes.splice(i, 1);
    }
    ns.routes.push({
      dst,
      gateway: via === undefined ? undefined : formatIP(parseIP(via) ?? { family, value: 0n }),
      dev: l.name,
      scope,
      proto: 'static',
    });
  }
}
