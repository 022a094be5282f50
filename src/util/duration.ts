// Go's duration syntax ("1h2m3.5s", "250ms", "0"), which kube-proxy's configuration and
// CoreDNS's Corefile (`lameduck 5s`) use: parsing to milliseconds and printing back in the
// shortest form. Pure; not a general time library (no days, no locale).

const SECOND = 1000;
const DURATION_UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: SECOND,
  m: 60 * SECOND,
  h: 3600 * SECOND,
};

/** Parses a Go duration ("1h2m3.5s", "250ms", "0") into milliseconds, or undefined. */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/y;
  let total = 0;
  let pos = 0;
  const neg = text.startsWith('-');
  if (neg || text.startsWith('+')) pos = 1;
  if (pos >= text.length) return undefined;
  while (pos < text.length) {
    re.lastIndex = pos;
    const m = re.exec(text);
    if (!m) return undefined;
    total += Number(m[1]) * (DURATION_UNITS[m[2] ?? ''] ?? 0);
    pos = re.lastIndex;
  }
  return neg ? -total : total;
}

/**
 * Milliseconds as Go prints a duration: `0s`, `250ms`, `5s`, `1.5s`, `1m30s`, `1h0m0s`.
 * Sub-millisecond parts are rounded away.
 */
export function formatDuration(ms: number): string {
  const neg = ms < 0;
  let rest = Math.round(Math.abs(ms));
  if (rest === 0) return '0s';
  let out: string;
  if (rest < SECOND) out = `${String(rest)}ms`;
  else {
    const h = Math.floor(rest / 3_600_000);
    rest -= h * 3_600_000;
    const m = Math.floor(rest / 60_000);
    rest -= m * 60_000;
    const s = `${String(rest / SECOND)}s`;
    out = h > 0 ? `${String(h)}h${String(m)}m${s}` : m > 0 ? `${String(m)}m${s}` : s;
  }
  return neg ? `-${out}` : out;
}
