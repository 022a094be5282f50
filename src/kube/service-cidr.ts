// ServiceCIDR objects (networking.k8s.io/v1): their validation as kube-apiserver judges them
// (one or two CIDRs, canonical, at most one per IP family), the cluster's ServiceCIDRs as
// kube-proxy's nftables mode reads them (every object's spec.cidrs, whatever its status, as
// pkg/proxy/config's ServiceCIDRConfig does), and how a client tells that the API server
// does not serve the resource at all (404: servers older than Kubernetes 1.33, or with the
// API off). Pure.

import type { FieldError } from '../errors.js';
import { formatCIDR, parseCIDR } from '../util/ip.js';
import type { KubeObject, ServiceCIDR } from './types.js';
import { FieldErrorCollector, validateMeta } from './validate.js';
import { describeObject } from './types.js';

/** The name kube-apiserver gives the ServiceCIDR of --service-cluster-ip-range. */
export const DEFAULT_SERVICE_CIDR_NAME = 'kubernetes';

/** Whether an object is a ServiceCIDR (manifests keep it among their `others`). */
export function isServiceCIDR(obj: KubeObject): obj is ServiceCIDR {
  return obj.kind === 'ServiceCIDR';
}

/**
 * Field errors of a ServiceCIDR: name, and spec.cidrs of one or two valid canonical CIDRs
 * of different families (kube-apiserver's ValidateServiceCIDR).
 */
export function validateServiceCIDR(obj: ServiceCIDR): FieldError[] {
  const c = new FieldErrorCollector(describeObject({ ...obj, kind: 'ServiceCIDR' }));
  validateMeta(obj, false, c);
  const cidrs: unknown = obj.spec?.cidrs;
  if (cidrs === undefined || (Array.isArray(cidrs) && cidrs.length === 0)) {
    c.add('spec.cidrs', 'required');
    return c.errors;
  }
  if (!Array.isArray(cidrs)) {
    c.add('spec.cidrs', 'must be a list of CIDRs', { value: cidrs });
    return c.errors;
  }
  if (cidrs.length > 2)
    c.add('spec.cidrs', 'may only hold up to 2 values', { value: cidrs.length });
  const families: string[] = [];
  cidrs.forEach((v: unknown, i) => {
    const field = `spec.cidrs[${String(i)}]`;
    const p = typeof v === 'string' ? parseCIDR(v) : undefined;
    if (p === undefined) {
      c.add(field, 'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)', {
        value: v,
      });
      return;
    }
    if (formatCIDR(p) !== v)
      c.add(field, `must be in canonical form ("${formatCIDR(p)}")`, { value: v });
    if (families.includes(p.family))
      c.add('spec.cidrs', 'may specify no more than one IP for each IP family', { value: cidrs });
    families.push(p.family);
  });
  return c.errors;
}

/**
 * The cluster's ServiceCIDRs: the union of every object's spec.cidrs, without duplicates,
 * sorted (so an unchanged set compares equal). Entries that are not CIDRs are left to the
 * per-family filter of the nftables options, which drops them.
 */
export function serviceCIDRsOf(objects: Iterable<ServiceCIDR>): string[] {
  const out = new Set<string>();
  for (const o of objects) for (const c of o.spec?.cidrs ?? []) out.add(c);
  return [...out].sort();
}

/**
 * Whether a list/watch failure means the server does not serve the resource (HTTP 404
 * somewhere in the error or its causes), as opposed to a failure worth retrying.
 */
export function isResourceNotServed(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    if (typeof e !== 'object') return false;
    const o = e as Record<string, unknown>;
    if (o.status === 404 || o.statusCode === 404 || o.code === 404) return true;
    e = o.cause;
  }
  return false;
}
