// kube-proxy's ipset version gate (ipset.go checkMinVersion / TestCheckIPSetVersion): the
// `ipset --version` text must hold a generic version with at least major.minor and be at
// least 6.0. Pure; `parseIpsetVersionOutput` reads `ipset v7.17, protocol version: 7`.

export const MIN_IPSET_VERSION = '6.0';

function parts(version: string): number[] | undefined {
  if (!/^\d+(\.\d+)+$/.test(version)) return undefined;
  return version.split('.').map(Number);
}

/** True when `version` (e.g. `7.17`) parses as major.minor[...] and is >= 6.0. */
export function isValidIpsetVersion(version: string, minimum = MIN_IPSET_VERSION): boolean {
  const v = parts(version);
  const min = parts(minimum);
  if (!v || !min) return false;
  for (let i = 0; i < Math.max(v.length, min.length); i++) {
    const a = v[i] ?? 0;
    const b = min[i] ?? 0;
    if (a !== b) return a > b;
  }
  return true;
}

/** `ipset v7.17, protocol version: 7` → `7.17`; undefined when absent. */
export function parseIpsetVersionOutput(text: string): string | undefined {
  return /\bv(\d+(?:\.\d+)+)/.exec(text)?.[1];
}
