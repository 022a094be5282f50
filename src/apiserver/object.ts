// Small helpers on stored API objects: the stored-object type, object keys and timestamps.
// Pure. Generic JSON helpers (isPlainObject, clone, deepEqual) are util/json.ts.

import type { KubeObject, ObjectMeta } from '../kube/types.js';

/** An object as stored: plain JSON with metadata always present. */
export type StoredObject = KubeObject & { metadata: ObjectMeta } & Record<string, unknown>;

/** Store key: `ns/name` for namespaced objects, `name` otherwise. */
export function storeKey(namespace: string | undefined, name: string): string {
  return namespace === undefined || namespace === '' ? name : `${namespace}/${name}`;
}

/** RFC 3339 with second precision, as Kubernetes writes metav1.Time. */
export function formatTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export function parseTime(s: string | undefined): number | undefined {
  if (s === undefined) return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : t;
}
