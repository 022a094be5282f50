// The part of a KubeProxyConfiguration file the daemon reads, as plain optional fields in
// the daemon's units (durations in milliseconds or seconds). Parsing and validation of the
// file itself belong to proxy/config.ts; this adapter only maps its result.

import { SvcnetError } from '../errors.js';

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
export function loadProxyConfigFile(path: string, _text: string): Promise<ProxyConfigFile> {
  return Promise.reject(
    new SvcnetError(
      'UNSUPPORTED',
      `${path}: KubeProxyConfiguration parsing is not available in this build`,
    ),
  );
}
