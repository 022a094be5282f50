// Removing ipvs mode's kernel state (for `svcnet proxy --cleanup`, and at the start of the
// other modes): the virtual servers whose address is bound on kube-ipvs0, the kube-ipvs0
// dummy itself, and every KUBE-* ipset. The iptables rules that match those sets are the
// iptables cleanup's (run first, so the sets are no longer in use). Where the kernel has no
// ip_vs there is nothing of ipvs mode to remove, and ipvsadm is not run.

import type { Execer } from '../../os/exec.js';
import { runChecked } from '../../os/exec.js';
import type { Ip } from '../../os/ip.js';
import type { IpvsOperation } from '../../netfilter/ipvs/model.js';
import { parseSave } from '../../netfilter/ipvs/parse.js';
import { renderRestore } from '../../netfilter/ipvs/render.js';
import type { IpvsProbe } from './kernel.js';
import { probeIpvs } from './kernel.js';
import { IPVS_DUMMY_DEVICE } from './names.js';

/** What the ipvs cleanup removed. */
export interface IpvsCleanupResult {
  readonly virtualServers: number;
  readonly ipsets: number;
  readonly device: boolean;
}

/** Removes ipvs mode's state (real tools, or a Fake in tests). */
export interface IpvsCleaner {
  removeIpvs(): Promise<IpvsCleanupResult>;
}

/** The real tools: ipvsadm, ipset, and the `Ip` seam for kube-ipvs0. */
export class RealIpvsCleaner implements IpvsCleaner {
  private readonly execer: Execer;
  private readonly ip: Ip;
  private readonly probe: IpvsProbe;

  constructor(execer: Execer, ip: Ip, probe: IpvsProbe = probeIpvs) {
    this.execer = execer;
    this.ip = ip;
    this.probe = probe;
  }

  async removeIpvs(): Promise<IpvsCleanupResult> {
    const link = (await this.ip.links(undefined)).find((l) => l.name === IPVS_DUMMY_DEVICE);
    let virtualServers = 0;
    if ((await this.probe()).ok && link !== undefined) {
      const bound = new Set(link.addrs.map((a) => a.local));
      const save = await runChecked(this.execer, { cmd: 'ipvsadm', args: ['-S', '-n'] });
      const ops: IpvsOperation[] = parseSave(save.stdout)
        .filter((s) => bound.has(s.virtualServer.address))
        .map((s) => ({ verb: 'deleteService', id: s.virtualServer }));
      if (ops.length > 0)
        await runChecked(this.execer, { cmd: 'ipvsadm', args: ['-R'], stdin: renderRestore(ops) });
      virtualServers = ops.length;
    }
    const device = link !== undefined && (await this.ip.deleteLink(undefined, IPVS_DUMMY_DEVICE));
    return { virtualServers, ipsets: await this.destroySets(), device };
  }

  /** Destroys every KUBE-* set; none when the host has no ipset tool. */
  private async destroySets(): Promise<number> {
    let names: string[];
    try {
      const res = await this.execer.run({ cmd: 'ipset', args: ['list', '-n'] });
      if (res.code !== 0) return 0;
      names = res.stdout.split('\n').filter((n) => n.startsWith('KUBE-'));
    } catch {
      return 0;
    }
    if (names.length === 0) return 0;
    const text = names.map((n) => `destroy ${n}\n`).join('');
    await runChecked(this.execer, { cmd: 'ipset', args: ['restore'], stdin: text });
    return names.length;
  }
}
