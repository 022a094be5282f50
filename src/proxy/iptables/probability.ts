// computeProbability: the `--probability` value of the statistic rule that picks one of n
// remaining endpoints, 1/n printed like Go's `%0.10f` (ten decimals, correctly rounded from
// the float64 value; an exact tie — only possible when 1/n is exact, n a power of two —
// rounds half to even, where JS's toFixed would round up). Memoised per n. Pure.

const cache = new Map<number, string>();
const SCALE = 10_000_000_000n;

function isPowerOfTwo(n: number): boolean {
  return Number.isInteger(n) && n > 0 && (n & (n - 1)) === 0;
}

function format(n: number): string {
  if (!isPowerOfTwo(n)) return (1 / n).toFixed(10);
  const big = BigInt(n);
  let q = SCALE / big;
  const rem = SCALE % big;
  if (rem * 2n > big || (rem * 2n === big && q % 2n === 1n)) q += 1n;
  const digits = q.toString().padStart(11, '0');
  return `${digits.slice(0, -10)}.${digits.slice(-10)}`;
}

/** `%0.10f` of 1/n, e.g. 3 → `0.3333333333`. */
export function computeProbability(n: number): string {
  let s = cache.get(n);
  if (s === undefined) {
    s = format(n);
    if (cache.size < 100_000) cache.set(n, s);
  }
  return s;
}
