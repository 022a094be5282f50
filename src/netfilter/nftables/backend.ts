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
import type { ExecResult } from '../../os/exec.js';
import type { IPFamily } from '../../util/ip.js';
import type { NftFamily, TableRef, TableState, Transaction } from './model.js';
import { tableKey } from './model.js';
import { NftError, NftFake } from './fake.js';
import { dump, renderOperation, renderTransaction } from './render.js';
import { withoutRules } from './apply-read.js';

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
