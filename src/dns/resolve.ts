// The cluster DNS resolver: a pure function from (record index, config, question) to a
// response, answering every name of the Kubernetes DNS spec 1.1.0 the way CoreDNS's
// `kubernetes` plugin does (v1.14.7): the same NXDOMAIN/NODATA choices, dashed-IP endpoint
// names, SRV weights floor(100/N) counted before de-duplication, SOA/NS at the apex, the
// query's case echoed in owner names and in the zone part of targets, SERVFAIL instead of
// NXDOMAIN until the caches have synced. It does no I/O: a CNAME to a name outside the zone
// comes back as a `chase` for the server to forward. Zone transfers are in transfer.ts.

import { parseRequest, stripZone, type Request } from './parse-request.js';
import type { EndpointsEntry, AddressEntry, ServiceEntry, ZoneView } from './record-index.js';
import {
  TYPE,
  RCODE,
  lowerName,
  splitName,
  type ResourceRecord,
  type ResponseParts,
} from './wire.js';
import { canonicalIP } from '../util/ip.js';

export type PodMode = 'disabled' | 'insecure' | 'verified';

/** The `kubernetes` plugin options we implement (CoreDNS names in comments). */
export interface ResolverConfig {
  /** Authoritative zones, lower case, FQDN (`cluster.local.`, `in-addr.arpa.`). */
  readonly zones: readonly string[];
  /** `ttl` (0–3600, default 5). */
  readonly ttl: number;
  /** `pods` (default disabled in the plugin; insecure in kubeadm's Corefile). */
  readonly pods: PodMode;
  /** `namespaces`: exposed namespaces; empty means all. */
  readonly namespaces: readonly string[];
  /** `endpoint_pod_names` */
  readonly endpointPodNames: boolean;
  /** `ignore empty_service` */
  readonly ignoreEmptyService: boolean;
  /** `fallthrough [ZONES]`: undefined is off; an empty list means every zone. */
  readonly fallthrough: readonly string[] | undefined;
  /** `zonal` (CoreDNS 1.14.x): `<zone>.pin|prefer._zone.<headless svc>...` names. */
  readonly zonal: boolean;
  /** `multicluster ZONES` (MCS-API). */
  readonly multiclusterZones: readonly string[];
  /** This server's own IPs, for NS glue. */
  readonly localIPs: readonly string[];
}

export const DEFAULT_RESOLVER_CONFIG: ResolverConfig = {
  zones: ['cluster.local.'],
  ttl: 5,
  pods: 'insecure',
  namespaces: [],
  endpointPodNames: false,
  ignoreEmptyService: false,
  fallthrough: undefined,
  zonal: false,
  multiclusterZones: [],
  localIPs: [],
};

export interface Question {
  /** FQDN as the client sent it (case kept). */
  readonly name: string;
  readonly type: number;
}

/** A response to encode (wire.ts ResponseParts), with the zone that made it. */
export interface Answer extends ResponseParts {
  readonly kind: 'answer';
  /** The zone that answered (lower case), for metrics. */
  readonly zone: string;
}

export type Resolution =
  | Answer
  /** Not in our zones (or a would-be NXDOMAIN under `fallthrough`): forward it. */
  | { readonly kind: 'forward' }
  /**
   * A/AAAA through a CNAME to a name outside our zones: the server looks `target` up
   * upstream; the answer is `prefix` (the CNAME chain) plus the upstream answer records,
   * with the upstream TC bit. If the lookup fails the answer is `onFailure` (NODATA).
   */
  | {
      readonly kind: 'chase';
      readonly prefix: readonly ResourceRecord[];
      readonly target: string;
      readonly type: number;
      readonly onFailure: Answer;
      readonly zone: string;
    };

interface Item {
  /** An IP address, or a name (ExternalName target). */
  readonly host: string;
  readonly port: number;
  /** The record's own name (SRV target / PTR target / NS name). */
  readonly domain: string;
  readonly ttl: number;
  readonly text?: string;
}

interface Found {
  readonly items: readonly Item[];
  /** A name error: NXDOMAIN (or SERVFAIL before sync). */
  readonly nx: boolean;
}

const NX: Found = { items: [], nx: true };
const EMPTY: Found = { items: [], nx: false };

const MAX_CNAME_CHAIN = 10;

function isSubDomain(parent: string, child: string): boolean {
  return child === parent || parent === '.' || child.endsWith(`.${parent}`);
}

function hostKind(host: string): 'A' | 'AAAA' | 'CNAME' {
  if (host.includes(':')) return 'AAAA';
  if (/^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return 'A';
  return 'CNAME';
}

function eqFold(a: string, b: string): boolean {
  return a === b || a.toLowerCase() === b.toLowerCase();
}

/** CoreDNS's endpoint label: hostname, pod name (endpoint_pod_names) or the dashed IP. */
export function endpointHostname(addr: AddressEntry, endpointPodNames: boolean): string {
  if (addr.hostname !== '') return addr.hostname;
  if (endpointPodNames && addr.targetRefName !== '') return addr.targetRefName;
  if (addr.ip.includes('.')) return addr.ip.replaceAll('.', '-');
  if (addr.ip.includes(':')) {
    const h = addr.ip.replaceAll(':', '-');
    return h.endsWith('-') ? `${h}0` : h;
  }
  return '';
}

/** Longest configured zone containing `lname` (lower case), or undefined. */
export function matchZone(zones: readonly string[], lname: string): string | undefined {
  let best: string | undefined;
  for (const z of zones) {
    if (isSubDomain(z, lname) && (best === undefined || z.length > best.length)) best = z;
  }
  return best;
}

/** The IP a reverse name stands for (canonical text), or '' (dnsutil.ExtractAddressFromReverse). */
export function addressFromReverse(lname: string): string {
  if (lname.endsWith('.in-addr.arpa.')) {
    const labels = lname.slice(0, -'.in-addr.arpa.'.length).split('.').reverse();
    const text = labels.join('.');
    if (!/^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(text)) return '';
    if (labels.some((l) => l.length > 1 && l.startsWith('0'))) return '';
    return canonicalIP(text) ?? '';
  }
  if (lname.endsWith('.ip6.arpa.')) {
    const nibbles = lname.slice(0, -'.ip6.arpa.'.length).split('.').reverse();
    if (nibbles.length !== 32 || nibbles.some((n) => !/^[0-9a-f]$/.test(n))) return '';
    const groups: string[] = [];
    for (let i = 0; i < 32; i += 4) groups.push(nibbles.slice(i, i + 4).join(''));
    return canonicalIP(groups.join(':')) ?? '';
  }
  return '';
}

/** The reverse name of an IP (`d.c.b.a.in-addr.arpa.` or the 32-nibble ip6.arpa form). */
export function reverseName(ip: string): string | undefined {
  const c = canonicalIP(ip);
  if (c === undefined) return undefined;
  if (!c.includes(':')) return `${c.split('.').reverse().join('.')}.in-addr.arpa.`;
  const groups = c.split('::');
  const left = (groups[0] ?? '') === '' ? [] : (groups[0] ?? '').split(':');
  const right = groups.length > 1 && (groups[1] ?? '') !== '' ? (groups[1] ?? '').split(':') : [];
  const all = [...left, ...new Array<string>(8 - left.length - right.length).fill('0'), ...right];
  const hex = all.map((g) => g.padStart(4, '0')).join('');
  return `${hex.split('').reverse().join('.')}.ip6.arpa.`;
}

function isReverse(lname: string): boolean {
  return lname.endsWith('.in-addr.arpa.') || lname.endsWith('.ip6.arpa.');
}

/** One query being answered: the view, the config and the zone it matched. */
class Lookup {
  readonly multicluster: boolean;
  readonly view: ZoneView;
  readonly cfg: ResolverConfig;
  /** Matched zone, lower case. */
  readonly zone: string;
  /** The same zone as the client wrote it. */
  readonly zoneCase: string;

  constructor(view: ZoneView, cfg: ResolverConfig, zone: string, zoneCase: string) {
    this.view = view;
    this.cfg = cfg;
    this.zone = zone;
    this.zoneCase = zoneCase;
    this.multicluster = cfg.multiclusterZones.some((z) => isSubDomain(z, zone));
  }

  private configuredNamespace(ns: string): boolean {
    return this.cfg.namespaces.length === 0 || this.cfg.namespaces.includes(ns);
  }

  namespaceExposed(ns: string): boolean {
    return this.configuredNamespace(ns) && this.view.namespaceExists(ns);
  }

  private request(lname: string, zonal: boolean): Request | undefined {
    return parseRequest(lname, this.zone, { multicluster: this.multicluster, zonal });
  }

  /** CoreDNS Records. */
  records(lname: string): Found {
    const r = this.request(lname, this.cfg.zonal);
    if (r === undefined) return NX;
    if (r.podOrSvc === '') return EMPTY;
    if (isReverse(lname)) return NX;
    if (!this.namespaceExposed(r.namespace)) return NX;
    if (r.podOrSvc === 'pod') return this.findPods(r);
    return this.multicluster ? this.findMultiClusterServices(r) : this.findServices(r);
  }

  private svcDomain(svc: { name: string; namespace: string }, ...more: string[]): string {
    return [...more, svc.name, svc.namespace, 'svc', this.zoneCase].join('.');
  }

  private findPods(r: Request): Found {
    if (this.cfg.pods === 'disabled') return NX;
    if (r.service === '') return EMPTY;
    const podname = r.service;
    const dashes = podname.split('-').length - 1;
    const ip =
      dashes === 3 && !podname.includes('--')
        ? podname.replaceAll('-', '.')
        : podname.replaceAll('-', ':');
    const domain = [podname, r.namespace, 'pod', this.zoneCase].join('.');
    const ttl = this.cfg.ttl;
    const canonical = canonicalIP(ip);
    if (this.cfg.pods === 'insecure') {
      if (canonical === undefined || /[^0-9a-f.:]/.test(ip)) return NX;
      return { items: [{ host: canonical, port: 0, domain, ttl }], nx: false };
    }
    if (canonical === undefined) return NX;
    const items: Item[] = [];
    for (const p of this.view.podsByIP(canonical)) {
      if (eqFold(p.namespace, r.namespace)) items.push({ host: canonical, port: 0, domain, ttl });
    }
    return items.length > 0 ? { items, nx: false } : NX;
  }

  private endpointItems(
    svc: ServiceEntry,
    slices: readonly EndpointsEntry[],
    r: Request,
    topologyZone: string,
    withCluster: boolean,
  ): Item[] {
    const items: Item[] = [];
    for (const ep of slices) {
      for (const addr of ep.addresses) {
        if (topologyZone !== '' && addr.zone !== topologyZone) continue;
        const host = endpointHostname(addr, this.cfg.endpointPodNames);
        if (r.endpoint !== '') {
          if (withCluster && !eqFold(r.cluster, ep.clusterId)) continue;
          if (!eqFold(r.endpoint, host)) continue;
        }
        for (const p of ep.ports) {
          if (!matchPortAndProtocol(r.port, p.name, r.protocol, p.protocol)) continue;
          const labels = withCluster ? [host, ep.clusterId] : [host];
          items.push({
            host: addr.ip,
            port: p.port,
            domain: this.svcDomain(svc, ...labels),
            ttl: this.cfg.ttl,
          });
        }
      }
    }
    return items;
  }

  private hasAddresses(slices: readonly EndpointsEntry[]): boolean {
    return slices.some((s) => s.addresses.length > 0);
  }

  /** A ClusterIP Service (or ServiceImport): its IPs on each matching port; NX if none match. */
  private clusterIPItems(svc: ServiceEntry, r: Request): Found {
    const items: Item[] = [];
    let matched = false;
    for (const p of svc.ports) {
      if (!matchPortAndProtocol(r.port, p.name, r.protocol, p.protocol)) continue;
      matched = true;
      for (const ip of svc.clusterIPs)
        items.push({ host: ip, port: p.port, domain: this.svcDomain(svc), ttl: this.cfg.ttl });
    }
    return { items, nx: !matched };
  }

  private findServices(r: Request): Found {
    if (r.service === '') return EMPTY;
    const svc = this.view.service(r.service, r.namespace);
    if (svc === undefined) return NX;
    const ttl = this.cfg.ttl;
    const slices = (): readonly EndpointsEntry[] => this.view.endpoints(svc.name, svc.namespace);
    if (this.cfg.ignoreEmptyService && svc.kind === 'ClusterIP' && !this.hasAddresses(slices()))
      return NX;
    if (r.topologyZone !== '' && svc.kind !== 'Headless') return NX;
    if (svc.kind === 'ExternalName') {
      if (r.endpoint !== '' || r.port !== '' || r.protocol !== '') return NX;
      if (hostKind(svc.externalName) !== 'CNAME') return NX;
      return {
        items: [{ host: svc.externalName, port: 0, domain: this.svcDomain(svc), ttl }],
        nx: false,
      };
    }
    if (svc.kind === 'Headless' || r.endpoint !== '') {
      let items = this.endpointItems(svc, slices(), r, r.topologyZone, false);
      if (items.length === 0 && r.zonePrefer)
        items = this.endpointItems(svc, slices(), r, '', false);
      // A zonal name of a headless Service exists even when no endpoint is in that zone.
      return { items, nx: items.length === 0 && r.topologyZone === '' };
    }
    return this.clusterIPItems(svc, r);
  }

  private findMultiClusterServices(r: Request): Found {
    if (r.service === '') return EMPTY;
    const svc = this.view.serviceImport(r.service, r.namespace);
    if (svc === undefined) return NX;
    const slices = this.view.multiClusterEndpoints(svc.name, svc.namespace);
    if (this.cfg.ignoreEmptyService && svc.kind !== 'Headless' && !this.hasAddresses(slices))
      return NX;
    if (svc.kind === 'Headless' || r.endpoint !== '') {
      const items = this.endpointItems(svc, slices, r, '', true);
      return { items, nx: items.length === 0 };
    }
    return this.clusterIPItems(svc, r);
  }

  /** NS addresses: the ClusterIPs of the Service(s) whose endpoints are this server. */
  nsAddrs(): Item[] {
    const items: Item[] = [];
    let found = false;
    const ttl = this.cfg.ttl;
    for (const local of this.cfg.localIPs) {
      const ip = canonicalIP(local);
      if (ip === undefined) continue;
      for (const ep of this.view.endpointsByIP(ip)) {
        if (ep.clusterId !== '') continue;
        found = true;
        const svc = this.view.service(ep.service, ep.namespace);
        if (!svc) continue;
        if (svc.kind === 'Headless') {
          for (const a of ep.addresses)
            items.push({
              host: a.ip,
              port: 0,
              domain: this.svcDomain(svc, endpointHostname(a, this.cfg.endpointPodNames)),
              ttl,
            });
        } else {
          for (const c of svc.clusterIPs)
            items.push({ host: c, port: 0, domain: this.svcDomain(svc), ttl });
        }
      }
    }
    if (!found) {
      for (const local of this.cfg.localIPs) {
        const ip = canonicalIP(local);
        if (ip !== undefined)
          items.push({ host: ip, port: 0, domain: `ns.dns.${this.zoneCase}`, ttl });
      }
    }
    return items;
  }

  /** CoreDNS Services (the kubernetes plugin's ServiceBackend). */
  services(lname: string, qtype: number): Found {
    if (qtype === TYPE.TXT) {
      const segs = splitName(stripZone(lname, this.zone));
      if (segs.length === 1 && segs[0] === 'dns-version')
        return { items: [{ host: '', port: 0, domain: '', ttl: 28800, text: '1.1.0' }], nx: false };
      const found = this.records(lname);
      if (found.items.length > 0) return EMPTY;
      if (!found.nx && this.cfg.zonal) {
        const r = this.request(lname, true);
        if (r !== undefined && r.topologyZone !== '') return EMPTY;
      }
      return NX;
    }
    if (qtype === TYPE.NS) return { items: this.nsAddrs(), nx: false };
    if (lname === `ns.dns.${this.zone}`) {
      const want = qtype === TYPE.A ? 'A' : qtype === TYPE.AAAA ? 'AAAA' : '';
      return { items: this.nsAddrs().filter((i) => hostKind(i.host) === want), nx: false };
    }
    const found = this.records(lname);
    if (qtype !== TYPE.SRV) return found;
    return { items: found.items.filter((i) => hostKind(i.host) !== 'CNAME'), nx: found.nx };
  }

  soa(): ResourceRecord {
    return {
      name: this.zoneCase,
      type: 'SOA',
      ttl: Math.min(this.cfg.ttl, 300),
      mname: `ns.dns.${this.zoneCase}`,
      rname: `hostmaster.${this.zoneCase}`,
      serial: this.view.serial(this.multicluster) >>> 0,
      refresh: 7200,
      retry: 1800,
      expire: 86400,
      minimum: this.cfg.ttl,
    };
  }
}

function matchPortAndProtocol(aPort: string, bPort: string, aProto: string, bProto: string) {
  return (aPort === '' || eqFold(aPort, bPort)) && (aProto === '' || eqFold(aProto, bProto));
}

interface AddressResult {
  records: ResourceRecord[];
  nx: boolean;
  chase?: { prefix: ResourceRecord[]; target: string };
}

/** CoreDNS plugin.A / plugin.AAAA, with the external CNAME lookup returned as a chase. */
function addresses(
  lk: Lookup,
  qname: string,
  qtype: number,
  previous: readonly ResourceRecord[],
): AddressResult {
  const lname = lowerName(qname);
  const found = lk.services(lname, qtype);
  if (found.nx) return { records: [], nx: true };
  const want = qtype === TYPE.AAAA ? 'AAAA' : 'A';
  const records: ResourceRecord[] = [];
  const dup = new Set<string>();
  for (const item of found.items) {
    const kind = hostKind(item.host);
    if (kind === 'CNAME') {
      const target = item.host;
      const ltarget = lowerName(target);
      if (isSubDomain(lname, ltarget)) continue;
      const cname: ResourceRecord = { name: qname, type: 'CNAME', ttl: item.ttl, target };
      if (previous.length > MAX_CNAME_CHAIN) continue;
      if (
        previous.some(
          (p) =>
            p.type === 'CNAME' && lowerName(p.name) === lname && lowerName(p.target) === ltarget,
        )
      )
        continue;
      if (isSubDomain(lk.zone, ltarget)) {
        const next = addresses(lk, target, qtype, [...previous, cname]);
        if (next.chase)
          return {
            records,
            nx: false,
            chase: { ...next.chase, prefix: [cname, ...next.chase.prefix] },
          };
        if (!next.nx && next.records.length > 0) records.push(cname, ...next.records);
        continue;
      }
      return { records, nx: false, chase: { prefix: [cname], target } };
    }
    if (kind === want && !dup.has(item.host)) {
      dup.add(item.host);
      records.push({ name: qname, type: want, ttl: item.ttl, address: item.host });
    }
  }
  return { records, nx: false };
}

function srv(
  lk: Lookup,
  qname: string,
): { nx: boolean; answer: ResourceRecord[]; extra: ResourceRecord[] } {
  const found = lk.services(lowerName(qname), TYPE.SRV);
  if (found.nx) return { nx: true, answer: [], extra: [] };
  const n = found.items.length;
  const answer: ResourceRecord[] = [];
  const extra: ResourceRecord[] = [];
  const dup = new Set<string>();
  for (const item of found.items) {
    if (item.port === -1) continue;
    const weight = Math.max(1, Math.floor(10000 / (100 * n)));
    const kind = hostKind(item.host);
    if (kind === 'CNAME') continue;
    const srvKey = `${item.domain}\u0000\u0000${item.port}`;
    if (!dup.has(srvKey)) {
      dup.add(srvKey);
      answer.push({
        name: qname,
        type: 'SRV',
        ttl: item.ttl,
        priority: 0,
        weight,
        port: item.port,
        target: item.domain,
      });
    }
    const glueKey = `${item.domain}\u0000${item.host}\u00000`;
    if (!dup.has(glueKey)) {
      dup.add(glueKey);
      extra.push({ name: item.domain, type: kind, ttl: item.ttl, address: item.host });
    }
  }
  return { nx: false, answer, extra };
}

function primaryZone(cfg: ResolverConfig): string {
  return (
    cfg.zones.find((z) => !isReverse(z) && z !== 'in-addr.arpa.' && z !== 'ip6.arpa.') ??
    cfg.zones[0] ??
    'cluster.local.'
  );
}

function ptr(lk: Lookup, qname: string): Found & { records: ResourceRecord[] } {
  const lname = lowerName(qname);
  const ip = addressFromReverse(lname);
  if (ip === '') {
    const found = lk.records(lname);
    return { items: [], nx: found.nx, records: [] };
  }
  const zone = primaryZone(lk.cfg);
  const filter = lk.cfg.namespaces.length > 0;
  const targets: string[] = [];
  for (const svc of lk.view.servicesByClusterIP(ip)) {
    if (filter && !lk.namespaceExposed(svc.namespace)) continue;
    targets.push(`${svc.name}.${svc.namespace}.svc.${zone}`);
    break;
  }
  if (targets.length === 0) {
    for (const ep of lk.view.endpointsByIP(ip)) {
      if (ep.clusterId !== '') continue;
      if (filter && !lk.namespaceExposed(ep.namespace)) continue;
      for (const a of ep.addresses) {
        if (a.ip === ip)
          targets.push(
            `${endpointHostname(a, lk.cfg.endpointPodNames)}.${ep.service}.${ep.namespace}.svc.${zone}`,
          );
      }
    }
  }
  if (targets.length === 0) return { items: [], nx: true, records: [] };
  const seen = new Set<string>();
  const records: ResourceRecord[] = [];
  for (const t of targets) {
    if (seen.has(t)) continue;
    seen.add(t);
    records.push({ name: qname, type: 'PTR', ttl: lk.cfg.ttl, target: t });
  }
  return { items: [], nx: false, records };
}

/**
 * Answers one question. `synced` is false until the informers have listed once: then a
 * would-be NXDOMAIN is SERVFAIL (CoreDNS), because the name may simply not be known yet.
 * AXFR/IXFR are REFUSED here (the server runs transfers itself when enabled).
 */
export function resolve(
  view: ZoneView,
  cfg: ResolverConfig,
  q: Question,
  synced: boolean,
): Resolution {
  const lname = lowerName(q.name);
  const zone = matchZone(cfg.zones, lname);
  if (zone === undefined) return { kind: 'forward' };
  const zoneCase = zone === '.' ? '.' : q.name.slice(q.name.length - zone.length);
  const lk = new Lookup(view, cfg, zone, zoneCase);
  let answer: ResourceRecord[] = [];
  let extra: ResourceRecord[] = [];
  let nx = false;
  switch (q.type) {
    case TYPE.A:
    case TYPE.AAAA: {
      const r = addresses(lk, q.name, q.type, []);
      if (r.chase) {
        return {
          kind: 'chase',
          prefix: r.chase.prefix,
          target: r.chase.target,
          type: q.type,
          zone,
          onFailure: negative(lk, RCODE.NOERROR),
        };
      }
      answer = r.records;
      nx = r.nx;
      break;
    }
    case TYPE.TXT: {
      const found = lk.services(lname, TYPE.TXT);
      nx = found.nx;
      for (const i of found.items)
        if (i.text !== undefined)
          answer.push({ name: q.name, type: 'TXT', ttl: i.ttl, text: [i.text] });
      break;
    }
    case TYPE.CNAME: {
      const found = lk.services(lname, TYPE.CNAME);
      nx = found.nx;
      const first = found.items[0];
      if (first && hostKind(first.host) === 'CNAME')
        answer.push({ name: q.name, type: 'CNAME', ttl: first.ttl, target: first.host });
      break;
    }
    case TYPE.PTR: {
      const r = ptr(lk, q.name);
      nx = r.nx;
      answer = r.records;
      break;
    }
    case TYPE.SRV: {
      const r = srv(lk, q.name);
      nx = r.nx;
      answer = r.answer;
      extra = r.extra;
      break;
    }
    case TYPE.SOA:
      if (lname === zone) answer.push(lk.soa());
      break;
    case TYPE.AXFR:
    case TYPE.IXFR:
      return {
        kind: 'answer',
        rcode: RCODE.REFUSED,
        authoritative: false,
        answer: [],
        authority: [],
        additional: [],
        zone,
      };
    case TYPE.NS:
      if (lname === zone) {
        const seen = new Set<string>();
        for (const item of lk.services(lname, TYPE.NS).items) {
          const kind = hostKind(item.host);
          if (kind === 'CNAME') continue;
          extra.push({ name: item.domain, type: kind, ttl: item.ttl, address: item.host });
          if (seen.has(item.domain)) continue;
          seen.add(item.domain);
          answer.push({ name: q.name, type: 'NS', ttl: item.ttl, target: item.domain });
        }
        break;
      }
      nx = addresses(lk, q.name, TYPE.A, []).nx;
      break;
    default:
      // A type the plugin has no records of: a fake A lookup tells NODATA from NXDOMAIN.
      nx = addresses(lk, q.name, TYPE.A, []).nx;
  }
  if (nx) {
    if (cfg.fallthrough !== undefined) {
      const through =
        cfg.fallthrough.length === 0 || cfg.fallthrough.some((z) => isSubDomain(z, lname));
      if (through) return { kind: 'forward' };
    }
    return negative(lk, synced ? RCODE.NXDOMAIN : RCODE.SERVFAIL);
  }
  if (answer.length === 0) return negative(lk, RCODE.NOERROR);
  return {
    kind: 'answer',
    rcode: RCODE.NOERROR,
    authoritative: true,
    answer,
    authority: [],
    additional: extra,
    zone,
  };
}

function negative(lk: Lookup, rcode: number): Answer {
  return {
    kind: 'answer',
    rcode,
    authoritative: true,
    answer: [],
    authority: [lk.soa()],
    additional: [],
    zone: lk.zone,
  };
}

/** Context for zone transfers (transfer.ts). */
export function lookupFor(
  view: ZoneView,
  cfg: ResolverConfig,
  zone: string,
): { soa: ResourceRecord; ns: Item[]; namespaceExposed: (ns: string) => boolean } {
  const lk = new Lookup(view, cfg, zone, zone);
  return { soa: lk.soa(), ns: lk.nsAddrs(), namespaceExposed: (ns) => lk.namespaceExposed(ns) };
}
