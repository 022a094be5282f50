// The kernel settings kube-proxy makes at startup, for the network namespace the daemon
// runs in: route_localnet (IPv4 localhost NodePorts need it) and the conntrack table size
// and timeouts. `planSysctls` decides (pure); `applySysctls` writes through the Sysctl seam
// and never fails the daemon: a setting it cannot make is logged and skipped. The conntrack
// table size is a host-wide setting (read-only outside the initial network namespace), so
// it is only attempted when the daemon runs there; hashsize (a module parameter, global)
// is never touched.

import type { Logger } from 'pino';
import type { Sysctl } from '../os/sysctl.js';

/** kube-proxy caps nf_conntrack_max at this since 1.36 (#137002). */
export const CONNTRACK_MAX_CAP = 1_048_576;

export interface ConntrackSettings {
  /** Entries per CPU (0 leaves the size alone). */
  readonly maxPerCore: number;
  readonly min: number;
  /** Seconds; 0 leaves the kernel value. */
  readonly tcpEstablishedTimeoutSeconds: number;
  readonly tcpCloseWaitTimeoutSeconds: number;
  readonly tcpBeLiberal: boolean;
  readonly udpTimeoutSeconds: number;
  readonly udpStreamTimeoutSeconds: number;
}

export interface SysctlPlanInput {
  readonly ipv4: boolean;
  readonly localhostNodePorts: boolean;
  readonly conntrack: ConntrackSettings;
  readonly cpus: number;
  /** The daemon runs in the host's (initial) network namespace. */
  readonly hostNetns: boolean;
}

export interface SysctlSetting {
  readonly key: string;
  readonly value: string;
  /** Only write when the current value is lower (the table size is only ever raised). */
  readonly raiseOnly?: boolean;
}

/** Which sysctls to set (see the file header). */
export function planSysctls(input: SysctlPlanInput): SysctlSetting[] {
  const out: SysctlSetting[] = [];
  if (input.ipv4 && input.localhostNodePorts)
    out.push({ key: 'net.ipv4.conf.all.route_localnet', value: '1' });
  const ct = input.conntrack;
  if (input.hostNetns && ct.maxPerCore > 0) {
    const max = Math.min(Math.max(ct.maxPerCore * input.cpus, ct.min), CONNTRACK_MAX_CAP);
    out.push({ key: 'net.netfilter.nf_conntrack_max', value: String(max), raiseOnly: true });
  }
  const seconds = (key: string, v: number): void => {
    if (v > 0) out.push({ key, value: String(Math.floor(v)) });
  };
  seconds('net.netfilter.nf_conntrack_tcp_timeout_established', ct.tcpEstablishedTimeoutSeconds);
  seconds('net.netfilter.nf_conntrack_tcp_timeout_close_wait', ct.tcpCloseWaitTimeoutSeconds);
  if (ct.tcpBeLiberal) out.push({ key: 'net.netfilter.nf_conntrack_tcp_be_liberal', value: '1' });
  seconds('net.netfilter.nf_conntrack_udp_timeout', ct.udpTimeoutSeconds);
  seconds('net.netfilter.nf_conntrack_udp_timeout_stream', ct.udpStreamTimeoutSeconds);
  return out;
}

/** Writes the settings; returns the keys actually changed. Failures are logged, not thrown. */
export async function applySysctls(
  sysctl: Sysctl,
  settings: readonly SysctlSetting[],
  log: Logger,
): Promise<string[]> {
  const changed: string[] = [];
  for (const s of settings) {
    try {
      const cur = await sysctl.get(s.key);
      if (cur === s.value) continue;
      if (s.raiseOnly === true && Number(cur) >= Number(s.value)) continue;
      await sysctl.set(s.key, s.value);
      changed.push(s.key);
      log.info({ sysctl: s.key, value: s.value, previous: cur }, 'Set sysctl');
    } catch (err) {
      log.warn(
        { sysctl: s.key, value: s.value, err: err instanceof Error ? err.message : String(err) },
        'Cannot set sysctl',
      );
    }
  }
  return changed;
}

/** Whether the kernel has conntrack TCP liberal mode on (then no INVALID drop rule). */
export async function readTcpBeLiberal(sysctl: Sysctl): Promise<boolean> {
  try {
    return (await sysctl.get('net.netfilter.nf_conntrack_tcp_be_liberal')) === '1';
  } catch {
    return false;
  }
}
