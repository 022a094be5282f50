// From Kubernetes objects to an IPVS plan in one call: Services and EndpointSlices go
// through the shared change trackers (iptables/plan-objects.ts trackObjects) into a
// snapshot, and the snapshot through `planIpvs`. `svcnet render --mode ipvs` and tests plan
// this way. Pure.

import type { EndpointSlice, Service } from '../../kube/types.js';
import type { IPFamily } from '../../util/ip.js';
import { trackObjects } from '../iptables/plan-objects.js';
import type { IpvsProxierOptions } from './options.js';
import { planIpvs } from './plan.js';
import type { IpvsPlan } from './plan.js';

/** The plan of one family for these objects; `warnings` holds the trackers' notes. */
export function planIpvsFromObjects(
  services: Iterable<Service>,
  slices: Iterable<EndpointSlice>,
  options: IpvsProxierOptions,
  family: IPFamily,
): { readonly plan: IpvsPlan; readonly warnings: readonly string[] } {
  const t = trackObjects(services, slices, family, options.nodeName, true);
  const plan = planIpvs({
    family,
    services: t.snapshot.services,
    endpoints: t.snapshot.endpoints,
    options,
  });
  return { plan, warnings: t.warnings };
}
