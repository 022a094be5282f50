// flannel's network configuration, `net-conf.json` (the `net-conf.json` key of the
// kube-system/kube-flannel-cfg ConfigMap, or a file): parsed and validated into the plain data
// the planner uses. The fields and defaults are flanneld's (pkg/subnet's Config and the vxlan
// backend's own config): `Network` (required), `SubnetLen` (24), `EnableIPv4` (true),
// `Backend.Type` (`vxlan` or `host-gw`), and for vxlan `VNI` (1), `Port` (8472, Linux's VXLAN
// port) and `MTU` (0 = the uplink's MTU minus 50). IP masquerading is a flanneld flag, not a
// net-conf field (`--ip-masq`), so it is not here. Every problem is collected and reported with
// the field named: `net-conf.json: Backend.Type: unsupported backend "udp" (vxlan, host-gw)`.
// Pure: no I/O. Not here: IPv6 networks, multiple Networks, and the other backends.

import { ValidationError, type FieldError } from '../errors.js';
import { formatCIDR, parseCIDR, type ParsedCIDR } from '../util/ip.js';

export const BACKEND_TYPES = ['vxlan', 'host-gw'] as const;
export type FlannelBackendType = (typeof BACKEND_TYPES)[number];

/** Linux's VXLAN port (IANA's is 4789); flannel's default too. */
export const DEFAULT_VXLAN_PORT = 8472;
export const DEFAULT_VNI = 1;

export type FlannelBackend =
  | {
      readonly type: 'vxlan';
      readonly vni: number;
      readonly port: number;
      /** 0: the uplink's MTU minus the 50 bytes of VXLAN encapsulation. */
      readonly mtu: number;
    }
  | { readonly type: 'host-gw' };

export interface FlannelNetConf {
  /** The cluster's pod network, canonical CIDR text. */
  readonly network: string;
  readonly subnetLen: number;
  readonly enableIPv4: boolean;
  readonly backend: FlannelBackend;
}

type J = Record<string, unknown>;

function isObject(v: unknown): v is J {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function intField(
  obj: J,
  key: string,
  path: string,
  def: number,
  min: number,
  max: number,
  errs: FieldError[],
  object: string,
): number {
  const v = obj[key];
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    errs.push({ object, field: path, message: `must be an integer ${min}-${max}`, value: v });
    return def;
  }
  return v;
}

function parseBackend(
  raw: unknown,
  override: FlannelBackendType | undefined,
  object: string,
  errs: FieldError[],
): FlannelBackend {
  const b: J = isObject(raw) ? raw : {};
  if (raw !== undefined && !isObject(raw))
    errs.push({ object, field: 'Backend', message: 'must be an object', value: raw });
  const type = override ?? b.Type ?? 'vxlan';
  if (type === 'host-gw') return { type: 'host-gw' };
  if (type !== 'vxlan') {
    errs.push({
      object,
      field: 'Backend.Type',
      message: `unsupported backend ${JSON.stringify(type)} (${BACKEND_TYPES.join(', ')})`,
      reason: 'FieldValueNotSupported',
      value: type,
    });
    return { type: 'host-gw' };
  }
  return {
    type: 'vxlan',
    vni: intField(b, 'VNI', 'Backend.VNI', DEFAULT_VNI, 0, 16777215, errs, object),
    // Port 0 is flannel's "the kernel's default", which on Linux is 8472.
    port:
      intField(b, 'Port', 'Backend.Port', DEFAULT_VXLAN_PORT, 0, 65535, errs, object) ||
      DEFAULT_VXLAN_PORT,
    mtu: intField(b, 'MTU', 'Backend.MTU', 0, 0, 65535, errs, object),
  };
}

/**
 * Parses net-conf.json text. `source` names it in errors (a file path, or
 * `ConfigMap kube-system/kube-flannel-cfg net-conf.json`); `backend` (the `--backend` flag)
 * wins over Backend.Type. Throws ValidationError (INVALID_INPUT) listing every bad field.
 */
export function parseNetConf(
  text: string,
  source: string,
  backend?: FlannelBackendType,
): FlannelNetConf {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new ValidationError([
      { object: source, field: '', message: `not valid JSON: ${(e as Error).message}` },
    ]);
  }
  if (!isObject(raw))
    throw new ValidationError([{ object: source, field: '', message: 'must be a JSON object' }]);
  const errs: FieldError[] = [];
  let network: ParsedCIDR | undefined;
  if (raw.Network === undefined)
    errs.push({
      object: source,
      field: 'Network',
      message: 'required',
      reason: 'FieldValueRequired',
    });
  else {
    network = typeof raw.Network === 'string' ? parseCIDR(raw.Network) : undefined;
    if (network?.family !== 'IPv4')
      errs.push({
        object: source,
        field: 'Network',
        message: `invalid IPv4 CIDR ${JSON.stringify(raw.Network)}`,
        value: raw.Network,
      });
  }
  const subnetLen = intField(raw, 'SubnetLen', 'SubnetLen', 24, 1, 32, errs, source);
  if (network && raw.SubnetLen !== undefined && subnetLen <= network.prefix)
    errs.push({
      object: source,
      field: 'SubnetLen',
      message: `must be longer than the Network's prefix /${network.prefix}`,
      value: subnetLen,
    });
  if (raw.EnableIPv4 !== undefined && typeof raw.EnableIPv4 !== 'boolean')
    errs.push({
      object: source,
      field: 'EnableIPv4',
      message: 'must be true or false',
      value: raw.EnableIPv4,
    });
  if (raw.EnableIPv4 === false)
    errs.push({
      object: source,
      field: 'EnableIPv4',
      message: 'IPv6-only networks are not supported',
      reason: 'FieldValueNotSupported',
    });
  const parsedBackend = parseBackend(raw.Backend, backend, source, errs);
  if (errs.length > 0 || !network) throw new ValidationError(errs);
  return {
    network: formatCIDR(network),
    subnetLen,
    enableIPv4: true,
    backend: parsedBackend,
  };
}

/** The kube-flannel ConfigMap that holds net-conf.json, as kube-flannel.yml names it. */
export const NET_CONF_CONFIGMAP = {
  namespace: 'kube-system',
  name: 'kube-flannel-cfg',
  key: 'net-conf.json',
} as const;
