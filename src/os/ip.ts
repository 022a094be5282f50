// The `Ip` boundary: configuring links, addresses and routes in a network namespace with
// iproute2 (`ip -batch -`, entered with `nsenter --net=PATH` for a namespace given by path)
// and reading them back as JSON (`ip -j`). RealIp runs `ip` through an Execer; FakeIp is an
// in-memory model of namespaces that interprets the same batch lines, raises the same
// errors as the kernel for the cases svcnet relies on, and dumps canonical text. Not a
// general iproute2 emulator: unknown commands are rejected loudly.

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
import { runChecked, type Execer } from './exec.js';

/** A namespace: undefined = the one the process runs in ("host"); else a netns path. */
export type NetnsPath = string | undefined;

/** One `ip -batch` line as tokens (names never contain whitespace). */
export type IpCommand = readonly string[];

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
}

export interface IpRoute {
  /** Always CIDR form (`0.0.0.0/0` for default, `/32` or `/128` for hosts). */
  readonly dst: string;
  readonly gateway: string | undefined;
  readonly dev: string;
  readonly scope: 'global' | 'link' | 'host';
}

export interface Ip {
  /** Runs the lines in one `ip -batch -`; stops at the first failing line and throws IpError. */
  batch(netns: NetnsPath, lines: readonly IpCommand[]): Promise<void>;
  /** Deletes a link; false when it did not exist. */
  deleteLink(netns: NetnsPath, name: string): Promise<boolean>;
  /** Creates a bridge unless present (safe under concurrent callers). */
  ensureBridge(netns: NetnsPath, name: string, mtu?: number): Promise<void>;
  links(netns: NetnsPath): Promise<IpLink[]>;
  routes(netns: NetnsPath, family: IPFamily): Promise<IpRoute[]>;
  netnsExists(path: string): Promise<boolean>;
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

  private argv(netns: NetnsPath, args: readonly string[]): { cmd: string; args: string[] } {
    return netns === undefined
      ? { cmd: 'ip', args: [...args] }
      : { cmd: 'nsenter', args: [`--net=${netns}`, 'ip', ...args] };
  }

  async batch(netns: NetnsPath, lines: readonly IpCommand[]): Promise<void> {
    if (lines.length === 0) return;
    const res = await this.execer.run({
      ...this.argv(netns, ['-batch', '-']),
      stdin: lines.map((l) => l.join(' ')).join('\n') + '\n',
    });
    if (res.code !== 0) {
      const where = netns ?? 'host namespace';
      const err = (res.stderr || res.stdout).trim();
      const failed = /Command failed -:(\d+)/.exec(err);
      const line = failed ? lines[Number(failed[1]) - 1] : undefined;
      throw new IpError(
        `ip in ${where}: ${line ? `"${line.join(' ')}": ` : ''}${err.replace(/\s*Command failed -:\d+\s*/, ' ').trim()}`,
        err,
      );
    }
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
    const args = ['link', 'add', name, ...(mtu ? ['mtu', String(mtu)] : []), 'type', 'bridge'];
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

  async netnsExists(path: string): Promise<boolean> {
    try {
      await access(path);
      return true;
    } catch {
      return false;
    }
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
    return {
      name: String(l.ifname),
      ifindex: Number(l.ifindex),
      mac: typeof l.address === 'string' ? l.address : '',
      mtu: Number(l.mtu),
      up: ((l.flags ?? []) as string[]).includes('UP'),
      kind: typeof info?.info_kind === 'string' ? info.info_kind : undefined,
      master: typeof l.master === 'string' ? l.master : undefined,
      addrs,
    };
  });
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
  addrs: IpAddress[];
  /** veth peer: namespace key and name. */
  peer: { ns: string; name: string } | undefined;
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

/** In-memory namespaces driven by the same batch lines as RealIp. */
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
          },
        ],
      ]),
      routes: [],
    };
  }

  /** Creates a pod/node namespace reachable at `path`. */
  addNetns(path: string): void {
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
    };
  }

  batch(netns: NetnsPath, lines: readonly IpCommand[]): Promise<void> {
    try {
      const ns = this.ns(netns);
      lines.forEach((line, i) => {
        try {
          this.history.push(`${netns ?? 'host'}: ${line.join(' ')}`);
          this.apply(netns ?? HOST, ns, line);
        } catch (e) {
          const msg = e instanceof Error ? e.message : String(e);
          throw new IpError(
            `ip in ${netns ?? 'host namespace'}: "${line.join(' ')}": ${msg}`,
            `${msg}\nCommand failed -:${i + 1}`,
          );
        }
      });
      return Promise.resolve();
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  }

  deleteLink(netns: NetnsPath, name: string): Promise<boolean> {
    try {
      const ns = this.ns(netns);
      if (!ns.links.has(name)) return Promise.resolve(false);
      this.dropLink(netns ?? HOST, name, true);
      return Promise.resolve(true);
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  }

  ensureBridge(netns: NetnsPath, name: string, mtu?: number): Promise<void> {
    try {
      const ns = this.ns(netns);
      if (!ns.links.has(name)) ns.links.set(name, this.newLink(name, 'bridge', mtu ?? 1500));
      return Promise.resolve();
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  }

  links(netns: NetnsPath): Promise<IpLink[]> {
    try {
      return Promise.resolve(
        [...this.ns(netns).links.values()].map((l) => ({ ...l, addrs: [...l.addrs] })),
      );
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  }

  routes(netns: NetnsPath, family: IPFamily): Promise<IpRoute[]> {
    try {
      return Promise.resolve(
        this.ns(netns)
          .routes.filter((r) => parseCIDR(r.dst)?.family === family)
          .map(({ dst, gateway, dev, scope }) => ({ dst, gateway, dev, scope })),
      );
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  }

  netnsExists(path: string): Promise<boolean> {
    return Promise.resolve(this.spaces.has(path));
  }

  /** True when `dev` in namespace `netns` has hairpin mode on. */
  hairpin(netns: NetnsPath, dev: string): boolean {
    return this.spaces.get(netns ?? HOST)?.links.get(dev)?.hairpin ?? false;
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
    const routes = ns.routes
      .map(
        (r) =>
          `route ${r.dst}${r.gateway ? ` via ${r.gateway}` : ''} dev ${r.dev}${r.scope === 'global' ? '' : ` scope ${r.scope}`}`,
      )
      .sort();
    return [...links, ...routes].join('\n');
  }

  private link(ns: FakeNs, name: string | undefined): FakeLink {
    const l = name === undefined ? undefined : ns.links.get(name);
    if (!l) throw new Error(`Cannot find device "${name ?? ''}"`);
    return l;
  }

  private apply(nsKey: string, ns: FakeNs, line: IpCommand): void {
    const [obj, verb, ...rest] = line;
    if (obj === 'link' && verb === 'add') {
      this.linkAdd(nsKey, ns, rest);
      return;
    }
    if (obj === 'link' && verb === 'set') {
      this.linkSet(ns, rest);
      return;
    }
    if (obj === 'link' && (verb === 'del' || verb === 'delete')) {
      this.link(ns, rest[0]);
      this.dropLink(nsKey, rest[0] ?? '', true);
      return;
    }
    if (obj === 'addr' && (verb === 'add' || verb === 'replace' || verb === 'del')) {
      this.addr(ns, verb, rest);
      return;
    }
    if (obj === 'route' && (verb === 'add' || verb === 'replace' || verb === 'del')) {
      this.route(ns, verb, rest);
      return;
    }
    throw new Error(`FakeIp: unsupported command "${line.join(' ')}"`);
  }

  private linkAdd(nsKey: string, ns: FakeNs, rest: readonly string[]): void {
    const name = rest[0] ?? '';
    const typeAt = rest.indexOf('type');
    const opts = (from: number, to: number): Map<string, string> => {
      const m = new Map<string, string>();
      for (let i = from; i + 1 < to; i += 2) m.set(rest[i] ?? '', rest[i + 1] ?? '');
      return m;
    };
    const own = opts(1, typeAt);
    const kind = rest[typeAt + 1];
    if (ns.links.has(name)) throw new Error('RTNETLINK answers: File exists');
    if (kind === 'bridge') {
      ns.links.set(
        name,
        this.newLink(name, 'bridge', Number(own.get('mtu') ?? 1500), own.get('address')),
      );
      return;
    }
    if (kind !== 'veth' || rest[typeAt + 2] !== 'peer' || rest[typeAt + 3] !== 'name')
      throw new Error(`FakeIp: unsupported link add "${rest.join(' ')}"`);
    const peerName = rest[typeAt + 4] ?? '';
    const peerOpts = opts(typeAt + 5, rest.length + 1);
    const peerNsKey = peerOpts.get('netns') ?? nsKey;
    const peerNs = this.spaces.get(peerNsKey);
    if (!peerNs) throw new Error(`Invalid "netns" value "${peerNsKey}"`);
    if (peerNs.links.has(peerName) || (peerNsKey === nsKey && peerName === name))
      throw new Error('RTNETLINK answers: File exists');
    const a = this.newLink(name, 'veth', Number(own.get('mtu') ?? 1500), own.get('address'));
    const b = this.newLink(
      peerName,
      'veth',
      Number(peerOpts.get('mtu') ?? own.get('mtu') ?? 1500),
      peerOpts.get('address'),
    );
    a.peer = { ns: peerNsKey, name: peerName };
    b.peer = { ns: nsKey, name };
    ns.links.set(name, a);
    peerNs.links.set(peerName, b);
  }

  private linkSet(ns: FakeNs, rest: readonly string[]): void {
    const l = this.link(ns, rest[0]);
    for (let i = 1; i < rest.length; i++) {
      const w = rest[i];
      if (w === 'up') l.up = true;
      else if (w === 'down') l.up = false;
      else if (w === 'master') {
        const m = this.link(ns, rest[++i]);
        if (m.kind !== 'bridge') throw new Error('RTNETLINK answers: Operation not supported');
        l.master = m.name;
      } else if (w === 'nomaster') l.master = undefined;
      else if (w === 'mtu') l.mtu = Number(rest[++i]);
      else if (w === 'type' && rest[i + 1] === 'bridge_slave' && rest[i + 2] === 'hairpin') {
        if (!l.master) throw new Error('RTNETLINK answers: Operation not supported');
        l.hairpin = rest[i + 3] === 'on';
        i += 3;
      } else throw new Error(`FakeIp: unsupported link set "${rest.join(' ')}"`);
    }
  }

  private addr(ns: FakeNs, verb: string, rest: readonly string[]): void {
    const cidrText = rest[0] ?? '';
    const slash = cidrText.indexOf('/');
    const ip = parseIP(slash < 0 ? cidrText : cidrText.slice(0, slash));
    if (!ip) throw new Error(`Error: any valid prefix is expected rather than "${cidrText}".`);
    const bits = ip.family === 'IPv4' ? 32 : 128;
    const prefixlen = slash < 0 ? bits : Number(cidrText.slice(slash + 1));
    const devAt = rest.indexOf('dev');
    const l = this.link(ns, rest[devAt + 1]);
    const local = formatIP(ip);
    const existing = l.addrs.findIndex((a) => a.local === local);
    if (verb === 'del') {
      if (existing < 0) throw new Error('RTNETLINK answers: Cannot assign requested address');
      l.addrs.splice(existing, 1);
      ns.routes = ns.routes.filter((r) => !(r.proto === 'kernel' && r.dev === l.name));
      return;
    }
    if (existing >= 0) {
      if (verb === 'add') throw new Error('RTNETLINK answers: File exists');
      return;
    }
    l.addrs.push({ family: ip.family, local, prefixlen });
    if (prefixlen < bits && !rest.includes('noprefixroute')) {
      const dst = formatCIDR({
        family: ip.family,
        base: parseCIDR(`${local}/${prefixlen}`)?.base ?? 0n,
        prefix: prefixlen,
      });
      ns.routes.push({ dst, gateway: undefined, dev: l.name, scope: 'link', proto: 'kernel' });
    }
  }

  private route(ns: FakeNs, verb: string, rest: readonly string[]): void {
    const dstText = rest[0] === 'default' ? undefined : rest[0];
    const get = (k: string): string | undefined => {
      const i = rest.indexOf(k);
      return i < 0 ? undefined : rest[i + 1];
    };
    const via = get('via');
    const devName = get('dev');
    const family: IPFamily = (dstText ?? via ?? '').includes(':') ? 'IPv6' : 'IPv4';
    const dstCidr =
      dstText === undefined
        ? family === 'IPv4'
          ? '0.0.0.0/0'
          : '::/0'
        : dstText.includes('/')
          ? dstText
          : `${dstText}/${family === 'IPv4' ? 32 : 128}`;
    const parsed = parseCIDR(dstCidr);
    if (!parsed)
      throw new Error(`Error: any valid prefix is expected rather than "${rest[0] ?? ''}".`);
    const dst = formatCIDR(parsed);
    if (verb === 'del') {
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
      if (!rest.includes('onlink')) {
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
    const scopeText = get('scope');
    const scope: IpRoute['scope'] =
      scopeText === 'link' || scopeText === 'host'
        ? scopeText
        : via === undefined
          ? 'link'
          : 'global';
    const i = ns.routes.findIndex((r) => r.dst === dst);
    if (i >= 0) {
      if (verb === 'add') throw new Error('RTNETLINK answers: File exists');
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
