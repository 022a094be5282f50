// Zone transfer (AXFR, and IXFR answered as "up to date" or a full AXFR) of a cluster zone,
// in CoreDNS's order (plugin/kubernetes/xfr.go): SOA, NS, NS glue, every exposed Service
// sorted by name (address records, a bare-name SRV per port and a _port._proto SRV per named
// port; headless: per ready address the Service and endpoint address records and SRVs with
// weight floor(100/addresses in the slice); ExternalName: its CNAME), then the SOA again.
// Served only over TCP and only when `transfer` is enabled. Pure.

import type { ServiceEntry, ZoneView } from './record-index.js';
import { endpointHostname, lookupFor, type ResolverConfig } from './resolve.js';
import type { ResourceRecord } from './wire.js';

function addressRecord(name: string, ip: string, ttl: number): ResourceRecord {
  return { name, type: ip.includes(':') ? 'AAAA' : 'A', ttl, address: ip };
}

function serviceRecords(
  view: ZoneView,
  cfg: ResolverConfig,
  svc: ServiceEntry,
  zone: string,
  out: ResourceRecord[],
): void {
  const ttl = cfg.ttl;
  const base = `${svc.name}.${svc.namespace}.svc.${zone}`;
  if (svc.kind === 'ExternalName') {
    out.push({ name: base, type: 'CNAME', ttl, target: svc.externalName });
    return;
  }
  if (svc.kind === 'ClusterIP') {
    if (svc.clusterIPs.length === 0) return;
    for (const ip of svc.clusterIPs) out.push(addressRecord(base, ip, ttl));
    for (const p of svc.ports) {
      const srv = {
        type: 'SRV' as const,
        ttl,
        priority: 0,
        weight: 100,
        port: p.port,
        target: base,
      };
      out.push({ name: base, ...srv });
      if (p.name !== '')
        out.push({ name: `_${p.name.toLowerCase()}._${p.protocol.toLowerCase()}.${base}`, ...srv });
    }
    return;
  }
  for (const ep of view.endpoints(svc.name, svc.namespace)) {
    const weight = Math.max(1, Math.floor(100 / Math.max(ep.addresses.length, 1)));
    for (const a of ep.addresses) {
      out.push(addressRecord(base, a.ip, ttl));
      const host = `${endpointHostname(a, cfg.endpointPodNames)}.${base}`;
      out.push(addressRecord(host, a.ip, ttl));
      for (const p of ep.ports) {
        if (p.name === '') continue;
        out.push({
          name: `_${p.name.toLowerCase()}._${p.protocol.toLowerCase()}.${base}`,
          type: 'SRV',
          ttl,
          priority: 0,
          weight,
          port: p.port,
          target: host,
        });
      }
    }
  }
}

/**
 * The records of a transfer of `zone` (lower case, one of cfg.zones). With `ixfrSerial`
 * equal to the current serial the transfer is just the SOA (the client is up to date).
 */
export function zoneTransfer(
  view: ZoneView,
  cfg: ResolverConfig,
  zone: string,
  ixfrSerial?: number,
): ResourceRecord[] {
  const { soa, ns, namespaceExposed } = lookupFor(view, cfg, zone);
  if (soa.type === 'SOA' && ixfrSerial !== undefined && ixfrSerial === soa.serial) return [soa];
  const out: ResourceRecord[] = [soa];
  const seen = new Set<string>();
  for (const n of ns) {
    if (seen.has(n.domain)) continue;
    seen.add(n.domain);
    out.push({ name: zone, type: 'NS', ttl: cfg.ttl, target: n.domain });
  }
  for (const n of ns) out.push(addressRecord(n.domain, n.host, n.ttl));
  const multicluster = cfg.multiclusterZones.includes(zone);
  const services = [...(multicluster ? view.allServiceImports() : view.allServices())].sort(
    (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
  for (const svc of services) {
    if (!namespaceExposed(svc.namespace)) continue;
    serviceRecords(view, cfg, svc, zone, out);
  }
  out.push(soa);
  return out;
}
