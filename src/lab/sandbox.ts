// The lab sandbox: how the lab guarantees that nothing outlives it, even after `kill -9`.
// `svcnet lab up` starts the supervisor as PID 1 of a new PID namespace with a private mount
// namespace (`unshare --mount --propagation private --pid --fork --mount-proc --kill-child`;
// /proc is the new PID namespace's, as CNI plugins written in Go read their own
// /proc/<pid>/task/<tid>/ns/net). The supervisor
// mounts tmpfs over /run/netns and /etc/netns, so every namespace name and per-Pod resolv.conf
// lives only in that mount namespace. When the supervisor dies, however it dies, the kernel
// kills every process of the PID namespace, the mount namespace goes, and with it every
// network namespace of the lab. The supervisor stays in the host's network namespace, where
// it only listens on a loopback port (the kubeconfig's API endpoint) and changes nothing.

import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import type { Execer } from '../os/exec.js';
import { runChecked } from '../os/exec.js';

export const PRIVATE_MOUNTS = ['/run/netns', '/etc/netns'] as const;

/** Command line that starts `argv` as the sandbox's PID 1. */
export function sandboxCommand(argv: readonly string[]): { cmd: string; args: string[] } {
  return {
    cmd: 'unshare',
    args: [
      '--mount',
      '--propagation',
      'private',
      '--pid',
      '--fork',
      '--mount-proc',
      '--kill-child',
      '--',
      ...argv,
    ],
  };
}

/** Inside the sandbox: private tmpfs over the namespace and per-namespace /etc folders. */
export async function mountPrivateDirs(execer: Execer): Promise<void> {
  if (process.pid !== 1)
    throw new Error('mountPrivateDirs: refusing to run outside the lab sandbox (not PID 1)');
  for (const dir of PRIVATE_MOUNTS) {
    // The mount point itself must exist; these are iproute2's standard (empty) directories.
    if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
    await runChecked(execer, {
      cmd: 'mount',
      args: ['-t', 'tmpfs', '-o', 'mode=0755,size=64m', 'svcnet-lab', dir],
    });
  }
}

/** Host PID of the sandbox's init: the only child of the `unshare` process. */
export function sandboxInitPid(unsharePid: number): number | undefined {
  try {
    const children = readFileSync(`/proc/${unsharePid}/task/${unsharePid}/children`, 'utf8')
      .trim()
      .split(/\s+/);
    const pid = Number(children[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
