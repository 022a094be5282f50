// CNI wire shapes (spec 1.1.0 / 1.0.0 and the pre-1.0 result variant) and the CNI error
// class. Only data and the error type live here; parsing is in parse-*.ts, I/O elsewhere.

import { SvcnetError, type ErrorCode } from '../errors.js';

/** CNI operations (spec §"Parameters"; STATUS and GC are new in 1.1.0). */
export type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'VERSION' | 'STATUS' | 'GC';

export const CNI_COMMANDS: readonly CniCommand[] = [
  'ADD',
  'DEL',
  'CHECK',
  'VERSION',
  'STATUS',
  'GC',
];

/** Well-known error codes of the spec (0-99 reserved; 100+ plugin specific). */
export const CniErrorCode = {
  incompatibleVersion: 1,
  unsupportedField: 2,
  unknownContainer: 3,
  invalidEnvironment: 4,
  ioFailure: 5,
  decodeFailure: 6,
  invalidNetworkConfig: 7,
  invalidNetns: 8,
  tryAgainLater: 11,
  notAvailable: 50,
  notAvailableDegraded: 51,
  /** libcni's ErrInternal; what the reference plugins use for any other failure. */
  internal: 999,
} as const;

export interface CniInterface {
  name: string;
  mac?: string;
  mtu?: number;
  /** Netns path for container-side interfaces; absent on the host side. */
  sandbox?: string;
  socketPath?: string;
  pciID?: string;
}

export interface CniIPConfig {
  /** CIDR notation: the address with its subnet prefix, e.g. `10.244.1.2/24`. */
  address: string;
  gateway?: string;
  /** Index into `interfaces`. */
  interface?: number;
  /** Pre-1.0.0 results only: "4" or "6". */
  version?: '4' | '6';
}

export interface CniRoute {
  dst: string;
  gw?: string;
  mtu?: number;
  advmss?: number;
  priority?: number;
  table?: number;
  scope?: number;
}

export interface CniDNS {
  nameservers?: string[];
  domain?: string;
  search?: string[];
  options?: string[];
}

/** ADD success result (also what IPAM plugins return, without `interfaces`). */
export interface CniResult {
  cniVersion: string;
  interfaces?: CniInterface[];
  ips?: CniIPConfig[];
  routes?: CniRoute[];
  dns?: CniDNS;
}

/** The error JSON a plugin prints on stdout with a non-zero exit. */
export interface CniErrorJSON {
  cniVersion?: string;
  code: number;
  msg: string;
  details?: string;
}

/** One attachment in a GC request (`cni.dev/valid-attachments`). */
export interface CniAttachment {
  containerID: string;
  ifname: string;
}

function errorCodeFor(cniCode: number): ErrorCode {
  switch (cniCode) {
    case 1:
    case 2:
    case 4:
    case 6:
    case 7:
    case 8:
      return 'INVALID_INPUT';
    case 3:
      return 'NOT_FOUND';
    case 11:
      return 'TIMEOUT';
    case 50:
    case 51:
      return 'UNSUPPORTED';
    default:
      return 'INTERNAL';
  }
}

/**
 * A CNI failure with its spec code. The plugin prints it as error JSON; the runtime raises
 * it when a plugin failed (with the plugin's own code, message and details).
 */
export class CniError extends SvcnetError {
  readonly cniCode: number;
  readonly details: string | undefined;

  constructor(cniCode: number, msg: string, details?: string, cause?: unknown) {
    super(errorCodeFor(cniCode), msg, { cause });
    this.name = 'CniError';
    this.cniCode = cniCode;
    this.details = details;
  }

  /** The spec's error JSON for this error, tagged with `cniVersion` when known. */
  toJSON(cniVersion?: string): CniErrorJSON {
    return {
      ...(cniVersion !== undefined ? { cniVersion } : {}),
      code: this.cniCode,
      msg: this.message,
      ...(this.details !== undefined && this.details !== '' ? { details: this.details } : {}),
    };
  }
}
