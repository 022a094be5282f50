// Label and field selectors as kube-apiserver parses and matches them: the label grammar
// (`k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k gt N`, `k lt N`,
// comma = AND) and the field grammar (`=`, `==`, `!=` with `\,` `\=` `\\` escapes). Pure.
// Parse errors are ApiError BadRequest, as the real server answers them.

import { ApiError } from './status.js';

export type LabelRequirement =
  | { readonly key: string; readonly op: 'in' | 'notin'; readonly values: readonly string[] }
  | { readonly key: string; readonly op: 'exists' | 'doesnotexist' }
  | { readonly key: string; readonly op: 'gt' | 'lt'; readonly value: number };

export type LabelSelector = readonly LabelRequirement[];

export interface FieldRequirement {
  readonly field: string;
  readonly op: '=' | '!=';
  readonly value: string;
}

export type FieldSelector = readonly FieldRequirement[];

const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function isLabelKey(k: string): boolean {
  const slash = k.indexOf('/');
  const name = slash < 0 ? k : k.slice(slash + 1);
  if (slash >= 0) {
    const prefix = k.slice(0, slash);
    if (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)) return false;
  }
  return name.length <= 63 && LABEL_NAME.test(name);
}

function isLabelValue(v: string): boolean {
  return v === '' || (v.length <= 63 && LABEL_NAME.test(v));
}

function bad(selector: string, why: string): ApiError {
  return ApiError.badRequest(`unable to parse requirement: ${why} (in selector "${selector}")`);
}

/** Splits on commas that are not inside parentheses. */
function splitTerms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

/** Parses a labelSelector query value; the empty string selects everything. */
export function parseLabelSelector(text: string): LabelSelector {
  const s = text.trim();
  if (s === '') return [];
  const reqs: LabelRequirement[] = [];
  for (const raw of splitTerms(s)) {
    const term = raw.trim();
    if (term === '') throw bad(text, 'empty requirement');
    let m: RegExpExecArray | null;
    let req: LabelRequirement;
    if ((m = /^!\s*([^\s=!(),]+)$/.exec(term))) req = { key: m[1] ?? '', op: 'doesnotexist' };
    else if ((m = /^([^\s=!(),]+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term))) {
      const values = (m[3] ?? '')
        .split(',')
        .map((v) => v.trim())
        .filter((v, i, a) => !(v === '' && a.length === 1));
      for (const v of values) if (!isLabelValue(v)) throw bad(text, `invalid label value "${v}"`);
      if (values.length === 0)
        throw bad(text, `for 'in', 'notin' operators, values set can't be empty`);
      req = { key: m[1] ?? '', op: m[2] === 'in' ? 'in' : 'notin', values };
    } else if ((m = /^([^\s=!(),]+)\s+(gt|lt)\s+(\S+)$/.exec(term))) {
      const n = Number(m[3]);
      if (!Number.isInteger(n))
        throw bad(text, `for 'gt', 'lt' operators, the value must be an integer`);
      req = { key: m[1] ?? '', op: m[2] === 'gt' ? 'gt' : 'lt', value: n };
    } else if ((m = /^([^\s=!(),]+)\s*(==|=|!=)\s*([^\s=!(),]*)$/.exec(term))) {
      const v = m[3] ?? '';
      if (!isLabelValue(v)) throw bad(text, `invalid label value: "${v}"`);
      req = { key: m[1] ?? '', op: m[2] === '!=' ? 'notin' : 'in', values: [v] };
    } else if ((m = /^([^\s=!(),]+)$/.exec(term))) req = { key: m[1] ?? '', op: 'exists' };
    else throw bad(text, `found '${term}', expected: identifier`);
    if (!isLabelKey(req.key)) throw bad(text, `invalid label key "${req.key}"`);
    reqs.push(req);
  }
  return reqs;
}

/** Converts a metav1 LabelSelector (matchLabels/matchExpressions) into requirements. */
export function labelSelectorFromObject(sel: {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}): LabelSelector {
  const reqs: LabelRequirement[] = [];
  for (const [k, v] of Object.entries(sel.matchLabels ?? {}))
    reqs.push({ key: k, op: 'in', values: [v] });
  for (const e of sel.matchExpressions ?? []) {
    const op = e.operator;
    if (op === 'In') reqs.push({ key: e.key, op: 'in', values: e.values ?? [] });
    else if (op === 'NotIn') reqs.push({ key: e.key, op: 'notin', values: e.values ?? [] });
    else if (op === 'Exists') reqs.push({ key: e.key, op: 'exists' });
    else if (op === 'DoesNotExist') reqs.push({ key: e.key, op: 'doesnotexist' });
  }
  return reqs;
}

/** Formats a metav1 LabelSelector as kubectl shows it (`app=web,tier in (a,b)`). */
export function formatLabelSelectorObject(sel: {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}): string {
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

export function matchesLabels(
  sel: LabelSelector,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  for (const r of sel) {
    const has = labels !== undefined && Object.hasOwn(labels, r.key);
    const v = has ? labels[r.key] : undefined;
    switch (r.op) {
      case 'in':
        if (v === undefined || !r.values.includes(v)) return false;
        break;
      case 'notin':
        if (v !== undefined && r.values.includes(v)) return false;
        break;
      case 'exists':
        if (!has) return false;
        break;
      case 'doesnotexist':
        if (has) return false;
        break;
      case 'gt':
      case 'lt': {
        const n = v === undefined ? NaN : Number(v);
        if (!Number.isInteger(n)) return false;
        if (r.op === 'gt' ? !(n > r.value) : !(n < r.value)) return false;
        break;
      }
    }
  }
  return true;
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
