// The conntrack seam: delete connection-tracking entries that match a filter (the proxy's
// stale-UDP cleanup). RealConntrack runs the `conntrack` tool (conntrack-tools) through an
// Execer, one `conntrack -D` per filter, in the caller's network namespace. FakeConntrack
// keeps a flow table in memory and applies the same matching rules.

import type { IPFamily } from '../util/ip.js';
import { canonicalIP } from '../util/ip.js';
import type { Execer } from './exec.js';
import { ExecError, ExecTool } from './exec.js';

export type ConntrackProtocol = 'TCP' | 'UDP' | 'SCTP';

/**
 * Which entries to delete. Every field given must match: `origDst`/`origDstPort` are the
 * original direction's destination (a service IP and port, or a NodePort), `replySrc`/
 * `replySrcPort` the reply direction's source (the endpoint a DNATed flow went to).
 */
export interface ConntrackFilter {
  readonly family: IPFamily;
  readonly protocol: ConntrackProtocol;
  readonly origDst?: string;
  readonly origDstPort?: number;
  readonly replySrc?: string;
  readonly replySrcPort?: number;
}

export interface Conntrack {
  /** Deletes matching entries; resolves to how many were deleted. Rejects on tool failure. */
  deleteEntries(filter: ConntrackFilter): Promise<number>;
}

/** The `conntrack` arguments for one filter, e.g. `-D -f ipv4 -p udp --orig-dst 10.96.0.10 …`. */
export function conntrackDeleteArgs(f: ConntrackFilter): string[] {
  const args = ['-D', '-f', f.family === 'IPv6' ? 'ipv6' : 'ipv4', '-p', f.protocol.toLowerCase()];
  if (f.origDst !== undefined) args.push('--orig-dst', f.origDst);
  if (f.origDstPort !== undefined) args.push('--orig-port-dst', String(f.origDstPort));
  if (f.replySrc !== undefined) args.push('--reply-src', f.replySrc);
  if (f.replySrcPort !== undefined) args.push('--reply-port-src', String(f.replySrcPort));
  return args;
}

const DELETED_RE = /(\d+) flow entries have been deleted/;

/** conntrack-tools backed implementation. */
export class RealConntrack extends ExecTool implements Conntrack {
  constructor(execer: Execer, binary = 'conntrack') {
    super(execer, binary);
  }

  async deleteEntries(filter: ConntrackFilter): Promise<number> {
    const args = conntrackDeleteArgs(filter);
    const res = await this.run(args, 30_000);
    // conntrack exits 1 when nothing matched but still prints the count.
    const m = DELETED_RE.exec(res.stderr) ?? DELETED_RE.exec(res.stdout);
    if (m?.[1] !== undefined) return Number(m[1]);
    if (res.code === 0) return 0;
    throw new ExecError(
      `${this.binary} ${args.join(' ')}: exit ${res.code}: ${res.stderr.trim()}`,
      res,
    );
  }
}

/** One tracked flow, as the Fake models it. */
export interface FakeFlow {
  readonly family: IPFamily;
  readonly protocol: ConntrackProtocol;
  readonly origSrc: string;
  readonly origSrcPort: number;
  readonly origDst: string;
  readonly origDstPort: number;
  /** Where the reply comes from: the DNAT target, or origDst when not NATed. */
  readonly replySrc: string;
  readonly replySrcPort: number;
}

function sameIP(a: string, b: string): boolean {
  return (canonicalIP(a) ?? a) === (canonicalIP(b) ?? b);
}

/** Whether `flow` matches `filter` (every given field). */
export function flowMatches(flow: FakeFlow, f: ConntrackFilter): boolean {
  return (
    flow.family === f.family &&
    flow.protocol === f.protocol &&
    (f.origDst === undefined || sameIP(flow.origDst, f.origDst)) &&
    (f.origDstPort === undefined || flow.origDstPort === f.origDstPort) &&
    (f.replySrc === undefined || sameIP(flow.replySrc, f.replySrc)) &&
    (f.replySrcPort === undefined || flow.replySrcPort === f.replySrcPort)
  );
}

/** In-memory flow table; records every filter it was asked to apply. */
export class FakeConntrack implements Conntrack {
  flows: FakeFlow[];
  readonly deletions: ConntrackFilter[] = [];

  constructor(flows: readonly FakeFlow[] = []) {
    this.flows = [...flows];
  }

  deleteEntries(filter: ConntrackFilter): Promise<number> {
    this.deletions.push(filter);
    const before = this.flows.length;
    this.flows = this.flows.filter((fl) => !flowMatches(fl, filter));
    return Promise.resolve(before - this.flows.length);
  }
}
