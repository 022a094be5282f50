// The kernel seam of the IPVS proxier: one family's IPVS table (ipvsadm -L -n / -R), the
// connection counters of chosen virtual servers (ipvsadm -L -n [-t|-u|--sctp-service VS]),
// its ipsets (ipset save / restore) and its iptables rules (iptables-restore --noflush). The dummy
// device kube-ipvs0 goes through the project's `Ip` seam, beside this. RealIpvsKernel execs
// the binaries; FakeIpvsKernel drives FakeIpvs, FakeIpset and FakeIptables for unit tests
// and records every call (`calls`), so tests can tell what a sync touched.
// `probeIpvs` tells whether the kernel has ip_vs at all (checked once at start).

import { access } from 'node:fs/promises';
import type { IptablesBackend } from '../../netfilter/iptables/backend.js';
import type { FakeIptables } from '../../netfilter/iptables/fake.js';
import type { FakeIpset } from '../../netfilter/ipset/fake.js';
import type { IpsetSet } from '../../netfilter/ipset/model.js';
import { parseSave as parseIpsetSave } from '../../netfilter/ipset/parse.js';
import { renderRestore as renderIpsetRestore } from '../../netfilter/ipset/render.js';
import type { IpsetOperation } from '../../netfilter/ipset/render.js';
import type { FakeIpvs } from '../../netfilter/ipvs/fake.js';
import { isIPv6Address, joinHostPort, virtualServerKey } from '../../netfilter/ipvs/model.js';
import type { IpvsOperation, IpvsService, VirtualServerId } from '../../netfilter/ipvs/model.js';
import { parseList } from '../../netfilter/ipvs/parse.js';
import { renderRestore as renderIpvsRestore } from '../../netfilter/ipvs/render.js';
import type { Execer } from '../../os/exec.js';
import { runChecked } from '../../os/exec.js';
import type { IPFamily } from '../../util/ip.js';

/** One family's IPVS, ipset and iptables operations (real or Fake). */
export interface IpvsKernel {
  readonly family: IPFamily;
  /**
   * The virtual servers of this family as `ipvsadm -L -n` lists them, each real server with
   * its connection counters for graceful termination.
   */
  readIpvs(): Promise<IpvsService[]>;
  /**
   * These virtual servers as `ipvsadm -L -n` lists them (real servers with their connection
   * counters): what graceful termination needs on a partial sync. One that is missing fails.
   */
  readConnections(ids: readonly VirtualServerId[]): Promise<IpvsService[]>;
  /** Applies the commands in one `ipvsadm -R`. */
  applyIpvs(ops: readonly IpvsOperation[]): Promise<void>;
  /** The entries of every ipset by set name (`ipset save`): a full sync's ipset base. */
  readIpsets(): Promise<Map<string, ReadonlySet<string>>>;
  /** Applies the commands in one `ipset restore`. */
  applyIpsets(ops: readonly IpsetOperation[]): Promise<void>;
  /** iptables-restore --noflush of the text. */
  applyIptables(text: string): Promise<void>;
}

/**
 * Up to this many virtual servers are listed one `ipvsadm -L -n -t VS` each; more, and the
 * whole table is listed once (one exec of ipvsadm costs more than listing a few hundred lines).
 */
export const PER_SERVICE_LIST_LIMIT = 8;

/** ipvsadm's option naming one virtual server: `-t 10.0.0.1:80`, `-u [fd00::1]:53`. */
export function serviceArgs(id: VirtualServerId): string[] {
  const flag = id.protocol === 'tcp' ? '-t' : id.protocol === 'udp' ? '-u' : '--sctp-service';
  return [flag, joinHostPort(id.address, id.port)];
}

function pick(list: readonly IpvsService[], ids: readonly VirtualServerId[]): IpvsService[] {
  const byKey = new Map(list.map((s) => [virtualServerKey(s.virtualServer), s]));
  return ids.map((id) => {
    const s = byKey.get(virtualServerKey(id));
    if (s === undefined) throw new Error(`no IPVS virtual server ${virtualServerKey(id)}`);
    return s;
  });
}

function contentsOf(sets: Iterable<IpsetSet>): Map<string, ReadonlySet<string>> {
  const out = new Map<string, ReadonlySet<string>>();
  for (const s of sets) out.set(s.name, new Set(s.entries.map((e) => e.value)));
  return out;
}

function ofFamily(family: IPFamily, list: readonly IpvsService[]): IpvsService[] {
  return list.filter((s) => isIPv6Address(s.virtualServer.address) === (family === 'IPv6'));
}

/** Execs ipvsadm and ipset; iptables through the iptables backend. */
export class RealIpvsKernel implements IpvsKernel {
  readonly family: IPFamily;
  private readonly execer: Execer;
  private readonly iptables: IptablesBackend;

  constructor(execer: Execer, family: IPFamily, iptables: IptablesBackend) {
    this.execer = execer;
    this.family = family;
    this.iptables = iptables;
  }

  async readIpvs(): Promise<IpvsService[]> {
    // One listing has it all (scheduler, flags, persistence, mask and the counters): reading
    // `-S -n` as well would double a full sync's read-back (two dumps of the whole table).
    const list = await runChecked(this.execer, { cmd: 'ipvsadm', args: ['-L', '-n'] });
    return ofFamily(this.family, parseList(list.stdout).services);
  }

  async readConnections(ids: readonly VirtualServerId[]): Promise<IpvsService[]> {
    if (ids.length === 0) return [];
    if (ids.length > PER_SERVICE_LIST_LIMIT) {
      const all = await runChecked(this.execer, { cmd: 'ipvsadm', args: ['-L', '-n'] });
      return pick(parseList(all.stdout).services, ids);
    }
    const out: IpvsService[] = [];
    for (const id of ids) {
      const one = await runChecked(this.execer, {
        cmd: 'ipvsadm',
        args: ['-L', '-n', ...serviceArgs(id)],
      });
      out.push(...pick(parseList(one.stdout).services, [id]));
    }
    return out;
  }

  async applyIpvs(ops: readonly IpvsOperation[]): Promise<void> {
    if (ops.length === 0) return;
    await runChecked(this.execer, { cmd: 'ipvsadm', args: ['-R'], stdin: renderIpvsRestore(ops) });
  }

  async readIpsets(): Promise<Map<string, ReadonlySet<string>>> {
    const save = await runChecked(this.execer, { cmd: 'ipset', args: ['save'] });
    return contentsOf(parseIpsetSave(save.stdout).values());
  }

  async applyIpsets(ops: readonly IpsetOperation[]): Promise<void> {
    if (ops.length === 0) return;
    await runChecked(this.execer, {
      cmd: 'ipset',
      args: ['restore'],
      stdin: renderIpsetRestore(ops),
    });
  }

  async applyIptables(text: string): Promise<void> {
    await this.iptables.restore(text, { noflush: true, counters: false });
  }
}

/** One call a FakeIpvsKernel received. */
export type FakeIpvsCall =
  | { readonly call: 'readIpvs' }
  | { readonly call: 'readIpsets' }
  | { readonly call: 'readConnections'; readonly ids: readonly VirtualServerId[] }
  | { readonly call: 'applyIpvs'; readonly ops: readonly IpvsOperation[] }
  | { readonly call: 'applyIpsets'; readonly ops: readonly IpsetOperation[] }
  | { readonly call: 'applyIptables'; readonly text: string };

/** The Fakes behind one family (FakeIpvs and FakeIpset may be shared by both families). */
export class FakeIpvsKernel implements IpvsKernel {
  readonly family: IPFamily;
  readonly ipvs: FakeIpvs;
  readonly ipset: FakeIpset;
  readonly iptables: FakeIptables;
  /** Every call, in order: what a sync read and wrote. */
  readonly calls: FakeIpvsCall[] = [];

  constructor(family: IPFamily, ipvs: FakeIpvs, ipset: FakeIpset, iptables: FakeIptables) {
    this.family = family;
    this.ipvs = ipvs;
    this.ipset = ipset;
    this.iptables = iptables;
  }

  readIpvs(): Promise<IpvsService[]> {
    this.calls.push({ call: 'readIpvs' });
    return Promise.resolve(ofFamily(this.family, [...this.ipvs.state().values()]));
  }

  readConnections(ids: readonly VirtualServerId[]): Promise<IpvsService[]> {
    this.calls.push({ call: 'readConnections', ids });
    return Promise.resolve(pick([...this.ipvs.state().values()], ids));
  }

  applyIpvs(ops: readonly IpvsOperation[]): Promise<void> {
    this.calls.push({ call: 'applyIpvs', ops });
    if (ops.length > 0) this.ipvs.run(ops);
    return Promise.resolve();
  }

  readIpsets(): Promise<Map<string, ReadonlySet<string>>> {
    this.calls.push({ call: 'readIpsets' });
    return Promise.resolve(contentsOf(this.ipset.state().values()));
  }

  applyIpsets(ops: readonly IpsetOperation[]): Promise<void> {
    this.calls.push({ call: 'applyIpsets', ops });
    if (ops.length > 0) this.ipset.run(ops);
    return Promise.resolve();
  }

  applyIptables(text: string): Promise<void> {
    this.calls.push({ call: 'applyIptables', text });
    return this.iptables.restore(text, { noflush: true });
  }
}

/** Whether the kernel has ip_vs: `{ ok: false, reason }` when it has not. */
export type IpvsProbe = () => Promise<{ readonly ok: boolean; readonly reason?: string }>;

/** Looks for /proc/net/ip_vs (module loaded) or /sys/module/ip_vs (built in or loaded). */
export const probeIpvs: IpvsProbe = async () => {
  for (const p of ['/proc/net/ip_vs', '/sys/module/ip_vs']) {
    try {
      await access(p);
      return { ok: true };
    } catch {
      // Try the next.
    }
  }
  return {
    ok: false,
    reason: 'neither /proc/net/ip_vs nor /sys/module/ip_vs exists (try: modprobe ip_vs)',
  };
};
