// The kernel seam of the IPVS proxier: one family's IPVS table (ipvsadm -S -n / -R), its
// ipsets (ipset restore) and its iptables rules (iptables-restore --noflush). The dummy
// device kube-ipvs0 goes through the project's `Ip` seam, beside this. RealIpvsKernel execs
// the binaries; FakeIpvsKernel drives FakeIpvs, FakeIpset and FakeIptables for unit tests.
// `probeIpvs` tells whether the kernel has ip_vs at all (checked once at start).

import { access } from 'node:fs/promises';
import type { IptablesBackend } from '../../netfilter/iptables/backend.js';
import type { FakeIptables } from '../../netfilter/iptables/fake.js';
import type { FakeIpset } from '../../netfilter/ipset/fake.js';
import { renderRestore as renderIpsetRestore } from '../../netfilter/ipset/render.js';
import type { IpsetOperation } from '../../netfilter/ipset/render.js';
import type { FakeIpvs } from '../../netfilter/ipvs/fake.js';
import { isIPv6Address, realServerKey, virtualServerKey } from '../../netfilter/ipvs/model.js';
import type { IpvsOperation, IpvsService } from '../../netfilter/ipvs/model.js';
import { parseList, parseSave } from '../../netfilter/ipvs/parse.js';
import { renderRestore as renderIpvsRestore } from '../../netfilter/ipvs/render.js';
import type { Execer } from '../../os/exec.js';
import { runChecked } from '../../os/exec.js';
import type { IPFamily } from '../../util/ip.js';

/** One family's IPVS, ipset and iptables operations (real or Fake). */
export interface IpvsKernel {
  readonly family: IPFamily;
  /**
   * The virtual servers of this family, as `ipvsadm -S -n` lists them, each real server with
   * its connection counters (`ipvsadm -L -n`) for graceful termination.
   */
  readIpvs(): Promise<IpvsService[]>;
  /** Applies the commands in one `ipvsadm -R`. */
  applyIpvs(ops: readonly IpvsOperation[]): Promise<void>;
  /** Applies the commands in one `ipset restore`. */
  applyIpsets(ops: readonly IpsetOperation[]): Promise<void>;
  /** iptables-restore --noflush of the text. */
  applyIptables(text: string): Promise<void>;
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
    const save = await runChecked(this.execer, { cmd: 'ipvsadm', args: ['-S', '-n'] });
    const list = await runChecked(this.execer, { cmd: 'ipvsadm', args: ['-L', '-n'] });
    const conns = new Map<string, { activeConn?: number; inactConn?: number }>();
    for (const s of parseList(list.stdout).services)
      for (const rs of s.realServers)
        conns.set(`${virtualServerKey(s.virtualServer)} ${realServerKey(rs)}`, rs);
    return ofFamily(this.family, parseSave(save.stdout)).map((s) => ({
      virtualServer: s.virtualServer,
      realServers: s.realServers.map((rs) => {
        const c = conns.get(`${virtualServerKey(s.virtualServer)} ${realServerKey(rs)}`);
        return {
          ...rs,
          ...(c?.activeConn !== undefined ? { activeConn: c.activeConn } : {}),
          ...(c?.inactConn !== undefined ? { inactConn: c.inactConn } : {}),
        };
      }),
    }));
  }

  async applyIpvs(ops: readonly IpvsOperation[]): Promise<void> {
    if (ops.length === 0) return;
    await runChecked(this.execer, { cmd: 'ipvsadm', args: ['-R'], stdin: renderIpvsRestore(ops) });
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

/** The Fakes behind one family (FakeIpvs and FakeIpset may be shared by both families). */
export class FakeIpvsKernel implements IpvsKernel {
  readonly family: IPFamily;
  readonly ipvs: FakeIpvs;
  readonly ipset: FakeIpset;
  readonly iptables: FakeIptables;

  constructor(family: IPFamily, ipvs: FakeIpvs, ipset: FakeIpset, iptables: FakeIptables) {
    this.family = family;
    this.ipvs = ipvs;
    this.ipset = ipset;
    this.iptables = iptables;
  }

  readIpvs(): Promise<IpvsService[]> {
    return Promise.resolve(ofFamily(this.family, [...this.ipvs.state().values()]));
  }

  applyIpvs(ops: readonly IpvsOperation[]): Promise<void> {
    this.ipvs.run(ops);
    return Promise.resolve();
  }

  applyIpsets(ops: readonly IpsetOperation[]): Promise<void> {
    this.ipset.run(ops);
    return Promise.resolve();
  }

  applyIptables(text: string): Promise<void> {
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
