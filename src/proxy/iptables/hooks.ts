// Where kube-proxy's jumps from the built-in chains end up. `jumpRules()` (plan-fixed.ts) is
// the one source: the jumps in the order kube-proxy ensures them, each inserted at the top of
// its chain when missing (plan-hooks.ts writes those inserts on full syncs, `svcnet render`
// prints them). `hooksInLiveOrder` plays that same sequence of inserts and returns the jumps
// in the order a node then holds them, for whoever reads rules rather than writes them: the
// tracer (`trace/from-manifests.ts` and the jumps `trace/hooks.ts` assumes for a document
// without them). Pure.

import { jumpRules } from './plan-fixed.js';
import type { JumpRule } from './plan-fixed.js';
import { KUBE_FIREWALL } from './names.js';

/**
 * What was in the built-in chains before kube-proxy's first full sync:
 * - `proxy-only`: nothing (a node svcnet's proxy set up alone, e.g. the lab and the tests);
 * - `kubelet-first`: kubelet's own jumps to KUBE-FIREWALL (kubelets that still run their
 *   iptables setup, e.g. kind nodes, install them before kube-proxy starts; kube-proxy then
 *   finds them present and inserts its other jumps above them).
 */
export type HookHistory = 'proxy-only' | 'kubelet-first';

/**
 * The jumps of `jumps` (default `jumpRules()`) in the order a live node holds them after
 * kube-proxy ensured them one by one at the top of their chains. Within each built-in chain
 * the list is in chain order; across chains, the one inserted last comes first.
 */
export function hooksInLiveOrder(
  history: HookHistory = 'proxy-only',
  jumps: readonly JumpRule[] = jumpRules(),
): JumpRule[] {
  const preinstalled = (j: JumpRule): boolean =>
    history === 'kubelet-first' && j.table === 'filter' && j.targetChain === KUBE_FIREWALL;
  const live = jumps.filter(preinstalled);
  for (const j of jumps) if (!preinstalled(j)) live.unshift(j);
  return live;
}
