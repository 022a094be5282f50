// Helpers on plain JSON values, shared by the API server, the controllers and the manifest
// reader: the object test, a deep copy that drops undefined as the wire would, and deep
// equality that ignores key order and undefined members. Pure.

/** A non-null, non-array object. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep copy of JSON data (drops undefined, as the wire would). */
export function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/**
 * Deep equality of JSON data as the wire sees it: key order and undefined members do not
 * matter, and an undefined array item equals null (JSON.stringify writes it as null).
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i] ?? null, b[i] ?? null)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  if (ak.length !== bk.length) return false;
  for (const k of ak) if (!deepEqual(ao[k], bo[k])) return false;
  return true;
}

/** JSON with object keys sorted and undefined members dropped: a canonical text form. */
export function canonicalJSON(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map((x) => canonicalJSON(x ?? null)).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    const entries = Object.entries(v)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJSON(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}
