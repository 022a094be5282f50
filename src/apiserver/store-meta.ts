// Object metadata rules of the Store, as kube-apiserver applies them: a request body is
// normalised to a StoredObject of the resource's kind, an update carries over what clients
// may not change (uid, creationTimestamp, generation, deletion marks, managedFields) and keeps
// the stored status, a status update keeps everything else, and a spec change bumps
// metadata.generation. Pure functions; 400 for a body that names another kind, version,
// name or namespace.

import type { ObjectMeta } from '../kube/types.js';
import { clone, deepEqual } from '../util/json.js';
import type { StoredObject } from './object.js';
import { apiVersionOf, type ResourceType } from './resources.js';
import { ApiError } from './status.js';
import type { WriteOptions } from './store-types.js';

/** Sets `m[k]`, or removes it when `v` is undefined. */
export function setMeta<K extends keyof ObjectMeta>(
  m: ObjectMeta,
  k: K,
  v: ObjectMeta[K] | undefined,
): void {
  if (v === undefined) Reflect.deleteProperty(m, k);
  else m[k] = v;
}

/** Everything outside metadata and status, i.e. what bumps metadata.generation. */
export function specChanged(a: StoredObject, b: StoredObject): boolean {
  const strip = (o: StoredObject): Record<string, unknown> => {
    const rest: Record<string, unknown> = { ...o };
    for (const k of ['metadata', 'status', 'kind', 'apiVersion']) Reflect.deleteProperty(rest, k);
    return rest;
  };
  return !deepEqual(strip(a), strip(b));
}

/** A copy of a request body as an object of `rt` (kind and apiVersion set, null metadata dropped). */
export function normalizeInput(rt: ResourceType, input: unknown): StoredObject {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw ApiError.badRequest(`the body of the request is not a ${rt.kind} object`);
  const obj = clone(input) as StoredObject;
  const kind: unknown = (obj as { kind?: unknown }).kind;
  const apiVersion: unknown = (obj as { apiVersion?: unknown }).apiVersion;
  if (kind !== undefined && kind !== '' && kind !== rt.kind)
    throw ApiError.badRequest(
      `the body of the request was of kind ${JSON.stringify(kind)}, expected ${rt.kind}`,
    );
  if (apiVersion !== undefined && apiVersion !== '' && apiVersion !== apiVersionOf(rt))
    throw ApiError.badRequest(
      `the API version in the data (${JSON.stringify(apiVersion)}) does not match the expected API version (${apiVersionOf(rt)})`,
    );
  obj.kind = rt.kind;
  obj.apiVersion = apiVersionOf(rt);
  const rawMeta: unknown = (obj as { metadata?: unknown }).metadata;
  const meta = (typeof rawMeta === 'object' && rawMeta !== null ? rawMeta : {}) as ObjectMeta &
    Record<string, unknown>;
  for (const k of Object.keys(meta)) if (meta[k] === null) Reflect.deleteProperty(meta, k);
  obj.metadata = meta;
  return obj;
}

/** 400 when a body names a namespace (non-empty) other than the request's `ns`. */
export function checkBodyNamespace(bodyNs: string | undefined, ns: string | undefined): void {
  if (bodyNs !== undefined && bodyNs !== '' && bodyNs !== ns)
    throw ApiError.badRequest(
      'the namespace of the provided object does not match the namespace sent on the request',
    );
}

/**
 * The object an update of `old` (named `name`) with the normalised body `incoming` writes,
 * before strategies and resourceVersion: a status write takes only `status`; a main write
 * keeps the stored status and the metadata clients may not change.
 */
export function mergeUpdate(
  rt: ResourceType,
  old: StoredObject,
  incoming: StoredObject,
  name: string,
  subresource: WriteOptions['subresource'],
): StoredObject {
  if (subresource === 'status') {
    const obj = clone(old);
    if (incoming.status === undefined) delete obj.status;
    else obj.status = incoming.status;
    return obj;
  }
  const obj = incoming;
  if (rt.hasStatus) {
    if (old.status === undefined) delete obj.status;
    else obj.status = clone(old.status);
  }
  const m = obj.metadata;
  m.name = name;
  if (rt.namespaced) setMeta(m, 'namespace', old.metadata.namespace);
  else delete m.namespace;
  setMeta(m, 'uid', old.metadata.uid);
  setMeta(m, 'creationTimestamp', old.metadata.creationTimestamp);
  setMeta(m, 'generation', old.metadata.generation);
  if (old.metadata.deletionTimestamp !== undefined) {
    m.deletionTimestamp = old.metadata.deletionTimestamp;
    if (old.metadata.deletionGracePeriodSeconds !== undefined)
      m.deletionGracePeriodSeconds = old.metadata.deletionGracePeriodSeconds;
  } else {
    delete m.deletionTimestamp;
    delete m.deletionGracePeriodSeconds;
  }
  if (m.generateName === undefined && old.metadata.generateName !== undefined)
    m.generateName = old.metadata.generateName;
  delete m.managedFields;
  if (old.metadata.managedFields !== undefined) m.managedFields = old.metadata.managedFields;
  return obj;
}
