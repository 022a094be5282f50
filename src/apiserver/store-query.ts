// The read side of the Store's semantics: label and field selectors checked against what a
// resource supports, namespace scoping, resourceVersion parameters, and paginated lists with
// opaque continue tokens (which pin the list to the resourceVersion of its first page). No
// I/O and no state: the Store passes in its committed objects.

import { matchesLabels, type LabelRequirements as LabelSelector } from '../kube/selectors.js';
import type { StoredObject } from './object.js';
import { fieldValue, supportedFields, type ResourceType } from './resources.js';
import {
  checkFieldSelector,
  matchesFields,
  parseFieldSelector,
  parseLabelSelector,
  type FieldSelector,
} from './selectors.js';
import { ApiError } from './status.js';
import type { ListOptions, ListResult } from './store-types.js';

/** Parsed label and field selectors of a list or watch. */
export interface Selection {
  readonly labels: LabelSelector;
  readonly fields: FieldSelector;
}

/** Parses both selectors; 400 for a malformed one or a field `rt` cannot be selected by. */
export function parseSelection(
  rt: ResourceType,
  opts: { readonly labelSelector?: string; readonly fieldSelector?: string },
): Selection {
  const labels = parseLabelSelector(opts.labelSelector ?? '');
  const fields = parseFieldSelector(opts.fieldSelector ?? '');
  checkFieldSelector(fields, supportedFields(rt));
  return { labels, fields };
}

/** Whether `o` is in namespace `ns` (any when undefined) and matches the selectors. */
export function matchesSelection(
  rt: ResourceType,
  o: StoredObject,
  ns: string | undefined,
  { labels, fields }: Selection,
): boolean {
  if (rt.namespaced && ns !== undefined && o.metadata.namespace !== ns) return false;
  if (!matchesLabels(labels, o.metadata.labels)) return false;
  return fields.length === 0 || matchesFields(fields, (f) => fieldValue(rt, o, f));
}

/** A resourceVersion parameter; undefined when absent, 400 when not a number. */
export function parseRV(s: string | undefined): number | undefined {
  if (s === undefined || s === '') return undefined;
  if (!/^\d+$/.test(s)) throw ApiError.badRequest(`invalid resource version: "${s}"`);
  return Number(s);
}

/**
 * One page of the committed objects of `rt` (by store key order) at `committedRV`; 410 for
 * `resourceVersionMatch=Exact` on another resourceVersion.
 */
export function listObjects(
  rt: ResourceType,
  ns: string | undefined,
  opts: ListOptions,
  table: ReadonlyMap<string, StoredObject>,
  committedRV: number,
): ListResult {
  const selection = parseSelection(rt, opts);
  const rv = parseRV(opts.resourceVersion);
  if (opts.resourceVersionMatch === 'Exact' && rv !== undefined && rv !== committedRV)
    throw ApiError.gone(`too old resource version: ${rv} (${committedRV})`);
  let start = '';
  let listRV = committedRV;
  if (opts.continue !== undefined && opts.continue !== '') {
    const token = decodeContinue(opts.continue);
    start = token.start;
    listRV = token.rv;
  }
  const keys = [...table.keys()].sort();
  const items: StoredObject[] = [];
  const limit = opts.limit !== undefined && opts.limit > 0 ? opts.limit : Infinity;
  let next: string | undefined;
  let remaining = 0;
  for (const key of keys) {
    if (start !== '' && key <= start) continue;
    const o = table.get(key);
    if (!o || !matchesSelection(rt, o, ns, selection)) continue;
    if (items.length >= limit) {
      remaining++;
      continue;
    }
    items.push(o);
    if (items.length === limit) next = key;
  }
  const more = remaining > 0 && next !== undefined;
  return {
    items,
    resourceVersion: String(listRV),
    ...(more && next !== undefined
      ? { continue: encodeContinue(listRV, next), remainingItemCount: remaining }
      : {}),
  };
}

function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start })).toString('base64url');
}

function decodeContinue(token: string): { rv: number; start: string } {
  try {
    const t = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as {
      rv?: unknown;
      start?: unknown;
    };
    if (typeof t.rv === 'number' && typeof t.start === 'string')
      return { rv: t.rv, start: t.start };
  } catch {
    // fall through
  }
  throw ApiError.badRequest('continue key is not valid: invalid format');
}
