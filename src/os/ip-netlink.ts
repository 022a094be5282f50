// An `Ip` whose batches are rtnetlink requests made from this process (netlink.ts), for the
// lab's node agent, which runs the CNI plugin in-process: a Pod's ADD was one `ip -batch`
// process that forked a second for the Pod's side, and starting processes from the agent was
// most of its CPU in a 300-Pod lab. Link deletion (a Pod's DEL) goes the same way. A batch
// for another namespace runs inside a setns window
// (netns-enter.ts), with a netlink socket made there. Batches with an op netlink.ts does not
// encode, and every other method (reading links, routes, neighbours; FDB; namespaces), go to
// the RealIp it wraps, so results and errors are those of `ip`. Not for the `svcnet-cni`
// binary: it is one file without node_modules, so it keeps running `ip`.

import type { IPFamily } from '../util/ip.js';
import { linkDel, renderIpOp, type FdbOp, type IpOp } from '../util/ip-ops.js';
import {
  IpError,
  type FdbEntry,
  type Ip,
  type IpLink,
  type IpNeighbour,
  type IpRoute,
  type NetnsPath,
} from './ip.js';
import { libc, type Libc } from './libc.js';
import { encodeOp, NetlinkOpError, netlinkSupports, NetnsFds, RtnetlinkSocket } from './netlink.js';
import { RealNetnsEnterer } from './netns-enter.js';

export class NetlinkIp implements Ip {
  private readonly fallback: Ip;
  private readonly enter: RealNetnsEnterer;
  private readonly libc: Libc;

  /** Throws when libc cannot be bound (koffi missing): use `fallback` alone then. */
  constructor(fallback: Ip, enter: RealNetnsEnterer = new RealNetnsEnterer()) {
    this.fallback = fallback;
    this.enter = enter;
    this.libc = libc();
  }

  /** Runs the ops in the namespace the thread is in now; stops at the first failure. */
  private runHere(where: string, ops: readonly IpOp[]): void {
    const sock = new RtnetlinkSocket(this.libc);
    const fds = new NetnsFds();
    const ctx = { index: (dev: string) => sock.index(dev), netnsFd: (ns: string) => fds.get(ns) };
    try {
      for (const op of ops) {
        try {
          sock.request(encodeOp(op, ctx));
        } catch (e) {
          if (!(e instanceof NetlinkOpError)) throw e;
          throw new IpError(`ip in ${where}: "${renderIpOp(op)}": ${e.message}`, e.message);
        }
      }
    } finally {
      sock.close();
      fds.close();
    }
  }

  private runSync(netns: NetnsPath, ops: readonly IpOp[]): void {
    if (netns === undefined) this.runHere('host namespace', ops);
    else
      this.enter.run(netns, () => {
        this.runHere(netns, ops);
      });
  }

  async batch(netns: NetnsPath, ops: readonly IpOp[]): Promise<void> {
    if (ops.length === 0) return;
    if (!ops.every(netlinkSupports)) {
      await this.fallback.batch(netns, ops);
      return;
    }
    this.runSync(netns, ops);
  }

  async batchPair(
    hostOps: readonly IpOp[],
    podNetns: string,
    podOps: readonly IpOp[],
  ): Promise<void> {
    if (![...hostOps, ...podOps].every(netlinkSupports)) {
      await this.fallback.batchPair(hostOps, podNetns, podOps);
      return;
    }
    if (hostOps.length > 0) this.runSync(undefined, hostOps);
    if (podOps.length > 0) this.runSync(podNetns, podOps);
  }

  deleteLink(netns: NetnsPath, name: string): Promise<boolean> {
    return new Promise((resolve) => {
      try {
        this.runSync(netns, [linkDel(name)]);
        resolve(true);
      } catch (e) {
        if (!(e instanceof IpError && /Cannot find device|No such device/.test(e.message))) throw e;
        resolve(false);
      }
    });
  }
  ensureBridge(netns: NetnsPath, name: string, mtu?: number): Promise<void> {
    return this.fallback.ensureBridge(netns, name, mtu);
  }
  links(netns: NetnsPath): Promise<IpLink[]> {
    return this.fallback.links(netns);
  }
  routes(netns: NetnsPath, family: IPFamily): Promise<IpRoute[]> {
    return this.fallback.routes(netns, family);
  }
  neighbours(netns: NetnsPath, dev: string): Promise<IpNeighbour[]> {
    return this.fallback.neighbours(netns, dev);
  }
  fdb(netns: NetnsPath, dev: string): Promise<FdbEntry[]> {
    return this.fallback.fdb(netns, dev);
  }
  fdbBatch(netns: NetnsPath, ops: readonly FdbOp[]): Promise<void> {
    return this.fallback.fdbBatch(netns, ops);
  }
  netnsExists(path: string): Promise<boolean> {
    return this.fallback.netnsExists(path);
  }
  addNetns(name: string): Promise<void> {
    return this.fallback.addNetns(name);
  }
  deleteNetns(name: string): Promise<boolean> {
    return this.fallback.deleteNetns(name);
  }
}
