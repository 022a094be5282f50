// client-node model objects back to wire JSON, on the library's public API only. client-node
// 1.x hands out its model classes (V1Service, V1ObjectMeta, ...) with timestamps as Date and
// some properties renamed from their JSON names (`_continue` for `continue`); every model class
// is exported and publishes its fields through the static getAttributeTypeMap() (TypeScript
// name, JSON name, type string, format). This walks those maps; it replaces the deep import of
// the package's internal ObjectSerializer, which the package does not export and may move.
// Values of types it does not know (enums, unknown kinds, extra properties) pass unchanged.

import * as k8s from '@kubernetes/client-node';

interface Attribute {
  readonly name: string;
  readonly baseName: string;
  readonly type: string;
}

interface ModelClass {
  getAttributeTypeMap(): readonly Attribute[];
}

const PRIMITIVES = new Set([
  'string',
  'boolean',
  'double',
  'integer',
  'long',
  'float',
  'number',
  'any',
]);
const exported = k8s as unknown as Readonly<Record<string, unknown>>;

/** The exported model class of that name (e.g. `V1Service`), if it is one. */
function modelClass(type: string): ModelClass | undefined {
  const c = exported[type];
  return typeof c === 'function' &&
    typeof (c as Partial<ModelClass>).getAttributeTypeMap === 'function'
    ? (c as unknown as ModelClass)
    : undefined;
}

/**
 * The wire JSON of `data` read as client-node type `type` (a model name such as `V1Pod`,
 * `Array<V1Container>`, `{ [key: string]: string; }`, `Date`). Timestamps become RFC 3339
 * (every client-node Date field is a date-time). Absent values stay absent (undefined), as
 * client-node's own serializer leaves them.
 */
export function toWire(data: unknown, type: string): unknown {
  if (data === undefined || data === null) return data;
  if (PRIMITIVES.has(type.toLowerCase())) return data;
  if (type.endsWith(' | null')) return toWire(data, type.slice(0, -' | null'.length));
  if (type.endsWith(' | undefined')) return toWire(data, type.slice(0, -' | undefined'.length));
  if (type.startsWith('Array<') && type.endsWith('>')) {
    const item = type.slice('Array<'.length, -1);
    return Array.isArray(data) ? data.map((v) => toWire(v, item)) : data;
  }
  if (type.startsWith('{ [key: string]: ') && type.endsWith('; }')) {
    const value = type.slice('{ [key: string]: '.length, -'; }'.length);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(data)) out[k] = toWire(v, value);
    return out;
  }
  if (type === 'Date') return data instanceof Date ? data.toISOString() : data;
  const model = modelClass(type);
  if (!model || typeof data !== 'object') return data;
  const source = data as Readonly<Record<string, unknown>>;
  const out: Record<string, unknown> = {};
  for (const a of model.getAttributeTypeMap()) out[a.baseName] = toWire(source[a.name], a.type);
  return out;
}
