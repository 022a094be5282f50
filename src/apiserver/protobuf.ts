// A minimal decoder for Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`),
// which kubectl >= 1.32 sends from `create deployment|service|namespace|configmap` and other
// typed-client writes. It reads the `k8s\0` envelope (runtime.Unknown: typeMeta + raw) and the
// object with a hand-written schema subset of the public field numbers (ObjectMeta, Deployment,
// PodTemplateSpec, PodSpec, Container, Service, Namespace, ConfigMap, Pod, ...), returning the
// same JSON shape the JSON encoder would have sent. Go's encoder writes every non-pointer
// field, zero or not, so zero scalars are dropped except for the pointer fields where zero
// means something (replicas: 0). A field the schema does not list is accepted only when it
// holds a zero value (as kubectl's bodies do for fields it leaves empty); one with content is
// refused with 415 naming it, so a client's field is never dropped in silence. Exceptions:
// status and the server-owned selfLink and managedFields, which the store discards anyway. The subset is
// proven complete for every `kubectl create` generator of the kinds served here by
// test/integration/apiserver-kubectl-protobuf.test.ts. Pure.

import type { ResourceType } from './resources.js';
import { ApiError } from './status.js';

type Scalar = 'string' | 'int32' | 'int64' | 'bool' | 'bytes';

interface Field {
  readonly name: string;
  readonly type:
    | Scalar
    | Message
    | 'time'
    | 'intorstring'
    | 'quantity'
    | 'map'
    | 'mapQuantity'
    | 'mapBytes'
    | 'ignored';
  readonly repeated?: boolean;
  /** A Go pointer field: its zero value is meaningful and kept. */
  readonly keepZero?: boolean;
}

interface Message {
  readonly fields: Readonly<Record<number, Field>>;
  /** Skip fields not listed even when they hold content (see STATUS). */
  readonly skipUnknown?: boolean;
}

type Json = Record<string, unknown>;

const MAGIC = [0x6b, 0x38, 0x73, 0x00];

export function isProtobufContentType(ct: string): boolean {
  return ct.split(';')[0]?.trim().toLowerCase() === 'application/vnd.kubernetes.protobuf';
}

function m(fields: Record<number, Field>): Message {
  return { fields };
}

const s = (name: string, repeated = false): Field => ({ name, type: 'string', repeated });
const i32 = (name: string, keepZero = false): Field => ({ name, type: 'int32', keepZero });
const i64 = (name: string, keepZero = false): Field => ({ name, type: 'int64', keepZero });
const b = (name: string, keepZero = false): Field => ({ name, type: 'bool', keepZero });
const msg = (name: string, type: Message, repeated = false): Field => ({ name, type, repeated });

/**
 * The status of a create or update body: kube-apiserver keeps the stored status on these
 * writes (and a client that read an object and writes it back sends its status along), so
 * its content is skipped rather than refused.
 */
const STATUS: Message = { fields: {}, skipUnknown: true };

/** Fields the server owns and the store discards from every write. */
const ignored = (name: string): Field => ({ name, type: 'ignored' });

const OWNER_REFERENCE = m({
  5: s('apiVersion'),
  1: s('kind'),
  3: s('name'),
  4: s('uid'),
  6: b('controller', true),
  7: b('blockOwnerDeletion', true),
});

const OBJECT_META = m({
  1: s('name'),
  2: s('generateName'),
  3: s('namespace'),
  5: s('uid'),
  6: s('resourceVersion'),
  7: i64('generation'),
  8: { name: 'creationTimestamp', type: 'time' },
  9: { name: 'deletionTimestamp', type: 'time' },
  10: i64('deletionGracePeriodSeconds', true),
  11: { name: 'labels', type: 'map' },
  12: { name: 'annotations', type: 'map' },
  13: msg('ownerReferences', OWNER_REFERENCE, true),
  14: s('finalizers', true),
  4: ignored('selfLink'),
  17: ignored('managedFields'),
});

const LABEL_SELECTOR = m({
  1: { name: 'matchLabels', type: 'map' },
  2: msg('matchExpressions', m({ 1: s('key'), 2: s('operator'), 3: s('values', true) }), true),
});

const CONTAINER_PORT = m({
  1: s('name'),
  2: i32('hostPort'),
  3: i32('containerPort'),
  4: s('protocol'),
  5: s('hostIP'),
});
const ENV_VAR = m({ 1: s('name'), 2: s('value') });
const RESOURCES = m({
  1: { name: 'limits', type: 'mapQuantity' },
  2: { name: 'requests', type: 'mapQuantity' },
});

const CONTAINER = m({
  1: s('name'),
  2: s('image'),
  3: s('command', true),
  4: s('args', true),
  5: s('workingDir'),
  6: msg('ports', CONTAINER_PORT, true),
  7: msg('env', ENV_VAR, true),
  8: msg('resources', RESOURCES),
  13: s('terminationMessagePath'),
  20: s('terminationMessagePolicy'),
  14: s('imagePullPolicy'),
  16: b('stdin'),
  17: b('stdinOnce'),
  18: b('tty'),
});

const POD_SPEC = m({
  20: msg('initContainers', CONTAINER, true),
  2: msg('containers', CONTAINER, true),
  3: s('restartPolicy'),
  4: i64('terminationGracePeriodSeconds', true),
  5: i64('activeDeadlineSeconds', true),
  6: s('dnsPolicy'),
  7: { name: 'nodeSelector', type: 'map' },
  8: s('serviceAccountName'),
  9: s('serviceAccount'),
  21: b('automountServiceAccountToken', true),
  10: s('nodeName'),
  11: b('hostNetwork'),
  16: s('hostname'),
  17: s('subdomain'),
  19: s('schedulerName'),
  24: s('priorityClassName'),
  30: b('enableServiceLinks', true),
});

const POD_TEMPLATE_SPEC = m({ 1: msg('metadata', OBJECT_META), 2: msg('spec', POD_SPEC) });

const DEPLOYMENT = m({
  1: msg('metadata', OBJECT_META),
  2: msg(
    'spec',
    m({
      1: i32('replicas', true),
      2: msg('selector', LABEL_SELECTOR),
      3: msg('template', POD_TEMPLATE_SPEC),
      4: msg(
        'strategy',
        m({
          1: s('type'),
          2: msg(
            'rollingUpdate',
            m({
              1: { name: 'maxUnavailable', type: 'intorstring' },
              2: { name: 'maxSurge', type: 'intorstring' },
            }),
          ),
        }),
      ),
      5: i32('minReadySeconds'),
      6: i32('revisionHistoryLimit', true),
      7: b('paused'),
      9: i32('progressDeadlineSeconds', true),
    }),
  ),
  3: msg('status', STATUS),
});

const REPLICA_SET = m({
  1: msg('metadata', OBJECT_META),
  2: msg(
    'spec',
    m({
      1: i32('replicas', true),
      4: i32('minReadySeconds'),
      2: msg('selector', LABEL_SELECTOR),
      3: msg('template', POD_TEMPLATE_SPEC),
    }),
  ),
  3: msg('status', STATUS),
});

const SERVICE_PORT = m({
  1: s('name'),
  2: s('protocol'),
  6: s('appProtocol'),
  3: i32('port'),
  4: { name: 'targetPort', type: 'intorstring' },
  5: i32('nodePort'),
});

const SERVICE = m({
  1: msg('metadata', OBJECT_META),
  2: msg(
    'spec',
    m({
      1: msg('ports', SERVICE_PORT, true),
      2: { name: 'selector', type: 'map' },
      3: s('clusterIP'),
      18: s('clusterIPs', true),
      4: s('type'),
      5: s('externalIPs', true),
      7: s('sessionAffinity'),
      8: s('loadBalancerIP'),
      9: s('loadBalancerSourceRanges', true),
      10: s('externalName'),
      11: s('externalTrafficPolicy'),
      12: i32('healthCheckNodePort'),
      13: b('publishNotReadyAddresses'),
      14: msg(
        'sessionAffinityConfig',
        m({ 1: msg('clientIP', m({ 1: i32('timeoutSeconds', true) })) }),
      ),
      19: s('ipFamilies', true),
      17: s('ipFamilyPolicy'),
      20: b('allocateLoadBalancerNodePorts', true),
      21: s('loadBalancerClass'),
      22: s('internalTrafficPolicy'),
      23: s('trafficDistribution'),
    }),
  ),
  3: msg('status', STATUS),
});

const NAMESPACE = m({
  1: msg('metadata', OBJECT_META),
  2: msg('spec', m({ 1: s('finalizers', true) })),
  3: msg('status', STATUS),
});

const CONFIG_MAP = m({
  1: msg('metadata', OBJECT_META),
  4: b('immutable', true),
  2: { name: 'data', type: 'map' },
  3: { name: 'binaryData', type: 'mapBytes' },
});

const POD = m({
  1: msg('metadata', OBJECT_META),
  2: msg('spec', POD_SPEC),
  3: msg('status', STATUS),
});

const SCHEMAS: Record<string, Message> = {
  Deployment: DEPLOYMENT,
  ReplicaSet: REPLICA_SET,
  Service: SERVICE,
  Namespace: NAMESPACE,
  ConfigMap: CONFIG_MAP,
  Pod: POD,
};

// ---- wire format ----

class Reader {
  pos = 0;
  readonly buf: Uint8Array;
  constructor(buf: Uint8Array) {
    this.buf = buf;
  }
  get done(): boolean {
    return this.pos >= this.buf.length;
  }
  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.buf.length) throw bad('truncated varint');
      const byte = this.buf[this.pos++] ?? 0;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
      if (shift > 70n) throw bad('varint too long');
    }
  }
  /** A varint known to fit in 32 bits (tags, lengths), without BigInt. */
  uint32(): number {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 5; i++) {
      if (this.pos >= this.buf.length) throw bad('truncated varint');
      const byte = this.buf[this.pos++] ?? 0;
      result += (byte & 0x7f) * mul;
      if ((byte & 0x80) === 0) return result;
      mul *= 128;
    }
    throw bad('tag or length over 32 bits');
  }
  bytes(): Uint8Array {
    const n = this.uint32();
    if (this.pos + n > this.buf.length) throw bad('truncated field');
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
  skip(wire: number): void {
    this.skipIsZero(wire);
  }
  /** Skips one field's value; true when it is a zero value (see isZeroMessage). */
  skipIsZero(wire: number): boolean {
    if (wire === 0) return this.varint() === 0n;
    if (wire === 2) return isZeroMessage(this.bytes());
    const n = wire === 1 ? 8 : wire === 5 ? 4 : -1;
    if (n < 0) throw bad(`unsupported wire type ${wire}`);
    if (this.pos + n > this.buf.length) throw bad('truncated field');
    const zero = this.buf.subarray(this.pos, this.pos + n).every((x) => x === 0);
    this.pos += n;
    return zero;
  }
}

/**
 * Bytes that are empty, or read as a message whose fields all hold zero values (an empty
 * string, 0, an empty or all-zero nested message): what Go writes for a zero struct field.
 * Anything else (text, numbers, a malformed message) is content.
 */
function isZeroMessage(raw: Uint8Array): boolean {
  if (raw.length === 0) return true;
  try {
    const r = new Reader(raw);
    while (!r.done) {
      const wire = r.uint32() & 7;
      if (!r.skipIsZero(wire)) return false;
    }
    return true;
  } catch {
    return false;
  }
}

function bad(why: string): ApiError {
  return ApiError.badRequest(`error decoding protobuf request body: ${why}`);
}

const utf8 = new TextDecoder('utf-8', { fatal: false });

function decodeMap(raw: Uint8Array, valueType: 'string' | 'quantity' | 'bytes'): [string, unknown] {
  const r = new Reader(raw);
  let key = '';
  let value: unknown = valueType === 'bytes' ? '' : '';
  while (!r.done) {
    const tag = r.uint32();
    const fieldNo = tag >>> 3;
    if (fieldNo === 1 && (tag & 7) === 2) key = utf8.decode(r.bytes());
    else if (fieldNo === 2 && (tag & 7) === 2) {
      const v = r.bytes();
      if (valueType === 'string') value = utf8.decode(v);
      else if (valueType === 'bytes') value = Buffer.from(v).toString('base64');
      else value = decodeQuantity(v);
    } else r.skip(tag & 7);
  }
  return [key, value];
}

function decodeQuantity(raw: Uint8Array): string {
  const r = new Reader(raw);
  let out = '';
  while (!r.done) {
    const tag = r.uint32();
    if (tag >>> 3 === 1 && (tag & 7) === 2) out = utf8.decode(r.bytes());
    else r.skip(tag & 7);
  }
  return out;
}

function decodeTime(raw: Uint8Array): string | undefined {
  const r = new Reader(raw);
  let seconds = 0n;
  while (!r.done) {
    const tag = r.uint32();
    if (tag >>> 3 === 1 && (tag & 7) === 0) seconds = BigInt.asIntN(64, r.varint());
    else r.skip(tag & 7);
  }
  if (seconds === 0n) return undefined;
  return new Date(Number(seconds) * 1000).toISOString().replace('.000Z', 'Z');
}

function decodeIntOrString(raw: Uint8Array): number | string {
  const r = new Reader(raw);
  let type = 0;
  let intVal = 0;
  let strVal = '';
  while (!r.done) {
    const tag = r.uint32();
    const f = tag >>> 3;
    if (f === 1 && (tag & 7) === 0) type = Number(BigInt.asIntN(64, r.varint()));
    else if (f === 2 && (tag & 7) === 0) intVal = Number(BigInt.asIntN(32, r.varint()));
    else if (f === 3 && (tag & 7) === 2) strVal = utf8.decode(r.bytes());
    else r.skip(tag & 7);
  }
  return type === 1 ? strVal : intVal;
}

function isZero(v: unknown): boolean {
  return v === '' || v === 0 || v === false;
}

function decodeMessage(raw: Uint8Array, schema: Message, kind: string, path: string): Json {
  const r = new Reader(raw);
  const out: Json = {};
  while (!r.done) {
    const tag = r.uint32();
    const fieldNo = tag >>> 3;
    const wire = tag & 7;
    const f = schema.fields[fieldNo];
    if (!f || f.type === 'ignored') {
      if (!r.skipIsZero(wire) && f === undefined && schema.skipUnknown !== true)
        throw ApiError.unsupportedMediaType(
          `application/vnd.kubernetes.protobuf: ${kind} field ${path}${path === '' ? '' : '.'}#${String(fieldNo)} is not decoded here; send it as application/json`,
        );
      continue;
    }
    let value: unknown;
    let keep = true;
    switch (f.type) {
      case 'string':
        value = utf8.decode(r.bytes());
        break;
      case 'bytes':
        value = Buffer.from(r.bytes()).toString('base64');
        break;
      case 'int32':
        value = Number(BigInt.asIntN(32, r.varint()));
        break;
      case 'int64':
        value = Number(BigInt.asIntN(64, r.varint()));
        break;
      case 'bool':
        value = r.varint() !== 0n;
        break;
      case 'time':
        value = decodeTime(r.bytes());
        keep = value !== undefined;
        break;
      case 'intorstring':
        value = decodeIntOrString(r.bytes());
        break;
      case 'quantity':
        value = decodeQuantity(r.bytes());
        break;
      case 'map':
      case 'mapQuantity':
      case 'mapBytes': {
        const [k, v] = decodeMap(
          r.bytes(),
          f.type === 'map' ? 'string' : f.type === 'mapBytes' ? 'bytes' : 'quantity',
        );
        const existing = out[f.name];
        const map: Json =
          typeof existing === 'object' && existing !== null ? (existing as Json) : {};
        map[k] = v;
        out[f.name] = map;
        continue;
      }
      default:
        value = decodeMessage(r.bytes(), f.type, kind, path === '' ? f.name : `${path}.${f.name}`);
    }
    if (!keep) continue;
    if (f.repeated === true) {
      const list = Array.isArray(out[f.name]) ? (out[f.name] as unknown[]) : [];
      list.push(value);
      out[f.name] = list;
    } else {
      if (isZero(value) && f.keepZero !== true) continue;
      out[f.name] = value;
    }
  }
  return out;
}

/**
 * Decodes a `k8s\0`-enveloped protobuf body into the JSON object it stands for. Kinds
 * without a schema here get 415 UnsupportedMediaType (the client then knows to send JSON).
 */
export function decodeProtobufObject(raw: Uint8Array, rt: ResourceType): Json {
  if (raw.length < 4 || MAGIC.some((c, i) => raw[i] !== c)) throw bad('missing k8s envelope');
  const r = new Reader(raw.subarray(4));
  let apiVersion = '';
  let kind = '';
  let body: Uint8Array | undefined;
  while (!r.done) {
    const tag = r.uint32();
    const f = tag >>> 3;
    if (f === 1 && (tag & 7) === 2) {
      const tm = new Reader(r.bytes());
      while (!tm.done) {
        const t = tm.uint32();
        if (t >>> 3 === 1 && (t & 7) === 2) apiVersion = utf8.decode(tm.bytes());
        else if (t >>> 3 === 2 && (t & 7) === 2) kind = utf8.decode(tm.bytes());
        else tm.skip(t & 7);
      }
    } else if (f === 2 && (tag & 7) === 2) body = r.bytes();
    else r.skip(tag & 7);
  }
  const effectiveKind = kind === '' ? rt.kind : kind;
  const schema = SCHEMAS[effectiveKind];
  if (!schema)
    throw ApiError.unsupportedMediaType(
      `application/vnd.kubernetes.protobuf (kind ${effectiveKind})`,
    );
  const obj = decodeMessage(body ?? new Uint8Array(), schema, effectiveKind, '');
  return { apiVersion: apiVersion === '' ? undefined : apiVersion, kind: effectiveKind, ...obj };
}
