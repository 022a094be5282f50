// What the IPVS planner needs to know about the node and the configuration. Plain data.

import type { LocalDetector } from '../iptables/options.js';

export interface IpvsProxierOptions {
  readonly nodeName: string;
  readonly nodeZone?: string;
  /** Primary node IP ('' when unknown): decides whether source ranges let the node in. */
  readonly nodeIP: string;
  /** `ipvs.scheduler`; kube-proxy's default is rr. */
  readonly scheduler: string;
  readonly masqueradeAll: boolean;
  /** e.g. `0x00004000` (empty in upstream's fake proxier). */
  readonly masqueradeMark: string;
  readonly hasRandomFully: boolean;
  readonly localDetector: LocalDetector;
  /** The addresses NodePort virtual servers listen on (already resolved and family-filtered). */
  readonly nodePortIPs: readonly string[];
  /**
   * Addresses of the node's other interfaces, this family's only: external/LB IPs among them
   * are not bound. With nodePortIPs, they only change which virtual servers, ipset entries and
   * bound addresses are planned, which a partial sync applies as a difference: a change never
   * forces a full sync.
   */
  readonly localAddresses: readonly string[];
  /** IPv6 sets named `KUBE-6-…` (production); upstream's fake proxier keeps `KUBE-…`. */
  readonly ipsetNamesIPv6Prefixed: boolean;
  /**
   * `ipvs.excludeCIDRs` of this family: virtual servers inside them that the proxy did not
   * plan are left alone (reconcileIpvs), as other tools own them. Absent: none.
   */
  readonly excludeCIDRs?: readonly string[];
}

export const DEFAULT_IPVS_OPTIONS: IpvsProxierOptions = {
  nodeName: '',
  nodeIP: '',
  scheduler: 'rr',
  masqueradeAll: false,
  masqueradeMark: '0x00004000',
  hasRandomFully: false,
  localDetector: { mode: 'None' },
  nodePortIPs: [],
  localAddresses: [],
  ipsetNamesIPv6Prefixed: true,
  excludeCIDRs: [],
};

/** A port number, or 0 when the object left it out. */
export function portOf(port: number | undefined): number {
  return typeof port === 'number' && Number.isInteger(port) ? port : 0;
}
