// Go-style durations as kube-proxy's flags and KubeProxyConfiguration spell them
// (`1s`, `500ms`, `1h30m`, `0`), converted to milliseconds. Pure.

import { SvcnetError } from '../errors.js';

const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Parses a Go duration into milliseconds; throws INVALID_INPUT on anything else. */
export function parseDuration(text: string): number {
  const t = text.trim();
  if (t === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let pos = 0;
  for (let m = re.exec(t); m !== null; m = re.exec(t)) {
    total += Number(m[1]) * (UNIT_MS[m[2] ?? ''] ?? 0);
    pos = re.lastIndex;
  }
  if (t === '' || pos !== t.length)
    throw new SvcnetError(
      'INVALID_INPUT',
      `not a duration (like 1s, 500ms, 1h30m): ${JSON.stringify(text)}`,
    );
  return Math.round(total);
}
