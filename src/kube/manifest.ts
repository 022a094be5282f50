// Manifest parsing: multi-document YAML or JSON text (as `kubectl apply -f` takes it), with
// `List` kinds (v1 List and the *List kinds) expanded, every object checked and sorted by kind.
// Pure: callers read the files. On any problem it throws one ValidationError listing every
// problem found in every document, each naming the file/document, object and field.

import { parseAllDocuments } from 'yaml';
import { ValidationError, type FieldError } from '../errors.js';
import type { EndpointSlice, KubeObject, Node, Pod, Service } from './types.js';
import { describeObject } from './types.js';
import {
  validateEndpointSlice,
  validateNode,
  validateService,
  validateMeta,
  FieldErrorCollector,
} from './validate.js';

export interface ManifestSource {
  /** File name (or `-` for stdin), used to name documents in errors. */
  readonly path: string;
  readonly text: string;
}

export interface ManifestSet {
  readonly services: Service[];
  readonly endpointSlices: EndpointSlice[];
  readonly nodes: Node[];
  readonly pods: Pod[];
  /** Other known kinds (Deployments, Namespaces, ...) kept as they are. */
  readonly others: KubeObject[];
  /** Every object, in input order. */
  readonly all: KubeObject[];
  /**
   * Warnings for objects defined more than once (same kind, namespace and name), naming
   * every place and the one that wins: the last, as a later `kubectl apply` would.
   */
  readonly duplicates: string[];
}

/** Kinds svcnet understands in manifests, with their API group/version and scope. */
const KNOWN_KINDS: Record<string, { apiVersions: string[]; namespaced: boolean }> = {
  Service: { apiVersions: ['v1'], namespaced: true },
  EndpointSlice: { apiVersions: ['discovery.k8s.io/v1'], namespaced: true },
  Endpoints: { apiVersions: ['v1'], namespaced: true },
  Node: { apiVersions: ['v1'], namespaced: false },
  Pod: { apiVersions: ['v1'], namespaced: true },
  Namespace: { apiVersions: ['v1'], namespaced: false },
  ConfigMap: { apiVersions: ['v1'], namespaced: true },
  Deployment: { apiVersions: ['apps/v1'], namespaced: true },
  ReplicaSet: { apiVersions: ['apps/v1'], namespaced: true },
  StatefulSet: { apiVersions: ['apps/v1'], namespaced: true },
  DaemonSet: { apiVersions: ['apps/v1'], namespaced: true },
};

export function isKnownKind(kind: string): boolean {
  return Object.hasOwn(KNOWN_KINDS, kind);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Parses YAML/JSON text into raw documents; syntax errors become FieldErrors. */
function parseDocuments(
  src: ManifestSource,
  errors: FieldError[],
): { where: string; value: unknown }[] {
  const out: { where: string; value: unknown }[] = [];
  const docs = parseAllDocuments(src.text, { uniqueKeys: true });
  const list = Array.isArray(docs) ? docs : [docs];
  list.forEach((doc, i) => {
    const where = list.length > 1 ? `${src.path} (document ${i + 1})` : src.path;
    if (doc.errors.length > 0) {
      for (const e of doc.errors) {
        const pos = e.linePos?.[0];
        const at = pos ? ` at line ${pos.line}, column ${pos.col}` : '';
        errors.push({
          object: where,
          field: '',
          message: `invalid YAML${at}: ${e.message.split('\n')[0] ?? ''}`,
        });
      }
      return;
    }
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return; // empty document, e.g. after a trailing ---
    out.push({ where, value });
  });
  return out;
}

function expandLists(
  where: string,
  value: unknown,
  errors: FieldError[],
  into: { where: string; obj: KubeObject }[],
): void {
  if (!isObject(value)) {
    errors.push({ object: where, field: '', message: 'a manifest document must be an object' });
    return;
  }
  const kind = value.kind;
  if (typeof kind === 'string' && kind.endsWith('List') && Array.isArray(value.items)) {
    value.items.forEach((item, i) => {
      expandLists(`${where} items[${i}]`, item, errors, into);
    });
    return;
  }
  into.push({ where, obj: value });
}

/**
 * Parses and validates manifests. Throws ValidationError (code INVALID_INPUT) listing every
 * problem; otherwise returns the objects grouped by kind, in input order.
 */
export function parseManifests(sources: readonly ManifestSource[]): ManifestSet {
  const errors: FieldError[] = [];
  const objects: { where: string; obj: KubeObject }[] = [];
  for (const src of sources) {
    for (const { where, value } of parseDocuments(src, errors))
      expandLists(where, value, errors, objects);
  }
  const set: ManifestSet = {
    services: [],
    endpointSlices: [],
    nodes: [],
    pods: [],
    others: [],
    all: [],
    duplicates: [],
  };
  const seen = new Map<string, string[]>();
  for (const { where, obj } of objects) {
    const kind = obj.kind;
    if (typeof kind !== 'string' || kind === '') {
      errors.push({ object: where, field: 'kind', message: 'required' });
      continue;
    }
    const known = KNOWN_KINDS[kind];
    if (!known) {
      errors.push({
        object: `${where}: ${describeObject(obj)}`,
        field: 'kind',
        message: `unknown kind ${JSON.stringify(kind)}`,
      });
      continue;
    }
    if (typeof obj.apiVersion !== 'string' || !known.apiVersions.includes(obj.apiVersion)) {
      errors.push({
        object: describeObject(obj),
        field: 'apiVersion',
        message: `must be ${known.apiVersions.join(' or ')} for kind ${kind}, got ${JSON.stringify(obj.apiVersion)}`,
      });
      continue;
    }
    if (obj.metadata !== undefined && !isObject(obj.metadata)) {
      errors.push({ object: describeObject(obj), field: 'metadata', message: 'must be an object' });
      continue;
    }
    if (known.namespaced) {
      const ns = obj.metadata?.namespace;
      obj.metadata = {
        ...obj.metadata,
        namespace: typeof ns === 'string' && ns !== '' ? ns : 'default',
      };
    }
    set.all.push(obj);
    const id = describeObject(obj);
    seen.set(id, [...(seen.get(id) ?? []), where]);
    switch (kind) {
      case 'Service':
        errors.push(...validateService(obj as Service));
        set.services.push(obj as Service);
        break;
      case 'EndpointSlice':
        errors.push(...validateEndpointSlice(obj as EndpointSlice));
        set.endpointSlices.push(obj as EndpointSlice);
        break;
      case 'Node':
        errors.push(...validateNode(obj as Node));
        set.nodes.push(obj as Node);
        break;
      default: {
        const c = new FieldErrorCollector(describeObject(obj));
        validateMeta(obj, known.namespaced, c);
        errors.push(...c.errors);
        if (kind === 'Pod') set.pods.push(obj as Pod);
        else set.others.push(obj);
      }
    }
  }
  if (errors.length > 0) throw new ValidationError(errors);
  for (const [id, places] of seen)
    if (places.length > 1)
      set.duplicates.push(
        `${id} is defined ${places.length} times (${places.join(', ')}); the last, in ${places.at(-1) ?? ''}, wins`,
      );
  return set;
}
