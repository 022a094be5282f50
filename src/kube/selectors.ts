// Label selectors, the one implementation for the API server, the controllers and the
// in-memory cluster: the text grammar kube-apiserver parses (`k=v`, `k==v`, `k!=v`,
// `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k gt N`, `k lt N`, comma = AND), metav1
// LabelSelector objects (matchLabels + matchExpressions), Service-style selector maps, and
// matching labels against any of them. Pure. Parse errors are `LabelSelectorError`
// (INVALID_INPUT) with the upstream message; the API server answers them as 400 BadRequest.
// Field selectors and kubectl's display form are the API server's (apiserver/selectors.ts).

import { SvcnetError } from '../errors.js';

/** One parsed requirement; `k=v` is `in [v]`, `k!=v` is `notin [v]`. */
export type LabelRequirement =
  | { readonly key: string; readonly op: 'in' | 'notin'; readonly values: readonly string[] }
  | { readonly key: string; readonly op: 'exists' | 'doesnotexist' }
  | { readonly key: string; readonly op: 'gt' | 'lt'; readonly value: number };

/** A parsed selector: every requirement must hold (the empty list selects everything). */
export type LabelRequirements = readonly LabelRequirement[];

/** A metav1 LabelSelector as it arrives on the wire (any operator string). */
export interface LabelSelectorObject {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly {
    readonly key: string;
    readonly operator: string;
    readonly values?: readonly string[];
  }[];
}

/** A label selector that does not parse. */
export class LabelSelectorError extends SvcnetError {
  constructor(message: string) {
    super('INVALID_INPUT', message);
    this.name = 'LabelSelectorError';
  }
}

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

function bad(selector: string, why: string): LabelSelectorError {
  return new LabelSelectorError(`unable to parse requirement: ${why} (in selector "${selector}")`);
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

/** Parses a selector's text form; the empty string selects everything. */
export function parseLabelSelector(text: string): LabelRequirements {
  const s = text.trim();
  if (s === '') return [];
  return splitTerms(s).map((raw) => parseRequirement(text, raw.trim()));
}

function parseRequirement(text: string, term: string): LabelRequirement {
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
  return req;
}

/**
 * Converts a metav1 LabelSelector (matchLabels/matchExpressions) into requirements; an
 * unknown operator adds none.
 */
export function labelSelectorFromObject(sel: LabelSelectorObject): LabelRequirements {
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

/** Do these labels satisfy every requirement? */
export function matchesLabels(
  sel: LabelRequirements,
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

/**
 * Does a Service-style selector map (every key equal) match these labels? An empty map
 * matches everything; the hot path of the Service controllers, so it allocates nothing.
 */
export function matchesSelectorMap(
  selector: Readonly<Record<string, string>>,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  for (const [k, v] of Object.entries(selector)) if (labels?.[k] !== v) return false;
  return true;
}
