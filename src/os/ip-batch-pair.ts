// RealIp's `batchPair`: the ops of both ends of a veth (host side here, Pod side in the Pod's
// namespace) in one exec. Starting a process is the dearest step of a CNI ADD (5–20 ms each
// on a small VM, more from Node than from C), so when the Pod namespace is a named one
// (/run/netns/NAME, what `ip netns add`, the lab and containerd's /var/run/netns use) the host
// batch ends with `netns exec NAME ip -batch FILE`, which iproute2 runs in a forked child
// (iproute2 ≥ 4.x forks for `netns exec` in batch mode and fails the batch on a non-zero
// exit). Other paths (/proc/PID/ns/net) cannot be named there: two execs, as `batch` twice.
// Not a general iproute2 wrapper: RealIp's other methods stay in ip.ts.

import { randomBytes } from 'node:crypto';
import { unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderIpBatch, renderIpOp, type IpOp } from '../util/ip-ops.js';
import type { Execer } from './exec.js';
import { IpError } from './ip.js';

const NAMED_NETNS_DIRS = ['/run/netns/', '/var/run/netns/'];

/** The `ip netns` name of a namespace path, or undefined when it is not a named namespace. */
export function netnsNameOf(path: string): string | undefined {
  const dir = NAMED_NETNS_DIRS.find((d) => path.startsWith(d));
  if (dir === undefined) return undefined;
  const name = path.slice(dir.length);
  // iproute2's own check (ipnetns.c is_valid_netns_name): no slash, not . or ..
  return name !== '' && !name.includes('/') && name !== '.' && name !== '..' ? name : undefined;
}

/**
 * One `ip -batch -` running hostOps, then podOps inside the named namespace through a batch
 * file. Throws IpError naming the namespace and the failing op. Callers check netnsNameOf.
 */
export async function runBatchPair(
  execer: Execer,
  hostOps: readonly IpOp[],
  podNetns: string,
  podName: string,
  podOps: readonly IpOp[],
): Promise<void> {
  const file = join(tmpdir(), `svcnet-ip-${process.pid}-${randomBytes(6).toString('hex')}.batch`);
  // O_EXCL and 0600: a name nobody else can have prepared or can read.
  await writeFile(file, renderIpBatch(podOps), { flag: 'wx', mode: 0o600 });
  try {
    const res = await execer.run({
      cmd: 'ip',
      args: ['-batch', '-'],
      stdin: `${renderIpBatch(hostOps)}netns exec ${podName} ip -batch ${file}\n`,
    });
    if (res.code === 0) return;
    const err = (res.stderr || res.stdout).trim();
    const outer = /Command failed -:(\d+)/.exec(err);
    const inner = new RegExp(`Command failed ${file.replace(/[.]/g, '\\.')}:(\\d+)`).exec(err);
    const line = outer ? Number(outer[1]) : 0;
    const inPod = line > hostOps.length || inner !== null;
    const op = inPod
      ? inner
        ? podOps[Number(inner[1]) - 1]
        : undefined
      : line > 0
        ? hostOps[line - 1]
        : undefined;
    const text = err
      .replace(/\s*Command failed \S+:\d+\s*/g, ' ')
      .replace(/\s+/g, ' ')
      .trim();
    throw new IpError(
      `ip in ${inPod ? podNetns : 'host namespace'}: ${op ? `"${renderIpOp(op)}": ` : ''}${text}`,
      err,
    );
  } finally {
    await unlink(file).catch(() => undefined);
  }
}
