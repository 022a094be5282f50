// Manifest parsing: multi-document YAML or JSON text (as `kubectl apply -f` takes it), with
// `List` kinds (v1 List and the *List kinds) expanded, every object checked and sorted by kind.
// Pure: callers read the files. On any problem it throws one ValidationError listing every
// problem found in every document, each naming the file/document, object and field.

import { parseAllDocuments, parseDocument } from 'yaml';
import { ValidationError, type FieldError } from '../errors.js';
import { isPlainObject } from '../util/json.js';
import { validateServiceCIDR } from './service-cidr.js';
import type { EndpointSlice, KubeObject, Node, Pod, Service, ServiceCIDR } from './types.js';
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
  ServiceCIDR: { apiVersions: ['networking.k8s.io/v1'], namespaced: false },
};

export function isKnownKind(kind: string): boolean {
  return Object.hasOwn(KNOWN_KINDS, kind);
}

interface YamlErrorLike {
  readonly message: string;
  readonly linePos?: readonly { line: number; col: number }[] | undefined;
}

/**
 * One YAML syntax error as one line, located once: `FILE:LINE:COLUMN: invalid YAML: REASON:
 * "the offending line"`. The yaml library repeats the position inside its message and adds
 * a caret picture on further lines; both are dropped.
 */
export function formatYamlError(path: string, text: string, e: YamlErrorLike): FieldError {
  const pos = e.linePos?.[0];
  const reason = (e.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?\s*$/, '');
  if (!pos) return { object: path, field: '', message: `invalid YAML: ${reason}` };
  const line = (text.split('\n', pos.line)[pos.line - 1] ?? '').trimEnd();
  const shown = line.length > 120 ? `${line.slice(0, 117)}...` : line;
  return {
    object: `${path}:${pos.line}:${pos.col}`,
    field: '',
    message: `invalid YAML: ${reason}${shown.trim() !== '' ? `: ${JSON.stringify(shown)}` : ''}`,
  };
}

/**
 * A YAML failure that is not a syntax error, as one line: an alias bomb (the yaml library
 * refuses to expand more than its alias budget) or nesting too deep for the parser's stack.
 */
function yamlFailure(where: string, e: unknown): FieldError {
  const msg = e instanceof Error ? e.message : String(e);
  if (e instanceof RangeError)
    return { object: where, field: '', message: 'invalid YAML: nested too deeply' };
  if (/alias/i.test(msg))
    return {
      object: where,
      field: '',
      message: 'invalid YAML: too many alias expansions (a YAML "billion laughs" document?)',
    };
  return { object: where, field: '', message: `invalid YAML: ${msg.split('\n')[0] ?? ''}` };
}

/**
 * Deepest nesting a manifest may have. Kubernetes objects nest a dozen levels or so (a Pod
 * template's container's probe's httpGet is about 10); the parser recurses per level, so a
 * hostile 100,000-deep document would cost a stack overflow and hundreds of MB first.
 */
export const MAX_MANIFEST_DEPTH = 100;

/**
 * The first line (1-based) where `text` nests deeper than `max` levels, counting flow
 * brackets (`[`, `{` outside quotes and comments) and block indentation levels; 0 when it
 * does not. Linear and allocation-free, so it runs before the parser.
 */
export function findExcessiveNesting(text: string, max = MAX_MANIFEST_DEPTH): number {
  const indents: number[] = [];
  let flow = 0;
  let line = 1;
  let i = 0;
  while (i < text.length) {
    let indent = 0;
    while (text[i] === ' ') {
      indent++;
      i++;
    }
    const c0 = text[i];
    if (c0 !== undefined && c0 !== '\n' && c0 !== '#' && c0 !== '\r' && flow === 0) {
      while (indents.length > 0 && (indents[indents.length - 1] ?? 0) >= indent) indents.pop();
      indents.push(indent);
    }
    let quote = '';
    for (; i < text.length && text[i] !== '\n'; i++) {
      const c = text[i];
      if (quote !== '') {
        if (c === quote) quote = '';
        else if (c === '\\' && quote === '"') i++;
        continue;
      }
      if (c === '"' || c === "'") quote = c;
      else if (c === '#' && (i === 0 || /[\s]/.test(text[i - 1] ?? ''))) {
        while (i < text.length && text[i] !== '\n') i++;
        break;
      } else if (c === '[' || c === '{') flow++;
      else if ((c === ']' || c === '}') && flow > 0) flow--;
      if (flow + indents.length > max) return line;
    }
    if (indents.length + flow > max) return line;
    line++;
    i++;
  }
  return 0;
}

/**
 * Parses one YAML/JSON document (a config file) with the same guards as manifests: nesting
 * depth checked first, the first syntax error located once, alias bombs refused. Returns the
 * value, or the one FieldError naming `path`.
 */
export function parseYamlDocument(
  path: string,
  text: string,
): { value: unknown; error?: undefined } | { value?: undefined; error: FieldError } {
  const deep = findExcessiveNesting(text);
  if (deep > 0)
    return {
      error: {
        object: `${path}:${deep}`,
        field: '',
        message: `nested more than ${MAX_MANIFEST_DEPTH} levels deep`,
      },
    };
  try {
    const doc = parseDocument(text, { uniqueKeys: true });
    const first = doc.errors[0];
    if (first !== undefined) return { error: formatYamlError(path, text, first) };
    return { value: doc.toJS() as unknown };
  } catch (e) {
    return { error: yamlFailure(path, e) };
  }
}

/** Parses YAML/JSON text into raw documents; syntax errors become FieldErrors. */
function parseDocuments(
  src: ManifestSource,
  errors: FieldError[],
): { where: string; value: unknown }[] {
  const out: { where: string; value: unknown }[] = [];
  const deep = findExcessiveNesting(src.text);
  if (deep > 0) {
    errors.push({
      object: `${src.path}:${deep}`,
      field: '',
      message: `nested more than ${MAX_MANIFEST_DEPTH} levels deep`,
    });
    return out;
  }
  let list;
  try {
    const docs = parseAllDocuments(src.text, { uniqueKeys: true });
    list = Array.isArray(docs) ? docs : [docs];
  } catch (e) {
    errors.push(yamlFailure(src.path, e));
    return out;
  }
  for (const [i, doc] of list.entries()) {
    const where = list.length > 1 ? `${src.path} (document ${i + 1})` : src.path;
    const first = doc.errors[0];
    if (first !== undefined) {
      // The first error only: the ones after a syntax error are mostly its echoes.
      errors.push(formatYamlError(src.path, src.text, first));
      return out;
    }
    let value: unknown;
    try {
      value = doc.toJS();
    } catch (e) {
      errors.push(yamlFailure(where, e));
      continue;
    }
    if (value === null || value === undefined) continue; // empty document, e.g. after a trailing ---
    out.push({ where, value });
  }
  return out;
}

function expandLists(
  where: string,
  value: unknown,
  errors: FieldError[],
  into: { where: string; obj: KubeObject }[],
): void {
  if (!isPlainObject(value)) {
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

/** Checks one object and files it into `set`; its problems go to `out`. */
function addObject(where: string, obj: KubeObject, set: ManifestSet, out: FieldError[]): void {
  const kind = obj.kind;
  if (typeof kind !== 'string' || kind === '') {
    out.push({ object: where, field: 'kind', message: 'required' });
    return;
  }
  const known = KNOWN_KINDS[kind];
  if (!known) {
    out.push({
      object: `${where}: ${describeObject(obj)}`,
      field: 'kind',
      message: `unknown kind ${JSON.stringify(kind)}`,
    });
    return;
  }
  if (typeof obj.apiVersion !== 'string' || !known.apiVersions.includes(obj.apiVersion)) {
    out.push({
      object: describeObject(obj),
      field: 'apiVersion',
      message: `must be ${known.apiVersions.join(' or ')} for kind ${kind}, got ${JSON.stringify(obj.apiVersion)}`,
    });
    return;
  }
  if (obj.metadata !== undefined && !isPlainObject(obj.metadata)) {
    out.push({ object: describeObject(obj), field: 'metadata', message: 'must be an object' });
    return;
  }
  if (known.namespaced) {
    const ns = obj.metadata?.namespace;
    obj.metadata = {
      ...obj.metadata,
      namespace: typeof ns === 'string' && ns !== '' ? ns : 'default',
    };
  }
  set.all.push(obj);
  switch (kind) {
    case 'Service':
      out.push(...validateService(obj as Service));
      set.services.push(obj as Service);
      break;
    case 'EndpointSlice':
      out.push(...validateEndpointSlice(obj as EndpointSlice));
      set.endpointSlices.push(obj as EndpointSlice);
      break;
    case 'Node':
      out.push(...validateNode(obj as Node));
      set.nodes.push(obj as Node);
      break;
    case 'ServiceCIDR':
      out.push(...validateServiceCIDR(obj as ServiceCIDR));
      set.others.push(obj);
      break;
    default: {
      const c = new FieldErrorCollector(describeObject(obj));
      validateMeta(obj, known.namespaced, c);
      out.push(...c.errors);
      if (kind === 'Pod') set.pods.push(obj as Pod);
      else set.others.push(obj);
    }
  }
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
    const found: FieldError[] = [];
    const before = set.all.length;
    addObject(where, obj, set, found);
    if (set.all.length > before) {
      const id = describeObject(obj);
      seen.set(id, [...(seen.get(id) ?? []), where]);
    }
    // Every problem names the file (and document) first, then the object and field.
    for (const e of found)
      errors.push(e.object.startsWith(where) ? e : { ...e, object: `${where}: ${e.object}` });
  }
  if (errors.length > 0) throw new ValidationError(errors);
  for (const [id, places] of seen)
    if (places.length > 1)
      set.duplicates.push(
        `${id} is defined ${places.length} times (${places.join(', ')}); the last, in ${places.at(-1) ?? ''}, wins`,
      );
  return set;
}
