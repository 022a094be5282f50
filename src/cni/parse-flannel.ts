// svcnet-cni's `flannel` type, the decisions: its configuration (`subnetFile`, `dataDir`,
// `delegate`, `ipam`, as flannel's CNI plugin takes them) and the delegate configuration
// built from it and subnet.env the way flannel's plugin builds it — delegate type `bridge`
// unless given, `isGateway: true` for a bridge, `ipMasq: !FLANNEL_IPMASQ` and
// `mtu: FLANNEL_MTU` unless given, and IPAM `host-local` (or the config's `ipam.type`) whose
// ranges are FLANNEL_SUBNET and whose routes are the config's plus FLANNEL_NETWORK. Keys the
// delegate object sets win except `ipam`, which flannel always builds. Pure; plugin-flannel.ts
// reads the files and runs the delegate.

import type { SubnetEnv } from '../podnet/subnet-env.js';
import { decodeJson } from './parse-config.js';
import { NAME_RE } from './parse-request.js';
import { CniError, CniErrorCode } from './types.js';
import { requireSupportedVersion } from './version.js';

export const DEFAULT_SUBNET_FILE = '/run/flannel/subnet.env';
/** Where flannel's CNI plugin keeps each container's delegate config. */
export const DEFAULT_FLANNEL_DATA_DIR = '/var/lib/cni/flannel';

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export interface FlannelConfig {
  readonly cniVersion: string;
  readonly name: string;
  readonly subnetFile: string;
  readonly dataDir: string;
  /** The `delegate` object as given (empty when absent). */
  readonly delegate: Json;
  /** The `ipam` object as given, the base of the delegate's IPAM. */
  readonly ipam: Json;
  readonly runtimeConfig: Json | undefined;
  readonly prevResult: unknown;
  /** GC's attachment list, forwarded to the delegate. */
  readonly validAttachments: unknown;
}

/** Parses a `type: "flannel"` config; every field error at once with code 7. */
export function parseFlannelConfig(text: string): FlannelConfig {
  const raw = decodeJson(text, 'network configuration');
  if (!isObject(raw))
    throw new CniError(CniErrorCode.decodeFailure, 'network configuration: must be a JSON object');
  const name = typeof raw.name === 'string' ? raw.name : '';
  const problems: string[] = [];
  const add = (field: string, msg: string): void => {
    problems.push(`network "${name}": ${field}: ${msg}`);
  };
  if (!NAME_RE.test(name))
    add('name', `must match ${NAME_RE.source}, got ${JSON.stringify(raw.name)}`);
  if (typeof raw.cniVersion !== 'string' || raw.cniVersion === '') add('cniVersion', 'required');
  const path = (key: string, dflt: string): string => {
    const v = raw[key] ?? dflt;
    if (typeof v !== 'string' || !v.startsWith('/')) {
      add(key, `must be an absolute path, got ${JSON.stringify(v)}`);
      return dflt;
    }
    return v;
  };
  const subnetFile = path('subnetFile', DEFAULT_SUBNET_FILE);
  const dataDir = path('dataDir', DEFAULT_FLANNEL_DATA_DIR);
  const delegate = raw.delegate ?? {};
  if (!isObject(delegate)) add('delegate', 'must be an object, e.g. {"bridge":"cni0"}');
  else if (
    delegate.type !== undefined &&
    (typeof delegate.type !== 'string' || delegate.type === '')
  )
    add('delegate.type', `must be a plugin name, got ${JSON.stringify(delegate.type)}`);
  const ipam = raw.ipam ?? {};
  if (!isObject(ipam)) add('ipam', 'must be an object');
  else if (ipam.routes !== undefined && !Array.isArray(ipam.routes))
    add('ipam.routes', 'must be a list of {"dst": CIDR}');
  if (raw.runtimeConfig !== undefined && !isObject(raw.runtimeConfig))
    add('runtimeConfig', 'must be an object');
  if (problems.length > 0)
    throw new CniError(CniErrorCode.invalidNetworkConfig, problems.join('; '));
  requireSupportedVersion(String(raw.cniVersion));
  return {
    cniVersion: String(raw.cniVersion),
    name,
    subnetFile,
    dataDir,
    delegate: isObject(delegate) ? delegate : {},
    ipam: isObject(ipam) ? ipam : {},
    runtimeConfig: isObject(raw.runtimeConfig) ? raw.runtimeConfig : undefined,
    prevResult: raw.prevResult,
    validAttachments: raw['cni.dev/valid-attachments'] ?? raw['cni.dev/attachments'],
  };
}

/** The delegate's network configuration (without prevResult), as flannel's plugin builds it. */
export function flannelDelegate(f: FlannelConfig, env: SubnetEnv): Json {
  const d: Json = { ...f.delegate };
  d.name = f.name;
  d.cniVersion = f.cniVersion;
  if (d.type === undefined) d.type = 'bridge';
  if (d.ipMasq === undefined) d.ipMasq = !env.ipMasq;
  if (d.mtu === undefined) d.mtu = env.mtu;
  if (d.type === 'bridge' && d.isGateway === undefined) d.isGateway = true;
  const baseRoutes = Array.isArray(f.ipam.routes) ? (f.ipam.routes as unknown[]) : [];
  d.ipam = {
    ...f.ipam,
    type: typeof f.ipam.type === 'string' ? f.ipam.type : 'host-local',
    ranges: [[{ subnet: env.subnet }]],
    routes: [...baseRoutes, { dst: env.network }],
  };
  if (f.runtimeConfig) d.runtimeConfig = f.runtimeConfig;
  return d;
}

/** Where the delegate config of `containerId` is kept between ADD and DEL. */
export function delegateStatePath(f: FlannelConfig, containerId: string): string {
  return `${f.dataDir.replace(/\/+$/, '')}/${containerId}`;
}
