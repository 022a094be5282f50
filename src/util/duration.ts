// Go's duration syntax ("1h2m3.5s", "250ms", "0"), which kube-proxy's configuration and
// CoreDNS's Corefile (`lameduck 5s`) use: parsing to milliseconds and printing back in the
// shortest form. Pure; not a general time library (no days, no locale).

const SECOND = 1000;
const DURATION_UNITS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3, // U+00B5 micro sign
  μs: 1e-3, // U+03BC Greek mu
  ms: 1,
  s: SECOND,
  m: 60 * SECOND,
  h: 3600 * SECOND,
};

/** A parse result: the value, or Go's own error text (`time: invalid duration "abc"`). */
export type DurationResult = { ok: true; value: number } | { ok: false; error: string };

/**
 * time.ParseDuration, in milliseconds: `300ms`, `1.5h`, `2h45m`, `-1s`, `.5s`; a bare `0` is
 * 0. What Go refuses is refused with Go's message (netexec passes it on to its clients).
 */
export function parseGoDuration(text: string): DurationResult {
  const quoted = JSON.stringify(text);
  const invalid = { ok: false as const, error: `time: invalid duration ${quoted}` };
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    sign = rest.startsWith('-') ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === '0') return { ok: true, value: 0 };
  if (rest === '') return invalid;
  let total = 0;
  while (rest !== '') {
    const num = /^(\d*)(?:\.(\d*))?/.exec(rest);
    const whole = num?.[1] ?? '';
    const frac = num?.[2];
    if (whole === '' && (frac === undefined || frac === '')) return invalid;
    rest = rest.slice(num?.[0].length ?? 0);
    const unit = /^[^\d.]+/.exec(rest)?.[0] ?? '';
    if (unit === '') return { ok: false, error: `time: missing unit in duration ${quoted}` };
    const scale = DURATION_UNITS[unit];
    if (scale === undefined)
      return {
        ok: false,
        error: `time: unknown unit ${JSON.stringify(unit)} in duration ${quoted}`,
      };
    rest = rest.slice(unit.length);
    total += Number(`${whole === '' ? '0' : whole}.${frac ?? ''}0`) * scale;
  }
  return { ok: true, value: sign * total };
}

/** Parses a Go duration ("1h2m3.5s", "250ms", "0") into milliseconds, or undefined. */
export function parseDuration(text: string): number | undefined {
  const r = parseGoDuration(text);
  return r.ok ? r.value : undefined;
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
