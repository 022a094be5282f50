// Field validation of the objects svcnet reads, as kube-apiserver would judge them. Each
// validator collects every problem (never stops at the first) and returns them as
// FieldErrors naming the object and field; an empty list means valid. Pure.
//
// IPs are read leniently (leading zeros allowed), as kube-proxy reads stored objects.

import type { FieldError, FieldErrorType } from '../errors.js';
import { parseCIDRSloppy, parseIPSloppy } from '../util/ip.js';
import type { EndpointSlice, KubeObject, Node, Service } from './types.js';
import { describeObject } from './types.js';

const PROTOCOLS = new Set(['TCP', 'UDP', 'SCTP']);
const SERVICE_TYPES = new Set(['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName']);
const TRAFFIC_POLICIES = new Set(['Cluster', 'Local']);
const IP_FAMILY_POLICIES = new Set(['SingleStack', 'PreferDualStack', 'RequireDualStack']);
// RFC 1123 label (DNS-1123 label), as Kubernetes uses for names and port names.
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
// IANA_SVC_NAME: at most 15 chars, lowercase alnum and '-', at least one letter, no '--'.
const IANA_SVC_NAME = /^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$/;

class Collector {
  readonly errors: FieldError[] = [];
  readonly object: string;
  constructor(object: string) {
    this.object = object;
  }
  /** Records a problem; `extra` carries the cause type and offending value for API errors. */
  add(field: string, message: string, extra?: { reason?: FieldErrorType; value?: unknown }): void {
    const reason = extra?.reason ?? (message === 'required' ? 'FieldValueRequired' : undefined);
    this.errors.push({
      object: this.object,
      field,
      message,
      ...(reason !== undefined ? { reason } : {}),
      ...(extra !== undefined && 'value' in extra ? { value: extra.value } : {}),
    });
  }
}

function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v);
}

function show(v: unknown): string {
  return JSON.stringify(v) ?? String(v);
}

export function isValidIanaSvcName(s: string): boolean {
  return IANA_SVC_NAME.test(s) && /[a-z]/.test(s) && !s.includes('--');
}

/** metadata.name (and namespace when namespaced). */
export function validateMeta(obj: KubeObject, namespaced: boolean, c: Collector): void {
  const name = obj.metadata?.name;
  if (typeof name !== 'string' || name === '') c.add('metadata.name', 'required');
  else if (name.length > 253 || !DNS1123_SUBDOMAIN.test(name))
    c.add('metadata.name', `must be a lowercase RFC 1123 subdomain, got ${show(name)}`, {
      value: name,
    });
  const ns = obj.metadata?.namespace;
  if (namespaced && ns !== undefined && (typeof ns !== 'string' || !DNS1123_LABEL.test(ns)))
    c.add('metadata.namespace', `must be a lowercase RFC 1123 label, got ${show(ns)}`);
}

function checkIP(c: Collector, field: string, v: unknown): void {
  if (typeof v !== 'string' || parseIPSloppy(v) === undefined)
    c.add(field, `must be a valid IP address, got ${show(v)}`, { value: v });
}

function checkPort(c: Collector, field: string, v: unknown, min = 1): void {
  if (!isInt(v) || v < min || v > 65535)
    c.add(field, `must be ${min}-65535, got ${show(v)}`, { value: v });
}

export function validateService(svc: Service): FieldError[] {
  const c = new Collector(describeObject({ ...svc, kind: 'Service' }));
  validateMeta(svc, true, c);
  const spec = svc.spec;
  if (spec === undefined || typeof spec !== 'object') {
    c.add('spec', 'required');
    return c.errors;
  }
  const type = spec.type ?? 'ClusterIP';
  if (!SERVICE_TYPES.has(type))
    c.add(
      'spec.type',
      `must be one of ClusterIP, NodePort, LoadBalancer, ExternalName, got ${show(type)}`,
      { reason: 'FieldValueNotSupported', value: type },
    );
  if (type === 'ExternalName') {
    if (typeof spec.externalName !== 'string' || spec.externalName === '')
      c.add('spec.externalName', 'required for type ExternalName', {
        reason: 'FieldValueRequired',
      });
  }
  const ports = spec.ports ?? [];
  if (!Array.isArray(ports)) c.add('spec.ports', 'must be a list');
  else {
    if (ports.length === 0 && type !== 'ExternalName' && spec.clusterIP !== 'None')
      c.add('spec.ports', 'required');
    const names = new Set<string>();
    ports.forEach((p, i) => {
      const f = `spec.ports[${i}]`;
      checkPort(c, `${f}.port`, p.port);
      const proto = p.protocol ?? 'TCP';
      if (!PROTOCOLS.has(proto))
        c.add(`${f}.protocol`, `must be TCP, UDP or SCTP, got ${show(proto)}`, {
          reason: 'FieldValueNotSupported',
          value: proto,
        });
      if (p.name !== undefined && p.name !== '') {
        if (!DNS1123_LABEL.test(p.name) || p.name.length > 63)
          c.add(`${f}.name`, `must be a lowercase RFC 1123 label, got ${show(p.name)}`, {
            value: p.name,
          });
        if (names.has(p.name))
          c.add(`${f}.name`, `duplicate port name ${show(p.name)}`, {
            reason: 'FieldValueDuplicate',
            value: p.name,
          });
        names.add(p.name);
      } else if (ports.length > 1)
        c.add(`${f}.name`, 'required when a Service has more than one port', {
          reason: 'FieldValueRequired',
        });
      if (p.targetPort !== undefined) {
        if (typeof p.targetPort === 'string') {
          if (!isValidIanaSvcName(p.targetPort))
            c.add(
              `${f}.targetPort`,
              `must be a port number or an IANA service name, got ${show(p.targetPort)}`,
              { value: p.targetPort },
            );
        } else checkPort(c, `${f}.targetPort`, p.targetPort);
      }
      if (p.nodePort !== undefined && p.nodePort !== 0) {
        checkPort(c, `${f}.nodePort`, p.nodePort);
        if (type === 'ClusterIP' || type === 'ExternalName')
          c.add(`${f}.nodePort`, `may not be set when type is ${type}`, {
            reason: 'FieldValueForbidden',
          });
      }
    });
  }
  if (spec.clusterIP !== undefined && spec.clusterIP !== '' && spec.clusterIP !== 'None')
    checkIP(c, 'spec.clusterIP', spec.clusterIP);
  (spec.clusterIPs ?? []).forEach((ip, i) => {
    if (ip !== 'None') checkIP(c, `spec.clusterIPs[${i}]`, ip);
  });
  if (spec.clusterIPs !== undefined && spec.clusterIPs.length > 2)
    c.add('spec.clusterIPs', 'may hold at most two addresses (one per family)');
  (spec.externalIPs ?? []).forEach((ip, i) => {
    checkIP(c, `spec.externalIPs[${i}]`, ip);
  });
  if (spec.loadBalancerIP !== undefined && spec.loadBalancerIP !== '')
    checkIP(c, 'spec.loadBalancerIP', spec.loadBalancerIP);
  (spec.loadBalancerSourceRanges ?? []).forEach((r, i) => {
    if (typeof r !== 'string' || parseCIDRSloppy(r.trim()) === undefined)
      c.add(`spec.loadBalancerSourceRanges[${i}]`, `must be a CIDR, got ${show(r)}`);
  });
  (spec.ipFamilies ?? []).forEach((f, i) => {
    if (f !== 'IPv4' && f !== 'IPv6')
      c.add(`spec.ipFamilies[${i}]`, `must be IPv4 or IPv6, got ${show(f)}`, {
        reason: 'FieldValueNotSupported',
        value: f,
      });
  });
  if (spec.ipFamilyPolicy !== undefined && !IP_FAMILY_POLICIES.has(spec.ipFamilyPolicy))
    c.add(
      'spec.ipFamilyPolicy',
      `must be SingleStack, PreferDualStack or RequireDualStack, got ${show(spec.ipFamilyPolicy)}`,
      { reason: 'FieldValueNotSupported', value: spec.ipFamilyPolicy },
    );
  if (spec.externalTrafficPolicy !== undefined && !TRAFFIC_POLICIES.has(spec.externalTrafficPolicy))
    c.add(
      'spec.externalTrafficPolicy',
      `must be Cluster or Local, got ${show(spec.externalTrafficPolicy)}`,
      { reason: 'FieldValueNotSupported', value: spec.externalTrafficPolicy },
    );
  if (spec.internalTrafficPolicy !== undefined && !TRAFFIC_POLICIES.has(spec.internalTrafficPolicy))
    c.add(
      'spec.internalTrafficPolicy',
      `must be Cluster or Local, got ${show(spec.internalTrafficPolicy)}`,
      { reason: 'FieldValueNotSupported', value: spec.internalTrafficPolicy },
    );
  if (
    spec.sessionAffinity !== undefined &&
    spec.sessionAffinity !== 'None' &&
    spec.sessionAffinity !== 'ClientIP'
  )
    c.add('spec.sessionAffinity', `must be None or ClientIP, got ${show(spec.sessionAffinity)}`, {
      reason: 'FieldValueNotSupported',
      value: spec.sessionAffinity,
    });
  const timeout = spec.sessionAffinityConfig?.clientIP?.timeoutSeconds;
  if (timeout !== undefined && (!isInt(timeout) || timeout < 1 || timeout > 86400))
    c.add(
      'spec.sessionAffinityConfig.clientIP.timeoutSeconds',
      `must be 1-86400, got ${show(timeout)}`,
      { value: timeout },
    );
  if (spec.healthCheckNodePort !== undefined && spec.healthCheckNodePort !== 0)
    checkPort(c, 'spec.healthCheckNodePort', spec.healthCheckNodePort);
  (svc.status?.loadBalancer?.ingress ?? []).forEach((ing, i) => {
    if (ing.ip !== undefined) checkIP(c, `status.loadBalancer.ingress[${i}].ip`, ing.ip);
    if (ing.ipMode !== undefined && ing.ipMode !== 'VIP' && ing.ipMode !== 'Proxy')
      c.add(
        `status.loadBalancer.ingress[${i}].ipMode`,
        `must be VIP or Proxy, got ${show(ing.ipMode)}`,
      );
  });
  return c.errors;
}

/** The most endpoints one EndpointSlice may hold (the API server's limit). */
export const MAX_SLICE_ENDPOINTS = 1000;
/** The most ports one EndpointSlice may hold (the API server's limit). */
export const MAX_SLICE_PORTS = 100;

/** A list over its limit; its items are not checked one by one (as kube-apiserver). */
function tooMany(c: Collector, field: string, n: number, max: number): void {
  c.add(field, `must have at most ${String(max)} items, got ${String(n)}`, {
    reason: 'FieldValueTooMany',
    value: n,
  });
}

/**
 * An EndpointSlice as the API server admits it: addressType, ports (at most 100) and
 * endpoints (at most 1000, each with addresses of that type).
 */
export function validateEndpointSlice(slice: EndpointSlice): FieldError[] {
  const c = new Collector(describeObject({ ...slice, kind: 'EndpointSlice' }));
  validateMeta(slice, true, c);
  const at = slice.addressType as unknown;
  if (at !== 'IPv4' && at !== 'IPv6' && at !== 'FQDN')
    c.add('addressType', `must be IPv4, IPv6 or FQDN, got ${show(at)}`);
  const ports = slice.ports ?? [];
  if (Array.isArray(ports) && ports.length > MAX_SLICE_PORTS)
    tooMany(c, 'ports', ports.length, MAX_SLICE_PORTS);
  else
    ports.forEach((p, i) => {
      if (p.port !== undefined && p.port !== null) checkPort(c, `ports[${i}].port`, p.port);
      if (p.protocol !== undefined && !PROTOCOLS.has(p.protocol))
        c.add(`ports[${i}].protocol`, `must be TCP, UDP or SCTP, got ${show(p.protocol)}`);
    });
  const endpoints = slice.endpoints ?? [];
  if (!Array.isArray(endpoints)) c.add('endpoints', 'must be a list');
  else if (endpoints.length > MAX_SLICE_ENDPOINTS)
    tooMany(c, 'endpoints', endpoints.length, MAX_SLICE_ENDPOINTS);
  else
    endpoints.forEach((ep, i) => {
      const addrs = ep.addresses as unknown;
      if (!Array.isArray(addrs) || addrs.length === 0) {
        c.add(`endpoints[${i}].addresses`, 'must hold at least one address');
        return;
      }
      addrs.forEach((a: unknown, j) => {
        const field = `endpoints[${i}].addresses[${j}]`;
        if (at === 'FQDN') {
          if (typeof a !== 'string' || !DNS1123_SUBDOMAIN.test(a))
            c.add(field, `must be a DNS name, got ${show(a)}`);
          return;
        }
        const ip = typeof a === 'string' ? parseIPSloppy(a) : undefined;
        if (!ip) c.add(field, `must be a valid IP address, got ${show(a)}`);
        else if ((at === 'IPv4' || at === 'IPv6') && ip.family !== at)
          c.add(field, `must be an ${at} address (addressType), got ${show(a)}`);
      });
    });
  return c.errors;
}

export function validateNode(node: Node): FieldError[] {
  const c = new Collector(describeObject({ ...node, kind: 'Node' }));
  validateMeta(node, false, c);
  const cidrs = [
    ...(node.spec?.podCIDR ? [node.spec.podCIDR] : []),
    ...(node.spec?.podCIDRs ?? []),
  ];
  cidrs.forEach((cidr, i) => {
    if (parseCIDRSloppy(cidr) === undefined)
      c.add(
        i === 0 && node.spec?.podCIDR ? 'spec.podCIDR' : 'spec.podCIDRs',
        `must be a CIDR, got ${show(cidr)}`,
      );
  });
  (node.status?.addresses ?? []).forEach((a, i) => {
    if (
      (a.type === 'InternalIP' || a.type === 'ExternalIP') &&
      parseIPSloppy(a.address) === undefined
    )
      c.add(`status.addresses[${i}].address`, `must be a valid IP address, got ${show(a.address)}`);
  });
  return c.errors;
}

export { Collector as FieldErrorCollector };
