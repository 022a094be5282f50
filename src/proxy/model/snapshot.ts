// ProxySnapshot: everything one sync of one IP family reads — the Service ports, their
// endpoints and what changed since the previous sync — taken from the change trackers at
// the start of a sync. Plain data; the plan functions read it and never change it.

import type { IPFamily } from '../../util/ip.js';
import type { ServicePortMap } from './service-change-tracker.js';
import type { EndpointsMap } from './endpoints-change-tracker.js';
import { ServiceChangeTracker } from './service-change-tracker.js';
import { EndpointsChangeTracker } from './endpoints-change-tracker.js';

export interface ProxySnapshot {
  readonly family: IPFamily;
  readonly services: ServicePortMap;
  readonly endpoints: EndpointsMap;
  /** `namespace/name` of Services whose ports or endpoints changed since the last snapshot. */
  readonly changedServices: ReadonlySet<string>;
  readonly conntrackCleanupRequired: boolean;
  readonly deletedUDPClusterIPs: ReadonlySet<string>;
  readonly lastChangeTriggerTimes: ReadonlyMap<string, readonly string[]>;
}

/** Applies both trackers' pending changes and returns the resulting snapshot. */
export function takeSnapshot(
  services: ServiceChangeTracker,
  endpoints: EndpointsChangeTracker,
): ProxySnapshot {
  const s = services.apply();
  const e = endpoints.apply();
  return {
    family: services.family,
    services: s.services,
    endpoints: e.endpoints,
    changedServices: new Set([...s.updatedServices, ...e.updatedServices]),
    conntrackCleanupRequired: e.conntrackCleanupRequired,
    deletedUDPClusterIPs: s.deletedUDPClusterIPs,
    lastChangeTriggerTimes: e.lastChangeTriggerTimes,
  };
}
