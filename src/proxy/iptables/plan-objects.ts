// From Kubernetes objects to a plan in one call: Services and EndpointSlices go through the
// change trackers into a snapshot, and the snapshot through `planIptables` as one full sync.
// `svcnet render`, `svcnet trace -f`, tests and benches plan this way; the proxier keeps its
// own long-lived trackers (it feeds them events) but takes the same snapshot → plan step.
// Pure.

import type { EndpointSlice, Service } from '../../kube/types.js';
import type { IPFamily } from '../../util/ip.js';
import { EndpointsChangeTracker } from '../model/endpoints-change-tracker.js';
import { ServiceChangeTracker } from '../model/service-change-tracker.js';
import { takeSnapshot } from '../model/snapshot.js';
import type { ProxySnapshot } from '../model/snapshot.js';
import type { IptablesProxierOptions } from './options.js';
import { planIptables } from './plan.js';
import type { IptablesPlan } from './plan.js';

/** Trackers fed with a set of objects, and their first snapshot. */
export interface TrackedObjects {
  readonly services: ServiceChangeTracker;
  readonly endpoints: EndpointsChangeTracker;
  readonly snapshot: ProxySnapshot;
  /** What the Service tracker noted about objects it skipped or narrowed. */
  readonly warnings: readonly string[];
}

/**
 * Feeds `services` and `slices` to new trackers of `family` and takes their snapshot. An
 * object a tracker refuses throws, unless `skipRefused` is set: then it is left out, as the
 * proxy daemon leaves it out (after logging and counting it).
 */
export function trackObjects(
  services: Iterable<Service>,
  slices: Iterable<EndpointSlice>,
  family: IPFamily,
  nodeName: string,
  skipRefused = false,
): TrackedObjects {
  const st = new ServiceChangeTracker(family);
  const et = new EndpointsChangeTracker(family, nodeName);
  const feed = (update: () => unknown): void => {
    try {
      update();
    } catch (e) {
      if (!skipRefused) throw e;
    }
  };
  for (const s of services) feed(() => st.update(undefined, s));
  for (const s of slices) feed(() => et.update(undefined, s));
  const warnings = st.takeWarnings();
  return { services: st, endpoints: et, snapshot: takeSnapshot(st, et), warnings };
}

/**
 * The full-sync plan of one family for these objects. `warnings` holds the trackers' notes;
 * the plan's own are in `plan.warnings`.
 */
export function planFromObjects(
  services: Iterable<Service>,
  slices: Iterable<EndpointSlice>,
  options: IptablesProxierOptions,
  family: IPFamily,
): { readonly plan: IptablesPlan; readonly warnings: readonly string[] } {
  const t = trackObjects(services, slices, family, options.nodeName);
  const plan = planIptables({
    family,
    services: t.snapshot.services,
    endpoints: t.snapshot.endpoints,
    options,
    changedServices: 'all',
  });
  return { plan, warnings: t.warnings };
}
