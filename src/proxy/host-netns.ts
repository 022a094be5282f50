// Whether the daemon runs in the host's initial network namespace (the one of PID 1). Host-
// wide kernel settings (the conntrack table size) are only attempted there; a proxy started
// inside a namespace — the lab's nodes, the integration tests — never touches them.

import { readlink } from 'node:fs/promises';

/** True when /proc/self/ns/net is PID 1's network namespace; false when unknown. */
export async function isHostNetns(): Promise<boolean> {
  try {
    const [self, init] = await Promise.all([
      readlink('/proc/self/ns/net'),
      readlink('/proc/1/ns/net'),
    ]);
    return self === init;
  } catch {
    return false;
  }
}
