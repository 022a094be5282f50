// The kernel settings kube-proxy's IPVS mode makes at start in the proxy's own network
// namespace (its NewProxier): IPVS connections tracked by conntrack (the iptables rules of
// this mode match on conntrack state), connections to a removed real server expired rather
// than stuck, persistence templates expired with their quiesced (weight 0) server, forwarding
// on, and with `ipvs.strictARP` the node no longer answering ARP for the Service IPs on
// kube-ipvs0. conn_reuse_mode=0 only on kernels 4.1 to 5.8: 4.1 added the knob, and
// kernels from 5.9 fixed the reuse delay (torvalds/linux 35dfb013149f) so kube-proxy leaves
// them alone (kubernetes#93297). Plus the IPVS timeouts as `ipvsadm --set` arguments.
// Pure: the daemon applies the plan through the Sysctl seam (host-setup.ts).

import type { SysctlSetting } from '../node-setup.js';

export interface IpvsSysctlInput {
  /** `kernel.osrelease` (e.g. "6.1.0-27-amd64"); '' or unparseable when unknown. */
  readonly kernelRelease: string;
  readonly strictARP: boolean;
}

/** `"6.1.0-27-amd64"` → [6, 1]; undefined when it does not start with MAJOR.MINOR. */
export function kernelVersionOf(release: string): readonly [number, number] | undefined {
  const m = /^(\d+)\.(\d+)/.exec(release.trim());
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

function atLeast(v: readonly [number, number], major: number, minor: number): boolean {
  return v[0] > major || (v[0] === major && v[1] >= minor);
}

/** What conn_reuse_mode gets: '0', or why it is left alone. */
export function connReuseModeDecision(
  release: string,
): { readonly set: true } | { readonly set: false; readonly reason: string } {
  const v = kernelVersionOf(release);
  if (v === undefined) return { set: false, reason: `unknown kernel version ${release}` };
  if (!atLeast(v, 4, 1)) return { set: false, reason: 'kernel older than 4.1 has no such knob' };
  if (atLeast(v, 5, 9)) return { set: false, reason: 'kernel 5.9 or newer fixed the reuse delay' };
  return { set: true };
}

/** The sysctls of ipvs mode, in kube-proxy's order (see the file header). */
export function planIpvsSysctls(input: IpvsSysctlInput): SysctlSetting[] {
  const out: SysctlSetting[] = [{ key: 'net.ipv4.vs.conntrack', value: '1' }];
  if (connReuseModeDecision(input.kernelRelease).set)
    out.push({ key: 'net.ipv4.vs.conn_reuse_mode', value: '0' });
  out.push(
    { key: 'net.ipv4.vs.expire_nodest_conn', value: '1' },
    { key: 'net.ipv4.vs.expire_quiescent_template', value: '1' },
    { key: 'net.ipv4.ip_forward', value: '1' },
  );
  if (input.strictARP)
    out.push(
      { key: 'net.ipv4.conf.all.arp_ignore', value: '1' },
      { key: 'net.ipv4.conf.all.arp_announce', value: '2' },
    );
  return out;
}

export interface IpvsTimeouts {
  /** Seconds; 0 keeps the kernel's value. */
  readonly tcpTimeoutSeconds: number;
  readonly tcpFinTimeoutSeconds: number;
  readonly udpTimeoutSeconds: number;
}

/**
 * `ipvsadm` arguments setting the timeouts (`--set TCP TCPFIN UDP`, whole seconds; ipvsadm
 * leaves a 0 unchanged), or undefined when none is set, as kube-proxy skips the call then.
 */
export function ipvsTimeoutArgs(t: IpvsTimeouts): string[] | undefined {
  const s = [t.tcpTimeoutSeconds, t.tcpFinTimeoutSeconds, t.udpTimeoutSeconds].map((x) =>
    Math.max(0, Math.floor(x)),
  );
  if (s.every((x) => x === 0)) return undefined;
  return ['--set', ...s.map(String)];
}
