// The part of a KubeProxyConfiguration file the daemon reads, as plain optional fields in
// the daemon's units (durations in milliseconds or seconds). Parsing and validation of the
// file itself belong to proxy/config.ts (which applies kube-proxy's defaults and names every
// bad field); this adapter only maps its result.

import { parseKubeProxyConfiguration } from './config.js';

/** Settings from `--config` (absent fields fall back to defaults or flags). */
export interface ProxyConfigFile {
  readonly mode?: string;
  readonly kubeconfig?: string;
  readonly hostnameOverride?: string;
  readonly clusterCIDR?: string;
  readonly detectLocalMode?: string;
  readonly detectLocal?: {
    readonly bridgeInterface?: string;
    readonly interfaceNamePrefix?: string;
  };
  readonly nodePortAddresses?: readonly string[];
  readonly healthzBindAddress?: string;
  readonly metricsBindAddress?: string;
  readonly iptables?: {
    readonly masqueradeBit?: number;
    readonly masqueradeAll?: boolean;
    readonly localhostNodePorts?: boolean;
    readonly syncPeriodMs?: number;
    readonly minSyncPeriodMs?: number;
  };
  readonly conntrack?: {
    readonly maxPerCore?: number;
    readonly min?: number;
    readonly tcpEstablishedTimeoutSeconds?: number;
    readonly tcpCloseWaitTimeoutSeconds?: number;
    readonly tcpBeLiberal?: boolean;
    readonly udpTimeoutSeconds?: number;
    readonly udpStreamTimeoutSeconds?: number;
  };
}

/** Parses a KubeProxyConfiguration file (YAML or JSON) into the fields the daemon reads. */
export function loadProxyConfigFile(path: string, text: string): ProxyConfigFile {
  const c = parseKubeProxyConfiguration(text, path);
  const seconds = (ms: number): number => ms / 1000;
  return {
    mode: c.mode,
    ...(c.clientConnection.kubeconfig !== '' ? { kubeconfig: c.clientConnection.kubeconfig } : {}),
    hostnameOverride: c.hostnameOverride,
    clusterCIDR: c.clusterCIDRs.join(','),
    detectLocalMode: c.detectLocalMode,
    detectLocal: c.detectLocal,
    nodePortAddresses: c.nodePortAddresses,
    healthzBindAddress: c.healthzBindAddress,
    metricsBindAddress: c.metricsBindAddress,
    iptables: {
      masqueradeBit: c.iptables.masqueradeBit,
      masqueradeAll: c.iptables.masqueradeAll,
      localhostNodePorts: c.iptables.localhostNodePorts,
      syncPeriodMs: c.syncPeriodMs,
      minSyncPeriodMs: c.minSyncPeriodMs,
    },
    conntrack: {
      maxPerCore: c.conntrack.maxPerCore,
      min: c.conntrack.min,
      tcpEstablishedTimeoutSeconds: seconds(c.conntrack.tcpEstablishedTimeoutMs),
      tcpCloseWaitTimeoutSeconds: seconds(c.conntrack.tcpCloseWaitTimeoutMs),
      tcpBeLiberal: c.conntrack.tcpBeLiberal,
      udpTimeoutSeconds: seconds(c.conntrack.udpTimeoutMs),
      udpStreamTimeoutSeconds: seconds(c.conntrack.udpStreamTimeoutMs),
    },
  };
}
