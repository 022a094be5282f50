// The API server's side of selectors: field selectors (`=`, `==`, `!=` with `\,` `\=` `\\`
// escapes), label selector query values parsed with kube/selectors.ts (the one label
// grammar and matcher) and answered as 400 BadRequest when they do not parse, and kubectl's
// display form of a metav1 LabelSelector. Pure. Parse errors are ApiError BadRequest, as the
// real server answers them.

import {
  LabelSelectorError,
  parseLabelSelector as parseLabels,
  type LabelRequirements,
  type LabelSelectorObject,
} from '../kube/selectors.js';
import { ApiError } from './status.js';

export interface FieldRequirement {
  readonly field: string;
  readonly op: '=' | '!=';
  readonly value: string;
}

export type FieldSelector = readonly FieldRequirement[];

/**
 * Parses a labelSelector query value; the empty string selects everything. A selector that
 * does not parse is a 400 BadRequest with the upstream message.
 */
export function parseLabelSelector(text: string): LabelRequirements {
  try {
    return parseLabels(text);
  } catch (e) {
    if (e instanceof LabelSelectorError) throw ApiError.badRequest(e.message);
    throw e;
  }
}

/** Formats a metav1 LabelSelector as kubectl shows it (`app=web,tier in (a,b)`). */
export function formatLabelSelectorObject(sel: LabelSelectorObject): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(sel.matchLabels ?? {}).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  ))
    parts.push(`${k}=${v}`);
  for (const e of sel.matchExpressions ?? []) {
    const vals = [...(e.values ?? [])].sort().join(',');
    if (e.operator === 'In') parts.push(`${e.key} in (${vals})`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${vals})`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
  }
  return parts.length === 0 ? '<none>' : parts.join(',');
}

function splitEscaped(s: string, sep: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i] ?? '';
    if (ch === '\\' && i + 1 < s.length) {
      cur += ch + (s[i + 1] ?? '');
      i++;
    } else if (ch === sep) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

function unescapeField(s: string): string {
  return s.replace(/\\(.)/g, '$1');
}

/** Parses a fieldSelector query value; the empty string selects everything. */
export function parseFieldSelector(text: string): FieldSelector {
  if (text.trim() === '') return [];
  const reqs: FieldRequirement[] = [];
  for (const term of splitEscaped(text, ',')) {
    if (term === '') continue;
    const m = /^((?:[^=!\\]|\\.)+?)\s*(==|!=|=)(.*)$/.exec(term);
    if (!m) throw ApiError.badRequest(`invalid selector: '${text}'; can't understand '${term}'`);
    reqs.push({
      field: (m[1] ?? '').trim(),
      op: m[2] === '!=' ? '!=' : '=',
      value: unescapeField(m[3] ?? ''),
    });
  }
  return reqs;
}

/**
 * Checks that every field of the selector is supported by the kind; unsupported ones get
 * the upstream 400 message.
 */
export function checkFieldSelector(sel: FieldSelector, supported: ReadonlySet<string>): void {
  for (const r of sel)
    if (!supported.has(r.field)) throw ApiError.badRequest(`field label not supported: ${r.field}`);
}

export function matchesFields(
  sel: FieldSelector,
  fields: (field: string) => string | undefined,
): boolean {
  for (const r of sel) {
    const v = fields(r.field) ?? '';
    if (r.op === '=' ? v !== r.value : v === r.value) return false;
  }
  return true;
}
