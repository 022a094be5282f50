// ServiceChangeTracker folds Service informer events (previous/current pairs) into pending
// per-Service changes, and applies them to its ServicePortMap on demand. A burst of events
// that ends where it started (add then delete, or an update that changes nothing kube-proxy
// cares about) cancels out and marks nothing changed. One tracker per IP family. Pure.

import type { Service } from '../../kube/types.js';
import type { IPFamily } from '../../util/ip.js';
import { servicePortsFor } from './service-port.js';
import type { ServicePortInfo } from './service-port.js';

/** All programmed Service ports of one family, keyed by servicePortKey. */
export type ServicePortMap = ReadonlyMap<string, ServicePortInfo>;

interface ServiceChange {
  readonly previous: ReadonlyMap<string, ServicePortInfo>;
  current: ReadonlyMap<string, ServicePortInfo>;
  previousText: string;
}

export interface ServiceUpdateResult {
  readonly services: ServicePortMap;
  /** `namespace/name` of every Service whose ports changed since the last apply(). */
  readonly updatedServices: ReadonlySet<string>;
  /** ClusterIPs of UDP ports that went away (their conntrack entries are stale). */
  readonly deletedUDPClusterIPs: ReadonlySet<string>;
}

function portsOf(svc: Service | undefined, family: IPFamily, warn: (w: string) => void) {
  const m = new Map<string, ServicePortInfo>();
  if (!svc) return m;
  const r = servicePortsFor(svc, family);
  for (const w of r.warnings)
    warn(`Service ${svc.metadata?.namespace ?? 'default'}/${svc.metadata?.name ?? ''}: ${w}`);
  for (const p of r.ports) m.set(p.key, p);
  return m;
}

function textOf(m: ReadonlyMap<string, ServicePortInfo>): string {
  return JSON.stringify([...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)));
}

/** Tracks Service changes for one IP family (see file header). */
export class ServiceChangeTracker {
  readonly family: IPFamily;
  private readonly items = new Map<string, ServiceChange>();
  private readonly map = new Map<string, ServicePortInfo>();
  private readonly warnings: string[] = [];

  constructor(family: IPFamily) {
    this.family = family;
  }

  /**
   * Records one informer event: (undefined, svc) is an add, (old, new) an update,
   * (svc, undefined) a delete. Returns true while there are pending changes.
   */
  update(previous: Service | undefined, current: Service | undefined): boolean {
    const svc = current ?? previous;
    if (!svc) return this.items.size > 0;
    const key = `${svc.metadata?.namespace ?? 'default'}/${svc.metadata?.name ?? ''}`;
    const warn = (w: string) => this.warnings.push(w);
    let change = this.items.get(key);
    if (!change) {
      const prev = portsOf(previous, this.family, () => undefined);
      change = { previous: prev, current: prev, previousText: textOf(prev) };
      this.items.set(key, change);
    }
    change.current = portsOf(current, this.family, warn);
    if (textOf(change.current) === change.previousText) this.items.delete(key);
    return this.items.size > 0;
  }

  /** Number of Services with pending changes. */
  get pending(): number {
    return this.items.size;
  }

  /** Warnings collected by update() since the last call (e.g. wrong-family externalIPs). */
  takeWarnings(): string[] {
    return this.warnings.splice(0);
  }

  /** The current map (as of the last apply()). */
  get services(): ServicePortMap {
    return this.map;
  }

  /** Applies pending changes to the map and reports which Services changed. */
  apply(): ServiceUpdateResult {
    const updated = new Set<string>();
    const deletedUDP = new Set<string>();
    for (const [key, change] of this.items) {
      updated.add(key);
      for (const [k, p] of change.previous) {
        if (change.current.has(k)) continue;
        this.map.delete(k);
        if (p.protocol === 'UDP') deletedUDP.add(p.clusterIP);
      }
      for (const [k, p] of change.current) this.map.set(k, p);
    }
    this.items.clear();
    return { services: this.map, updatedServices: updated, deletedUDPClusterIPs: deletedUDP };
  }
}
