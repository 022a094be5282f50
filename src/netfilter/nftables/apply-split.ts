// Cutting a very large transaction into parts that each go to the kernel atomically. Why:
// nf_tables binds each anonymous set (every `numgen random mod N map { … }`) by walking the
// whole pending transaction, so one transaction of 10k Services costs O(n²) in the kernel
// (README-speed.md: 16 s at 10k in one, 10 s in parts of 1k Services). A part ends only
// before an `add chain` of a regular chain (no hook) once it holds `maxOps` operations:
// planners write a chain's add, flush and rules together and a Service's chains before its
// elements, so no chain is left flushed-but-empty between parts and no element points at a
// chain of a later part. Pure.

import type { Operation, Transaction } from './model.js';

export interface TransactionPart {
  /** Index of the part's first operation in the whole transaction. */
  readonly start: number;
  readonly ops: Transaction;
}

function isCut(op: Operation): boolean {
  const o = op.object;
  return (op.verb === 'add' || op.verb === 'create') && o.kind === 'chain' && o.hook === undefined;
}

/** The parts (one when `tx` is small or has no cut point). */
export function splitTransaction(tx: Transaction, maxOps: number): TransactionPart[] {
  const parts: TransactionPart[] = [];
  let start = 0;
  for (let i = 1; i < tx.length; i++) {
    if (i - start < maxOps) continue;
    if (!isCut(tx[i] as Operation)) continue;
    parts.push({ start, ops: tx.slice(start, i) });
    start = i;
  }
  parts.push({ start, ops: tx.slice(start) });
  return parts;
}
