// The nfacct seam: named netfilter extended-accounting objects (what `-m nfacct
// --nfacct-name X` counts into). The proxy creates its two objects at start and reads their
// packet counts when metrics are scraped. RealNfacct runs the `nfacct` tool (package
// nfacct) through an Execer, so it acts in the Execer's network namespace (the objects are
// per network namespace). FakeNfacct keeps the objects in memory and can play a host
// without the tool or kernel support.

import { SvcnetError } from '../errors.js';
import type { Execer } from './exec.js';
import { ExecError, ExecTool } from './exec.js';

/** The counts of one accounting object. */
export interface NfacctCounts {
  readonly packets: number;
  readonly bytes: number;
}

export interface Nfacct {
  /** Creates the object unless it exists. Rejects when it cannot (no tool, no kernel support). */
  ensure(name: string): Promise<void>;
  /** The object's counts; rejects with code NOT_FOUND when there is no such object. */
  get(name: string): Promise<NfacctCounts>;
}

const LINE_RE = /^\{\s*pkts\s*=\s*(\d+),\s*bytes\s*=\s*(\d+)\s*\}\s*=\s*(\S+?);?\s*$/;

/**
 * Parses `nfacct list` / `nfacct get NAME` plain output, one object a line:
 * `{ pkts = 00000000000000000001, bytes = 00000000000000000060 } = name;`.
 * Lines that are not in this shape are ignored.
 */
export function parseNfacctOutput(text: string): Map<string, NfacctCounts> {
  const out = new Map<string, NfacctCounts>();
  for (const line of text.split('\n')) {
    const m = LINE_RE.exec(line.trim());
    if (m?.[1] === undefined || m[2] === undefined || m[3] === undefined) continue;
    out.set(m[3], { packets: Number(m[1]), bytes: Number(m[2]) });
  }
  return out;
}

/** Names the kernel accepts for an accounting object (NFACCT_NAME_MAX is 32 with the NUL). */
export function isValidNfacctName(name: string): boolean {
  return /^[A-Za-z0-9_.:-]{1,31}$/.test(name);
}

function checkName(name: string): void {
  if (!isValidNfacctName(name))
    throw new SvcnetError('INVALID_INPUT', `nfacct object name ${JSON.stringify(name)}: invalid`);
}

/** nfacct(8) backed implementation. */
export class RealNfacct extends ExecTool implements Nfacct {
  constructor(execer: Execer, binary = 'nfacct') {
    super(execer, binary);
  }

  async ensure(name: string): Promise<void> {
    checkName(name);
    const got = await this.run(['get', name], 10_000);
    if (got.code === 0 && parseNfacctOutput(got.stdout).has(name)) return;
    const add = await this.run(['add', name], 10_000);
    if (add.code === 0) return;
    // Another process may have created it between the two calls (nfacct reports EBUSY).
    const again = await this.run(['get', name], 10_000);
    if (again.code === 0 && parseNfacctOutput(again.stdout).has(name)) return;
    throw new ExecError(
      `${this.binary} add ${name}: exit ${add.code}: ${add.stderr.trim() || add.stdout.trim()}`,
      add,
    );
  }

  async get(name: string): Promise<NfacctCounts> {
    checkName(name);
    const res = await this.run(['get', name], 10_000);
    const counts = res.code === 0 ? parseNfacctOutput(res.stdout).get(name) : undefined;
    if (counts !== undefined) return counts;
    const detail = res.stderr.trim() || res.stdout.trim();
    if (res.code !== 0 && /No such file or directory/.test(detail))
      throw new SvcnetError('NOT_FOUND', `nfacct object ${name}: not found`);
    throw new ExecError(
      `${this.binary} get ${name}: exit ${res.code}${detail ? `: ${detail}` : ''}`,
      res,
    );
  }
}

/** In-memory accounting objects; `unsupported` makes every call fail like a host without nfacct. */
export class FakeNfacct implements Nfacct {
  readonly objects = new Map<string, { packets: number; bytes: number }>();
  /** Set to a reason to make ensure/get reject (no tool, no kernel module). */
  unsupported: string | undefined;
  /** Names whose ensure() rejects (e.g. a kernel that refuses one object). */
  readonly refuse = new Set<string>();

  constructor(opts: { unsupported?: string } = {}) {
    this.unsupported = opts.unsupported;
  }

  ensure(name: string): Promise<void> {
    if (!isValidNfacctName(name))
      return Promise.reject(
        new SvcnetError('INVALID_INPUT', `nfacct object name ${name}: invalid`),
      );
    if (this.unsupported !== undefined)
      return Promise.reject(new ExecError(`nfacct add ${name}: ${this.unsupported}`));
    if (this.refuse.has(name))
      return Promise.reject(new ExecError(`nfacct add ${name}: Operation not permitted`));
    if (!this.objects.has(name)) this.objects.set(name, { packets: 0, bytes: 0 });
    return Promise.resolve();
  }

  get(name: string): Promise<NfacctCounts> {
    if (this.unsupported !== undefined)
      return Promise.reject(new ExecError(`nfacct get ${name}: ${this.unsupported}`));
    const o = this.objects.get(name);
    if (o === undefined)
      return Promise.reject(new SvcnetError('NOT_FOUND', `nfacct object ${name}: not found`));
    return Promise.resolve({ ...o });
  }

  /** Counts `packets` packets of `bytes` bytes in total, as a matching rule would. */
  count(name: string, packets: number, bytes = packets * 60): void {
    const o = this.objects.get(name);
    if (o === undefined) throw new Error(`FakeNfacct: no object ${name}`);
    o.packets += packets;
    o.bytes += bytes;
  }
}
