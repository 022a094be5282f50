// The page's state in its URL (shareable): `?view=map|rules|trace` plus the view's own
// parameters (`service`, `node`, `q`, and the trace's `src`, `dst`, `proto`, `tnode`).

export type View = 'map' | 'rules' | 'trace';

export function readParams(): URLSearchParams {
  return new URLSearchParams(window.location.search);
}

export function viewOf(p: URLSearchParams): View {
  const v = p.get('view');
  return v === 'rules' || v === 'trace' ? v : 'map';
}

/** Replaces (or pushes) the query string with `params`, dropping empty values. */
export function writeParams(params: Record<string, string | undefined>, push = false): void {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') p.set(k, v);
  const url = `${window.location.pathname}?${p.toString()}`;
  if (push) window.history.pushState(null, '', url);
  else window.history.replaceState(null, '', url);
}

/** `0.3333` → `1/3` (denominators up to 64), else a percentage. */
export function fraction(p: number): string {
  if (p === 1) return '1/1';
  for (let d = 2; d <= 64; d++) {
    const n = Math.round(p * d);
    if (n > 0 && Math.abs(n / d - p) < 1e-6) return `${n}/${d}`;
  }
  return `${(p * 100).toFixed(1)}%`;
}
