// From Kubernetes objects to an nftables plan in one call: Services and EndpointSlices go
// through the shared change trackers (iptables/plan-objects.ts trackObjects) into a
// snapshot, and the snapshot through `planNftables` as one full sync. `svcnet render --mode
// nftables`, `svcnet trace -f --mode nftables`, tests and benches plan this way; the
// proxier keeps its own long-lived trackers but takes the same snapshot → plan step. Pure.

import type { EndpointSlice, Service } from '../../kube/types.js';
import type { IPFamily } from '../../util/ip.js';
import { trackObjects } from '../iptables/plan-objects.js';
import type { NftablesProxierOptions } from './options.js';
import { planNftables } from './plan.js';
import type { NftablesPlan } from './plan.js';

/**
 * The full-sync plan of one family for these objects, as a fresh proxier's first sync
 * writes it (`recreateBaseChains` defaults to true, like kube-proxy's first sync).
 * `warnings` holds the trackers' notes; the plan's own are in `plan.warnings`.
 */
export function planNftablesFromObjects(
  services: Iterable<Service>,
  slices: Iterable<EndpointSlice>,
  options: NftablesProxierOptions,
  family: IPFamily,
  extra: { readonly recreateBaseChains?: boolean; readonly nowMs?: number } = {},
): { readonly plan: NftablesPlan; readonly warnings: readonly string[] } {
  const t = trackObjects(services, slices, family, options.nodeName, true);
  const plan = planNftables({
    family,
    services: t.snapshot.services,
    endpoints: t.snapshot.endpoints,
    options,
    changedServices: 'all',
    nowMs: extra.nowMs ?? 0,
    ...(extra.recreateBaseChains !== undefined
      ? { recreateBaseChains: extra.recreateBaseChains }
      : {}),
  });
  return { plan, warnings: t.warnings };
}
