// The nftables apply side the proxier programs through: the `NftBackend` seam (apply one
// transaction for a family atomically, read a table back, list the ruleset, delete a table,
// check that nft and nf_tables work), the real backend that runs `nft` through the Execer
// seam in the caller's network namespace (wrap the Execer with os/netns.ts netnsExecer for
// another one), and a backend over the atomic NftFake for unit tests. The real backend hands
// nft a cache-free encoding of the transaction (apply-encode.ts: the same objects and rules,
// written so nft 1.0.6 need not download the ruleset first) and can split a very large one
// into parts at Service boundaries (apply-split.ts); README-speed.md has the measurements
// behind both. Errors name the failing operation and the line nft rejected.

import { SvcnetError } from '../../errors.js';
import { ExecError } from '../../os/exec.js';
import type { ExecResult, Execer } from '../../os/exec.js';
import type { IPFamily } from '../../util/ip.js';
import type { NftFamily, NftSet, Ruleset, TableRef, TableState, Transaction } from './model.js';
import { tableKey } from './model.js';
import { NftError, NftFake } from './fake.js';
import { parseRuleset } from './parse.js';
import { dump, renderOperation, renderTransaction } from './render.js';
import { assembleTable, withoutRules } from './apply-read.js';
import type { Encoded } from './apply-encode.js';
import { encodeFast, encodePlain, learnDefinitions, operationAt, setKey } from './apply-encode.js';
import { splitTransaction } from './apply-split.js';

/** The nft family of an IP family's kube-proxy-style table (`ip` / `ip6`). */
export function nftFamilyOf(family: IPFamily): NftFamily {
  return family === 'IPv6' ? 'ip6' : 'ip';
}

export interface ApplyOptions {
  /**
   * Allow a transaction larger than the backend's part size to reach the kernel as several
   * transactions, cut only before a regular chain's `add chain` (so one chain's flush and
   * rules, and a Service's chains, rules and elements as the planner orders them, stay
   * together). Each part is atomic; a failing part stops the rest (earlier parts stay
   * applied). For cold-start full syncs at 10k+ Services: nf_tables binds every anonymous
   * map by walking the whole pending transaction, so one huge transaction is quadratic.
   * Default false: the whole transaction is one atomic `nft -f`.
   */
  readonly split?: boolean;
}

export interface ReadTableOptions {
  /**
   * false: chains without their rules, named sets and maps with their elements, no anonymous
   * sets: what a full sync's diff reads (chain names, Service elements, affinity sets), at
   * 10k Services about ten times cheaper than `nft list table` (whose anonymous-map listing
   * is quadratic in the kernel). Default true: everything, rules included.
   */
  readonly rules?: boolean;
}

export interface NftAvailability {
  /** nft runs and the kernel answers nf_tables requests in this namespace. */
  readonly ok: boolean;
  /** `1.0.6` (or `fake`). */
  readonly version?: string;
  /** Why not, when !ok. */
  readonly reason?: string;
}

/**
 * What the nftables proxier needs from the kernel for one IP family (real or Fake). The
 * shape of proxy/nftables/proxier.ts's `ProxierNft` (apply, readTable) plus the rest.
 */
export interface NftBackend {
  readonly family: IPFamily;
  /**
   * Applies the transaction atomically (all or nothing, as `nft -f -`); resolves with the
   * bytes handed to nft. Rejects with NftApplyError naming the failing operation.
   */
  apply(tx: Transaction, opts?: ApplyOptions): Promise<number>;
  /** The table as the kernel holds it now; undefined when it does not exist. */
  readTable(ref: TableRef, opts?: ReadTableOptions): Promise<TableState | undefined>;
  /** `nft list ruleset` text (the tracer's input; the restart and canary-like checks). */
  listRuleset(): Promise<string>;
  /** Deletes the table; false when it did not exist. */
  deleteTable(ref: TableRef): Promise<boolean>;
  /** Whether nft and nf_tables work here, and nft's version. Never throws. */
  availability(): Promise<NftAvailability>;
}

/** A transaction nft (or the Fake) refused. The kernel is unchanged (for a split apply: from the failing part on). */
export class NftApplyError extends SvcnetError {
  /** The failing operation's 0-based index in the transaction given to apply(), when known. */
  readonly index: number | undefined;
  /** The 1-based line of the text handed to nft that it rejected, when it named one. */
  readonly line: number | undefined;
  /** nft's stderr (empty for the Fake). */
  readonly stderr: string;
  readonly result: ExecResult | undefined;

  constructor(
    message: string,
    detail: { index?: number; line?: number; stderr?: string; result?: ExecResult },
    cause?: unknown,
  ) {
    super('NFT_FAILED', message, { cause });
    this.name = 'NftApplyError';
    this.index = detail.index;
    this.line = detail.line;
    this.stderr = detail.stderr ?? '';
    this.result = detail.result;
  }
}

/** An operation as one short line for messages. */
export function describeOperation(tx: Transaction, index: number): string {
  const op = tx[index];
  if (op === undefined) return `operation ${String(index + 1)}`;
  const line = renderOperation(op);
  return `operation ${String(index + 1)} (${line.length > 200 ? `${line.slice(0, 197)}...` : line})`;
}

/** An NftBackend over the atomic NftFake (unit tests, dry runs). */
export class FakeNftBackend implements NftBackend {
  readonly family: IPFamily;
  readonly kernel: NftFake;
  /** Every transaction applied, in order. */
  readonly applied: Transaction[] = [];

  constructor(family: IPFamily = 'IPv4', kernel: NftFake = new NftFake()) {
    this.family = family;
    this.kernel = kernel;
  }

  apply(tx: Transaction): Promise<number> {
    try {
      this.kernel.run(tx);
    } catch (e) {
      if (e instanceof NftError)
        return Promise.reject(
          new NftApplyError(`nft (fake): ${describeOperation(tx, e.index)}: ${e.message}`, {
            index: e.index,
          }),
        );
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    this.applied.push(tx);
    return Promise.resolve(Buffer.byteLength(renderTransaction(tx)));
  }

  readTable(ref: TableRef, opts: ReadTableOptions = {}): Promise<TableState | undefined> {
    const t = this.kernel.ruleset().tables.get(tableKey(ref));
    return Promise.resolve(t === undefined || opts.rules !== false ? t : withoutRules(t));
  }

  listRuleset(): Promise<string> {
    return Promise.resolve(dump(this.kernel.ruleset()));
  }

  async deleteTable(ref: TableRef): Promise<boolean> {
    if (!this.kernel.ruleset().tables.has(tableKey(ref))) return false;
    await this.apply([{ verb: 'delete', object: { kind: 'table', ...ref } }]);
    return true;
  }

  availability(): Promise<NftAvailability> {
    return Promise.resolve({ ok: true, version: 'fake' });
  }
}

/** The parts of `nft`'s stderr that locate an error: `/dev/stdin:12:30-41: Error: …`. */
export interface NftErrorLocation {
  readonly line: number;
  readonly column?: number;
  readonly message: string;
}

const LOCATED = /^(?:\/dev\/stdin|-|[^\s:]+):(\d+):(\d+)(?:-\d+)?: Error: (.*)$/m;

/** The first located error in nft's stderr, if any. */
export function locateNftError(stderr: string): NftErrorLocation | undefined {
  const m = LOCATED.exec(stderr);
  if (m === null) return undefined;
  return { line: Number(m[1]), column: Number(m[2]), message: m[3] ?? '' };
}

export interface RealNftOptions {
  /** The nft binary (default `nft`). */
  readonly nft?: string;
  /**
   * `fast` (default): the cache-free encoding (apply-encode.ts), falling back to the plain
   * text once when nft refuses it; `plain`: the renderer's text as is.
   */
  readonly encoding?: 'fast' | 'plain';
  /** Operations per part when apply() may split (default 8000: about 1k Services). */
  readonly partOps?: number;
  /** Kill nft after this long (default 10 min: a cold 10k+ Service load takes seconds). */
  readonly timeoutMs?: number;
}

const NOT_FOUND = /No such file or directory/;

/** How many listings readTable runs at once. */
const READ_CONCURRENCY = 4;

async function mapLimit<T, R>(
  items: readonly T[],
  n: number,
  f: (t: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const k = next++;
      out[k] = await f(items[k] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  return out;
}

/** The nft tool for one family, through the Execer (so in the Execer's network namespace). */
export class RealNftBackend implements NftBackend {
  readonly family: IPFamily;
  private readonly execer: Execer;
  private readonly nft: string;
  private readonly encoding: 'fast' | 'plain';
  private readonly partOps: number;
  private readonly timeoutMs: number;
  /** Definitions of the named sets this backend applied or read (for the fast encoding). */
  private readonly known = new Map<string, NftSet>();

  constructor(execer: Execer, family: IPFamily, opts: RealNftOptions = {}) {
    this.execer = execer;
    this.family = family;
    this.nft = opts.nft ?? 'nft';
    this.encoding = opts.encoding ?? 'fast';
    this.partOps = opts.partOps ?? 8000;
    this.timeoutMs = opts.timeoutMs ?? 600_000;
  }

  private run(args: readonly string[], stdin?: string): Promise<ExecResult> {
    return this.execer.run({
      cmd: this.nft,
      args,
      ...(stdin !== undefined ? { stdin } : {}),
      timeoutMs: this.timeoutMs,
    });
  }

  private async checked(args: readonly string[]): Promise<string> {
    const r = await this.run(args);
    if (r.code !== 0)
      throw new ExecError(`${this.nft} ${args.join(' ')}: exit ${r.code}: ${r.stderr.trim()}`, r);
    return r.stdout;
  }

  async apply(tx: Transaction, opts: ApplyOptions = {}): Promise<number> {
    if (tx.length === 0) return 0;
    const parts =
      opts.split === true ? splitTransaction(tx, this.partOps) : [{ start: 0, ops: tx }];
    let bytes = 0;
    for (const [k, p] of parts.entries()) {
      const where = parts.length > 1 ? ` (part ${String(k + 1)} of ${String(parts.length)})` : '';
      bytes += await this.applyPart(tx, p.start, p.ops, where);
    }
    return bytes;
  }

  private async applyPart(
    whole: Transaction,
    start: number,
    ops: Transaction,
    where: string,
  ): Promise<number> {
    let bytes = 0;
    if (this.encoding === 'fast') {
      const enc = encodeFast(ops, this.known);
      const r = await this.run(['-f', '-'], enc.text);
      bytes += Buffer.byteLength(enc.text);
      if (r.code === 0) {
        learnDefinitions(this.known, ops);
        return bytes;
      }
      // Refused as a whole (the kernel is unchanged): the plain form names the operation
      // exactly, and succeeds where the fast form's re-declared definition differed.
    }
    const enc = encodePlain(ops);
    const r = await this.run(['-f', '-'], enc.text);
    bytes += Buffer.byteLength(enc.text);
    if (r.code !== 0) throw this.applyError(whole, start, enc, r, where);
    learnDefinitions(this.known, ops);
    return bytes;
  }

  private applyError(
    whole: Transaction,
    start: number,
    enc: Encoded,
    r: ExecResult,
    where: string,
  ): NftApplyError {
    const loc = locateNftError(r.stderr);
    const at = loc === undefined ? undefined : operationAt(enc, loc.line, loc.column);
    const index = at === undefined ? undefined : start + at;
    const what = index === undefined ? 'transaction' : describeOperation(whole, index);
    const why = loc?.message ?? (r.stderr.trim() || `exit ${String(r.code)}`);
    return new NftApplyError(`${this.nft} -f -${where}: ${what}: ${why}`, {
      ...(index !== undefined ? { index } : {}),
      ...(loc !== undefined ? { line: loc.line } : {}),
      stderr: r.stderr,
      result: r,
    });
  }

  async readTable(ref: TableRef, opts: ReadTableOptions = {}): Promise<TableState | undefined> {
    if (opts.rules !== false) {
      const r = await this.run(['list', 'table', ref.family, ref.table]);
      if (r.code !== 0 && NOT_FOUND.test(r.stderr)) return undefined;
      if (r.code !== 0)
        throw new ExecError(
          `${this.nft} list table ${tableKey(ref)}: exit ${r.code}: ${r.stderr.trim()}`,
          r,
        );
      return this.learnTable(parseRuleset(r.stdout).tables.get(tableKey(ref)));
    }
    const [chains, sets, maps] = await Promise.all([
      this.checked(['list', 'chains', ref.family]),
      this.checked(['-t', 'list', 'sets', ref.family]),
      this.checked(['-t', 'list', 'maps', ref.family]),
    ]);
    const defs = [parseRuleset(sets), parseRuleset(maps)];
    const named: NftSet[] = [];
    for (const rs of defs)
      for (const s of rs.tables.get(tableKey(ref))?.sets.values() ?? []) named.push(s.set);
    // Dynamic sets (affinity) are filled by the datapath: their definitions are enough.
    const filled = named.filter((s) => !(s.flags ?? []).includes('dynamic'));
    const listed = await mapLimit(filled, READ_CONCURRENCY, async (s): Promise<Ruleset> => {
      const r = await this.run(['list', s.kind, ref.family, ref.table, s.name]);
      if (r.code !== 0 && NOT_FOUND.test(r.stderr)) return { tables: new Map() };
      if (r.code !== 0)
        throw new ExecError(
          `${this.nft} list ${s.kind} ${tableKey(ref)} ${s.name}: exit ${r.code}: ${r.stderr.trim()}`,
          r,
        );
      return parseRuleset(r.stdout);
    });
    return this.learnTable(assembleTable(ref, parseRuleset(chains), [...defs, ...listed]));
  }

  private learnTable(t: TableState | undefined): TableState | undefined {
    if (t !== undefined)
      for (const [name, s] of t.sets) this.known.set(setKey(t.table, name), s.set);
    return t;
  }

  listRuleset(): Promise<string> {
    return this.checked(['list', 'ruleset']);
  }

  async deleteTable(ref: TableRef): Promise<boolean> {
    const r = await this.run(['delete', 'table', ref.family, ref.table]);
    if (r.code === 0) {
      learnDefinitions(this.known, [{ verb: 'delete', object: { kind: 'table', ...ref } }]);
      return true;
    }
    if (NOT_FOUND.test(r.stderr)) return false;
    throw new ExecError(
      `${this.nft} delete table ${tableKey(ref)}: exit ${r.code}: ${r.stderr.trim()}`,
      r,
    );
  }

  async availability(): Promise<NftAvailability> {
    let version: string | undefined;
    try {
      const v = await this.run(['--version']);
      if (v.code !== 0)
        return { ok: false, reason: `${this.nft} --version: exit ${v.code}: ${v.stderr.trim()}` };
      version = /v(\d+(?:\.\d+)+)/.exec(v.stdout)?.[1];
      const t = await this.run(['list', 'tables']);
      if (t.code !== 0)
        return {
          ok: false,
          ...(version !== undefined ? { version } : {}),
          reason: `${this.nft} list tables: exit ${t.code}: ${t.stderr.trim()}`,
        };
    } catch (e) {
      return { ok: false, reason: e instanceof Error ? e.message : String(e) };
    }
    return { ok: true, ...(version !== undefined ? { version } : {}) };
  }
}
