// Splitting one large `iptables-restore --noflush` input into several smaller ones, for
// iptables-nft: iptables-nft-restore 1.8.9 spends time quadratic in the rules of one input
// (10k Services × 10 endpoints never finished as one restore), while the same rules in
// inputs of ~2000 lines apply in linear time (issue 16; bench/iptables.bench.ts).
// Each chain's declaration (which flushes it under --noflush) and all its rules stay in one
// input, so every chain is replaced atomically; chains come after the chains they jump to
// (endpoint chains, then service chains, then KUBE-SERVICES and the hooks in built-in chains),
// so no rule jumps to a chain that does not exist yet, and traffic meets either a chain's old
// or its new content; `-X` of stale chains comes last, once nothing jumps to them. The whole
// is no longer one transaction: a failure part-way leaves earlier inputs applied, which the
// proxier's retry with a full sync repairs.

/** One table's lines, grouped per chain. */
interface TableLines {
  readonly header: string;
  readonly chains: Map<string, string[]>;
  /** `-X` lines and anything not tied to a chain: applied last. */
  readonly tail: string[];
}

const CHAIN_OP = /^-[AIDRFNZ] (\S+)/;
const JUMP = / -[jg] (\S+)/g;

function parseTables(text: string): TableLines[] | undefined {
  const tables: TableLines[] = [];
  let cur: TableLines | undefined;
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('*')) {
      cur = { header: line, chains: new Map(), tail: [] };
      continue;
    }
    if (cur === undefined) return undefined;
    if (line === 'COMMIT') {
      tables.push(cur);
      cur = undefined;
      continue;
    }
    const chain = line.startsWith(':') ? line.slice(1).split(' ')[0] : CHAIN_OP.exec(line)?.[1];
    if (chain === undefined || line.startsWith('-X ')) {
      cur.tail.push(line);
      continue;
    }
    const block = cur.chains.get(chain);
    if (block === undefined) cur.chains.set(chain, [line]);
    else block.push(line);
  }
  return cur === undefined ? tables : undefined;
}

/** Chains ordered so that each comes after every chain of the table it jumps to. */
function dependencyOrder(chains: Map<string, string[]>): string[] {
  const depth = new Map<string, number>();
  const visit = (c: string, seen: Set<string>): number => {
    const known = depth.get(c);
    if (known !== undefined) return known;
    if (seen.has(c)) return 0;
    seen.add(c);
    let d = 0;
    for (const line of chains.get(c) ?? [])
      for (const m of line.matchAll(JUMP)) {
        const target = m[1] ?? '';
        if (chains.has(target)) d = Math.max(d, visit(target, seen) + 1);
      }
    depth.set(c, d);
    return d;
  };
  const names = [...chains.keys()];
  for (const c of names) visit(c, new Set());
  // Stable: equal depths keep the input's order.
  return names
    .map((c, i) => ({ c, i, d: depth.get(c) ?? 0 }))
    .sort((a, b) => a.d - b.d || a.i - b.i)
    .map((x) => x.c);
}

/**
 * The input as restores of at most about `maxLines` lines each (a chain larger than that is
 * one restore by itself); the input unchanged when it is no longer, or not in the shape
 * iptables-save writes. See the file header.
 */
export function chunkRestoreInput(text: string, maxLines: number): string[] {
  let lines = 0;
  for (let i = text.indexOf('\n'); i !== -1 && lines <= maxLines; i = text.indexOf('\n', i + 1))
    lines++;
  if (lines <= maxLines) return [text];
  const tables = parseTables(text);
  if (tables === undefined) return [text];
  const out: string[] = [];
  for (const t of tables) {
    const chunks: string[][] = [];
    let cur: string[] = [];
    for (const c of dependencyOrder(t.chains)) {
      const block = t.chains.get(c) ?? [];
      if (cur.length > 0 && cur.length + block.length > maxLines) {
        chunks.push(cur);
        cur = [];
      }
      cur.push(...block);
    }
    cur.push(...t.tail);
    chunks.push(cur);
    for (const ch of chunks) out.push(`${t.header}\n${ch.join('\n')}\nCOMMIT\n`);
  }
  return out;
}
