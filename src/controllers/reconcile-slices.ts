// Packs desired endpoints into EndpointSlices of one address type, reusing existing slices:
// the shared core of the EndpointSlice controller and the mirroring controller. Existing
// slices keep the endpoints that are still desired (updated in place when they changed),
// slices left empty or with a port set nobody wants are deleted, and the remaining endpoints
// fill slices already being updated, then the fullest unchanged slices, then new slices of at
// most `maxEndpointsPerSlice` (never above the API server's 1000). Unchanged slices are
// never rewritten. Pure.

import type {
  AddressType,
  Endpoint,
  EndpointPort,
  EndpointSlice,
  OwnerReference,
} from '../kube/types.js';
import { ANNOTATION_LAST_CHANGE_TRIGGER_TIME } from '../kube/names.js';
import { MAX_SLICE_ENDPOINTS } from '../kube/validate.js';
import { canonicalJSON, deepEqual } from '../util/json.js';
import type { Operation } from './operations.js';

/** Endpoints that share one port list. */
export interface SliceGroup {
  readonly ports: readonly EndpointPort[];
  readonly endpoints: readonly Endpoint[];
}

export interface PackInput {
  readonly namespace: string;
  readonly addressType: AddressType;
  readonly groups: readonly SliceGroup[];
  /** Existing slices of this manager, this owner and this address type. */
  readonly existing: readonly EndpointSlice[];
  /** Labels every slice must carry (exactly; other labels are removed). */
  readonly labels: Readonly<Record<string, string>>;
  readonly ownerReferences: readonly OwnerReference[];
  readonly generateName: string;
  readonly maxEndpointsPerSlice: number;
  /** Keep one empty slice (no ports, no endpoints) when there are no endpoints at all. */
  readonly placeholder: boolean;
  /** RFC 3339 time for the last-change-trigger-time annotation of written slices. */
  readonly triggerTime?: string;
}

export interface SliceChanges {
  readonly create: EndpointSlice[];
  readonly update: EndpointSlice[];
  readonly delete: EndpointSlice[];
}

/** Identity of an endpoint across syncs: its target pod, else its first address. */
export function endpointKey(ep: Endpoint): string {
  const uid = ep.targetRef?.uid;
  if (uid !== undefined && uid !== '') return `uid:${uid}`;
  return `addr:${ep.addresses[0] ?? ''}`;
}

/**
 * Everything about an endpoint that a slice update must carry, in a fixed order (cheaper
 * than a canonical JSON of the whole object on the hot path of large Services).
 */
export function endpointFingerprint(ep: Endpoint): string {
  const c = ep.conditions;
  const r = ep.targetRef;
  return JSON.stringify([
    ep.addresses,
    c?.ready,
    c?.serving,
    c?.terminating,
    ep.hostname,
    ep.nodeName,
    ep.zone,
    r?.kind,
    r?.namespace,
    r?.name,
    r?.uid,
    r?.resourceVersion,
    ep.hints?.forZones?.map((z) => z.name),
    ep.hints?.forNodes?.map((n) => n.name),
  ]);
}

/** Order-insensitive key of a port list. */
export function portsKey(ports: readonly EndpointPort[]): string {
  return [...ports]
    .map((p) => canonicalJSON({ ...p, name: p.name ?? '', protocol: p.protocol ?? 'TCP' }))
    .sort()
    .join('|');
}

interface Working {
  slice: EndpointSlice;
  endpoints: Endpoint[];
  changed: boolean;
  isNew: boolean;
}

/** Computes the creates, updates and deletes that make `existing` hold exactly `groups`. */
/** The writes of `changes` in order: creates, updates, then deletes built by `del`. */
export function sliceOperations(
  changes: SliceChanges,
  del: (s: EndpointSlice) => Operation,
): Operation[] {
  return [
    ...changes.create.map((s): Operation => ({ op: 'create', kind: 'EndpointSlice', object: s })),
    ...changes.update.map((s): Operation => ({ op: 'update', kind: 'EndpointSlice', object: s })),
    ...changes.delete.map(del),
  ];
}

export function packSlices(input: PackInput): SliceChanges {
  // Never more than the API server admits, whatever the caller asks for.
  const max = Math.min(MAX_SLICE_ENDPOINTS, Math.max(1, input.maxEndpointsPerSlice));
  const desired = new Map<string, { ports: readonly EndpointPort[]; eps: Map<string, Endpoint> }>();
  for (const g of input.groups) {
    if (g.endpoints.length === 0) continue;
    const key = portsKey(g.ports);
    let entry = desired.get(key);
    if (entry === undefined) {
      entry = { ports: g.ports, eps: new Map() };
      desired.set(key, entry);
    }
    for (const ep of g.endpoints) entry.eps.set(endpointKey(ep), ep);
  }

  const toDelete: EndpointSlice[] = [];
  const kept = new Map<string, Working[]>();
  const claimed = new Set<string>();
  const sortedExisting = [...input.existing].sort((a, b) =>
    (a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1,
  );
  for (const slice of sortedExisting) {
    const key = portsKey(slice.ports ?? []);
    const want = desired.get(key);
    if (want === undefined) {
      toDelete.push(slice);
      continue;
    }
    const endpoints: Endpoint[] = [];
    let changed = false;
    for (const ep of slice.endpoints ?? []) {
      const k = endpointKey(ep);
      const next = want.eps.get(k);
      if (next === undefined || claimed.has(`${key}#${k}`) || endpoints.length >= max) {
        changed = true;
        continue;
      }
      claimed.add(`${key}#${k}`);
      if (endpointFingerprint(ep) !== endpointFingerprint(next)) changed = true;
      endpoints.push(next);
    }
    if (endpoints.length === 0) {
      toDelete.push(slice);
      continue;
    }
    const list = kept.get(key) ?? [];
    list.push({ slice, endpoints, changed, isNew: false });
    kept.set(key, list);
  }

  const created: Working[] = [];
  for (const [key, want] of desired) {
    const remaining = [...want.eps.entries()]
      .filter(([k]) => !claimed.has(`${key}#${k}`))
      .map(([, ep]) => ep);
    const slices = kept.get(key) ?? [];
    // Fill slices already being written first, then the fullest unchanged ones.
    const order = [...slices].sort((a, b) =>
      a.changed !== b.changed ? (a.changed ? -1 : 1) : b.endpoints.length - a.endpoints.length,
    );
    for (const w of order) {
      while (remaining.length > 0 && w.endpoints.length < max) {
        const ep = remaining.shift();
        if (ep === undefined) break;
        w.endpoints.push(ep);
        w.changed = true;
      }
    }
    while (remaining.length > 0) {
      const chunk = remaining.splice(0, max);
      created.push({
        slice: newSlice(input, want.ports),
        endpoints: chunk,
        changed: true,
        isNew: true,
      });
    }
  }

  const out: SliceChanges = { create: [], update: [], delete: toDelete };
  for (const list of kept.values())
    for (const w of list) {
      const next = finish(input, w);
      if (w.changed || metadataDrifted(input, w.slice)) out.update.push(next);
    }
  for (const w of created) out.create.push(finish(input, w));

  if (input.placeholder && desired.size === 0) {
    // Keep (or make) exactly one empty slice so clients can tell "no endpoints" from "no sync".
    const reuse = toDelete.find(
      (s) => (s.endpoints ?? []).length === 0 && (s.ports ?? []).length === 0,
    );
    if (reuse !== undefined) {
      out.delete.splice(out.delete.indexOf(reuse), 1);
      if (metadataDrifted(input, reuse))
        out.update.push(
          finish(input, { slice: reuse, endpoints: [], changed: false, isNew: false }),
        );
    } else {
      out.create.push(
        finish(input, { slice: newSlice(input, []), endpoints: [], changed: true, isNew: true }),
      );
    }
  }
  return out;
}

function newSlice(input: PackInput, ports: readonly EndpointPort[]): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { generateName: input.generateName, namespace: input.namespace },
    addressType: input.addressType,
    endpoints: [],
    ports: [...ports],
  };
}

function metadataDrifted(input: PackInput, slice: EndpointSlice): boolean {
  return (
    !deepEqual(slice.metadata?.labels ?? {}, input.labels) ||
    !input.ownerReferences.every((r) =>
      (slice.metadata?.ownerReferences ?? []).some((o) => o.uid === r.uid),
    )
  );
}

function finish(input: PackInput, w: Working): EndpointSlice {
  const meta = { ...w.slice.metadata };
  meta.labels = { ...input.labels };
  const refs = [...(meta.ownerReferences ?? [])];
  for (const r of input.ownerReferences) if (!refs.some((o) => o.uid === r.uid)) refs.push(r);
  if (refs.length > 0) meta.ownerReferences = refs;
  if (input.triggerTime !== undefined)
    meta.annotations = {
      ...meta.annotations,
      [ANNOTATION_LAST_CHANGE_TRIGGER_TIME]: input.triggerTime,
    };
  return { ...w.slice, metadata: meta, endpoints: w.endpoints };
}
