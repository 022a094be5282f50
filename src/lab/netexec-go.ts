// The bits of Go's standard library whose observable behaviour agnhost's netexec passes on to
// its clients, so the lab's netexec answers byte for byte where an e2e test could look:
// strconv.Atoi (which query values are accepted and the error text otherwise; Go's durations
// are util/duration.ts's parseGoDuration), net.JoinHostPort, textproto's canonical header
// keys, ServeMux's path cleaning, http.Redirect's Location and body, and encoding/json's
// HTML-safe escaping. Pure: no I/O.
// Our own reading of the documented behaviour of those functions, not a port of them.

import { posix } from 'node:path';
import { STATUS_CODES } from 'node:http';

export type GoResult<T> = { ok: true; value: T } | { ok: false; error: string };

/** Go's %q for the strings netexec quotes (close enough: JSON's quoting of the same text). */
export function goQuote(s: string): string {
  return JSON.stringify(s);
}

/** strconv.Atoi: optional sign and decimal digits only, within int64. */
export function goAtoi(s: string): GoResult<number> {
  if (!/^[+-]?\d+$/.test(s))
    return { ok: false, error: `strconv.Atoi: parsing ${goQuote(s)}: invalid syntax` };
  const n = BigInt(s);
  if (n > 9223372036854775807n || n < -9223372036854775808n)
    return { ok: false, error: `strconv.Atoi: parsing ${goQuote(s)}: value out of range` };
  return { ok: true, value: Number(n) };
}

/** net.JoinHostPort, and the `ip:port` Go prints for a peer (IPv4-mapped IPv6 shown as IPv4). */
export function joinHostPort(host: string | undefined, port: number | string | undefined): string {
  const h = host?.startsWith('::ffff:') && host.includes('.') ? host.slice(7) : (host ?? '');
  const p = String(port ?? 0);
  return h.includes(':') ? `[${h}]:${p}` : `${h}:${p}`;
}

/** textproto.CanonicalMIMEHeaderKey: `x-forwarded-for` → `X-Forwarded-For`. */
export function canonicalHeaderKey(key: string): string {
  if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(key)) return key;
  return key.toLowerCase().replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => {
    return dash + c.toUpperCase();
  });
}

/** http.Header as Go's json.Marshal writes it: canonical keys, every value, no Host. */
export function headerMap(rawHeaders: readonly string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const key = canonicalHeaderKey(rawHeaders[i] ?? '');
    if (key === 'Host') continue;
    (out[key] ??= []).push(rawHeaders[i + 1] ?? '');
  }
  return out;
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
    );
  return v;
}

/** encoding/json's Marshal of maps: keys sorted, `<` `>` `&` U+2028 U+2029 escaped. */
export function goJson(v: unknown): string {
  return JSON.stringify(sortKeys(v)).replace(/[<>&\u2028\u2029]/g, (c) => {
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}

/** ServeMux's cleaned request path (`//a/./b/../c` → `/a/c`, a trailing slash kept). */
export function cleanRequestPath(p: string): string {
  return posix.normalize(p.startsWith('/') ? p : `/${p}`);
}

/** http.StatusText (Node's table; the same words for the codes netexec's clients use). */
export function statusText(code: number): string {
  return STATUS_CODES[code] ?? '';
}

/**
 * The Location http.Redirect sends: a URL with neither scheme nor host is made absolute
 * against the request's directory and cleaned (trailing slash and query kept).
 */
export function redirectLocation(location: string, requestPath: string): string {
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(location) || location.startsWith('//')) return location;
  let url = location;
  if (!url.startsWith('/')) url = requestPath.slice(0, requestPath.lastIndexOf('/') + 1) + url;
  const q = url.indexOf('?');
  const query = q >= 0 ? url.slice(q) : '';
  const path = q >= 0 ? url.slice(0, q) : url;
  let cleaned = posix.normalize(path === '' ? '/' : path);
  if (path.endsWith('/') && !cleaned.endsWith('/')) cleaned += '/';
  return cleaned + query;
}

/** The small HTML body http.Redirect writes for a GET. */
export function redirectBody(location: string, code: number): string {
  const escaped = location
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&#34;')
    .replace(/'/g, '&#39;');
  return `<a href="${escaped}">${statusText(code)}</a>.\n\n`;
}

/** A line as Go's log package prints it with its default flags: `2006/01/02 15:04:05 msg`. */
export function goLogLine(d: Date, msg: string): string {
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${String(d.getFullYear())}/${p(d.getMonth() + 1)}/${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())} ${msg}`;
}

/** time.Time's default String(), in UTC, as `/` prints it: `2006-01-02 15:04:05.999 +0000 UTC`. */
export function goTimeString(d: Date): string {
  const iso = d.toISOString(); // 2006-01-02T15:04:05.999Z
  const frac = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${frac === '' ? '' : `.${frac}`} +0000 UTC`;
}
