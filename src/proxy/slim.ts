// What the proxy's Service and EndpointSlice informers drop from each object as it arrives
// (the `slim` informer option): the server-side-apply field owners and kubectl's copy of
// the last applied configuration, which nothing in the proxy reads and which are often
// larger than the rest of the object. Everything else is kept, so every consumer of the
// objects (trackers, validation, logs) sees them as before.

import type { KubeObject } from '../kube/types.js';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** Drops `metadata.managedFields` and the last-applied annotation, in place. */
export function slimForProxy(obj: KubeObject): void {
  const md = obj.metadata;
  if (md === undefined) return;
  delete md.managedFields;
  const annotations = md.annotations;
  if (annotations !== undefined) Reflect.deleteProperty(annotations, LAST_APPLIED);
}
