// CNI spec version arithmetic: parsing "x.y.z", comparing, and choosing the version a
// runtime and a plugin both speak. Pure; no I/O.

import { CniError, CniErrorCode } from './types.js';

/** Versions svcnet-cni (plugin and runtime) implements, oldest first. */
export const SUPPORTED_VERSIONS: readonly string[] = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'];

/** The version our runtime prefers when a config allows several. */
export const LATEST_VERSION = '1.1.0';

/** [major, minor, patch], or undefined when `v` is not `x.y.z` with decimal parts. */
export function parseVersion(v: string): [number, number, number] | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(v);
  if (!m) return undefined;
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/** Negative, 0 or positive like a sort comparator; unparsable versions sort first. */
export function compareVersions(a: string, b: string): number {
  const pa = parseVersion(a) ?? [-1, 0, 0];
  const pb = parseVersion(b) ?? [-1, 0, 0];
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** True when `v` is at least `min` (both `x.y.z`). */
export function versionAtLeast(v: string, min: string): boolean {
  return compareVersions(v, min) >= 0;
}

/**
 * Fails with code 1 (incompatible CNI version) unless `v` is one of `supported`; the
 * details list what is supported, as the spec asks.
 */
export function requireSupportedVersion(
  v: string,
  supported: readonly string[] = SUPPORTED_VERSIONS,
): void {
  if (!supported.includes(v))
    throw new CniError(
      CniErrorCode.incompatibleVersion,
      `incompatible CNI versions: config is "${v}", plugin supports [${supported.map((s) => `"${s}"`).join(' ')}]`,
      `supported versions: ${supported.join(', ')}`,
    );
}

/**
 * The highest version in `candidates` that every list in `supportedBy` also contains, or
 * undefined. Used by the runtime to combine `cniVersion`/`cniVersions` with what it and
 * each plugin's VERSION answer support.
 */
export function highestCommonVersion(
  candidates: readonly string[],
  ...supportedBy: readonly (readonly string[])[]
): string | undefined {
  const ok = candidates.filter((c) => parseVersion(c) && supportedBy.every((s) => s.includes(c)));
  ok.sort(compareVersions);
  return ok.at(-1);
}
