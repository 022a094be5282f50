// PATCH bodies as kube-apiserver applies them: RFC 7386 JSON merge patch, RFC 6902 JSON patch
// and strategic merge patch with the merge keys and patch strategies of the served types
// (containers by name, service ports by port, conditions by type, finalizers as a merged
// primitive list, ...) and the directives kubectl sends ($patch, $setElementOrder,
// $retainKeys, $deleteFromPrimitiveList). Pure; errors are ApiErrors.

import { clone, deepEqual, isPlainObject } from '../util/json.js';
import { ApiError } from './status.js';

type Loose = Record<string, unknown>;

export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

/** The patch type of a Content-Type header, or undefined when it is not a patch type. */
export function patchTypeOf(contentType: string): PatchType | undefined {
  const ct = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  switch (ct) {
    case 'application/json-patch+json':
      return 'json';
    case 'application/merge-patch+json':
      return 'merge';
    case 'application/strategic-merge-patch+json':
      return 'strategic';
    case 'application/apply-patch+yaml':
      return 'apply';
    default:
      return undefined;
  }
}

/** RFC 7386. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return clone(patch);
  const out: Loose = isPlainObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) Reflect.deleteProperty(out, k);
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

/**
 * A patched object as the store should get it: a patch applies to the current object, so it
 * conflicts only when the patch itself names another metadata.resourceVersion.
 */
export function withPatchResourceVersion(
  patched: unknown,
  current: { metadata: { resourceVersion?: string } },
  patch: unknown,
): unknown {
  if (!isPlainObject(patched)) return patched;
  const meta = isPlainObject(patched.metadata) ? patched.metadata : {};
  const patchMeta = isPlainObject(patch) && isPlainObject(patch.metadata) ? patch.metadata : {};
  const rv =
    typeof patchMeta.resourceVersion === 'string'
      ? patchMeta.resourceVersion
      : current.metadata.resourceVersion;
  return { ...patched, metadata: { ...meta, resourceVersion: rv } };
}

// ---- RFC 6902 ----

function parsePointer(p: string): string[] {
  if (p === '') return [];
  if (!p.startsWith('/')) throw ApiError.badRequest(`invalid JSON pointer "${p}"`);
  return p
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function getAt(doc: unknown, path: string[]): unknown {
  let cur = doc;
  for (const seg of path) {
    if (Array.isArray(cur)) cur = cur[Number(seg)];
    else if (isPlainObject(cur)) cur = cur[seg];
    else return undefined;
  }
  return cur;
}

function parentOf(doc: unknown, path: string[], op: string): { parent: unknown; last: string } {
  if (path.length === 0)
    throw ApiError.badRequest(`the ${op} operation does not apply to the document root`);
  const parent = getAt(doc, path.slice(0, -1));
  if (!Array.isArray(parent) && !isPlainObject(parent))
    throw ApiError.badRequest(`doc is missing path: "/${path.join('/')}": missing value`);
  return { parent, last: path[path.length - 1] ?? '' };
}

function arrayIndex(arr: unknown[], seg: string, forAdd: boolean): number {
  if (forAdd && seg === '-') return arr.length;
  if (!/^\d+$/.test(seg)) throw ApiError.badRequest(`invalid array index "${seg}"`);
  const i = Number(seg);
  if (i > arr.length || (!forAdd && i === arr.length))
    throw ApiError.badRequest(`array index ${i} out of bounds`);
  return i;
}

function addAt(doc: unknown, path: string[], value: unknown): unknown {
  if (path.length === 0) return clone(value);
  const { parent, last } = parentOf(doc, path, 'add');
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, true), 0, clone(value));
  else (parent as Loose)[last] = clone(value);
  return doc;
}

function removeAt(doc: unknown, path: string[]): unknown {
  const { parent, last } = parentOf(doc, path, 'remove');
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, false), 1);
  else {
    if (!Object.hasOwn(parent as Loose, last))
      throw ApiError.badRequest(
        `the server rejected our request due to an error in our request: remove operation does not apply: doc is missing path: "/${path.join('/')}"`,
      );
    Reflect.deleteProperty(parent as Loose, last);
  }
  return doc;
}

/** RFC 6902: add, remove, replace, move, copy, test. */
export function applyJsonPatch(target: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw ApiError.badRequest('json patch must be a list of operations');
  let doc = clone(target);
  for (const raw of ops) {
    if (!isPlainObject(raw)) throw ApiError.badRequest('json patch operation must be an object');
    const op = raw.op;
    const path = parsePointer(typeof raw.path === 'string' ? raw.path : '');
    switch (op) {
      case 'add':
        doc = addAt(doc, path, raw.value);
        break;
      case 'remove':
        doc = removeAt(doc, path);
        break;
      case 'replace':
        if (getAt(doc, path) === undefined && path.length > 0)
          throw ApiError.badRequest(
            `replace operation does not apply: doc is missing key: /${path.join('/')}: missing value`,
          );
        if (path.length === 0) doc = clone(raw.value);
        else {
          const { parent, last } = parentOf(doc, path, 'replace');
          if (Array.isArray(parent)) parent[arrayIndex(parent, last, false)] = clone(raw.value);
          else (parent as Loose)[last] = clone(raw.value);
        }
        break;
      case 'move':
      case 'copy': {
        const from = parsePointer(typeof raw.from === 'string' ? raw.from : '');
        const v = getAt(doc, from);
        if (v === undefined)
          throw ApiError.badRequest(
            `${op} operation does not apply: doc is missing from path: /${from.join('/')}`,
          );
        const value = clone(v);
        if (op === 'move') doc = removeAt(doc, from);
        doc = addAt(doc, path, value);
        break;
      }
      case 'test':
        if (!deepEqual(getAt(doc, path), raw.value))
          throw new ApiError(
            422,
            'Invalid',
            `the server rejected our request due to an error in our request: testing value /${path.join('/')} failed`,
          );
        break;
      default:
        throw ApiError.badRequest(`Unexpected kind: ${String(op)}`);
    }
  }
  return doc;
}

// ---- strategic merge patch ----

interface ListStrategy {
  readonly mergeKey?: string;
  /** Merge a list of scalars as a set (metadata.finalizers). */
  readonly primitiveMerge?: boolean;
}

const NAME_KEYED = new Set([
  'containers',
  'initContainers',
  'ephemeralContainers',
  'volumes',
  'imagePullSecrets',
  'env',
  'resourceClaims',
]);

/** Merge key of the list at `path` (field names only) in an object of `kind`. */
export function listStrategy(kind: string, path: readonly string[]): ListStrategy {
  const last = path[path.length - 1] ?? '';
  const parent = path[path.length - 2] ?? '';
  if (kind === 'EndpointSlice' || kind === 'Endpoints') {
    if (path.length === 2 && path[0] === 'metadata' && last === 'ownerReferences')
      return { mergeKey: 'uid' };
    if (path.length === 2 && path[0] === 'metadata' && last === 'finalizers')
      return { primitiveMerge: true };
    return {};
  }
  if (path.length === 2 && path[0] === 'metadata') {
    if (last === 'ownerReferences') return { mergeKey: 'uid' };
    if (last === 'finalizers') return { primitiveMerge: true };
    return {};
  }
  if (last === 'ports') {
    if (kind === 'Service' && path.length === 2 && path[0] === 'spec') return { mergeKey: 'port' };
    if (parent === 'containers' || parent === 'initContainers' || parent === 'ephemeralContainers')
      return { mergeKey: 'containerPort' };
    return {};
  }
  if (NAME_KEYED.has(last)) return { mergeKey: 'name' };
  if (last === 'volumeMounts') return { mergeKey: 'mountPath' };
  if (last === 'volumeDevices') return { mergeKey: 'devicePath' };
  if (last === 'hostAliases' || last === 'podIPs' || last === 'hostIPs') return { mergeKey: 'ip' };
  if (last === 'conditions') return { mergeKey: 'type' };
  if (last === 'topologySpreadConstraints') return { mergeKey: 'topologyKey' };
  if (last === 'addresses' && kind === 'Node' && parent === 'status') return { mergeKey: 'type' };
  return {};
}

const SET_ORDER = '$setElementOrder/';
const DELETE_PRIMITIVE = '$deleteFromPrimitiveList/';

/** Applies a strategic merge patch to an object of `kind`. */
export function applyStrategicMergePatch(kind: string, target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch))
    throw ApiError.badRequest('strategic merge patch must be a JSON object');
  return mergeMap(kind, isPlainObject(target) ? target : {}, patch, []);
}

function mergeMap(kind: string, original: Loose, patch: Loose, path: string[]): Loose | undefined {
  const directive = patch.$patch;
  if (directive === 'delete') return undefined;
  if (directive === 'replace') {
    return stripDirectives(patch) as Loose;
  }
  const out: Loose = clone(original);
  const orders = new Map<string, unknown[]>();
  const deletions = new Map<string, unknown[]>();
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys') continue;
    if (k.startsWith(SET_ORDER)) {
      if (Array.isArray(v)) orders.set(k.slice(SET_ORDER.length), v);
      continue;
    }
    if (k.startsWith(DELETE_PRIMITIVE)) {
      if (Array.isArray(v)) deletions.set(k.slice(DELETE_PRIMITIVE.length), v);
      continue;
    }
    const sub = [...path, k];
    if (v === null) Reflect.deleteProperty(out, k);
    else if (isPlainObject(v)) {
      const merged = mergeMap(kind, isPlainObject(out[k]) ? out[k] : {}, v, sub);
      if (merged === undefined) Reflect.deleteProperty(out, k);
      else out[k] = merged;
    } else if (Array.isArray(v))
      out[k] = mergeList(kind, Array.isArray(out[k]) ? out[k] : [], v, sub);
    else out[k] = v;
  }
  for (const [k, values] of deletions) {
    const cur = out[k];
    if (Array.isArray(cur)) out[k] = cur.filter((x) => !values.some((d) => deepEqual(d, x)));
  }
  for (const [k, order] of orders) {
    const cur = out[k];
    if (Array.isArray(cur)) out[k] = reorder(listStrategy(kind, [...path, k]), cur, order);
  }
  const retain = patch.$retainKeys;
  if (Array.isArray(retain))
    for (const k of Object.keys(out)) if (!retain.includes(k)) Reflect.deleteProperty(out, k);
  return out;
}

function keyOf(el: unknown, mergeKey: string): unknown {
  return isPlainObject(el) ? el[mergeKey] : el;
}

function reorder(strategy: ListStrategy, list: unknown[], order: unknown[]): unknown[] {
  const key = (el: unknown): unknown =>
    strategy.mergeKey !== undefined ? keyOf(el, strategy.mergeKey) : el;
  const orderKeys = order.map((o) =>
    strategy.mergeKey !== undefined ? keyOf(o, strategy.mergeKey) : o,
  );
  const rank = (el: unknown): number => {
    const i = orderKeys.findIndex((k) => deepEqual(k, key(el)));
    return i < 0 ? Number.MAX_SAFE_INTEGER : i;
  };
  return list
    .map((el, i) => ({ el, i }))
    .sort((a, b) => rank(a.el) - rank(b.el) || a.i - b.i)
    .map((x) => x.el);
}

function mergeList(kind: string, original: unknown[], patch: unknown[], path: string[]): unknown[] {
  const strategy = listStrategy(kind, path);
  if (patch.some((el) => isPlainObject(el) && el.$patch === 'replace'))
    return patch
      .filter((el) => !(isPlainObject(el) && el.$patch === 'replace'))
      .map(stripDirectives);
  if (strategy.primitiveMerge === true) {
    const out = [...original];
    for (const el of patch) if (!out.some((x) => deepEqual(x, el))) out.push(el);
    return out;
  }
  const mk = strategy.mergeKey;
  if (mk === undefined) return patch.map(stripDirectives);
  const out = clone(original);
  for (const el of patch) {
    if (!isPlainObject(el)) {
      out.push(el);
      continue;
    }
    const k = el[mk];
    const idx = out.findIndex((x) => isPlainObject(x) && deepEqual(x[mk], k));
    if (el.$patch === 'delete') {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    if (idx >= 0) {
      const merged = mergeMap(kind, out[idx] as Loose, el, path);
      if (merged === undefined) out.splice(idx, 1);
      else out[idx] = merged;
    } else out.push(stripDirectives(el));
  }
  return out;
}

function stripDirectives(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripDirectives);
  if (!isPlainObject(v)) return v;
  const out: Loose = {};
  for (const [k, x] of Object.entries(v)) {
    if (k.startsWith('$')) continue;
    out[k] = stripDirectives(x);
  }
  return out;
}
