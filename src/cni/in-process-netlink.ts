// The lab agent's edges for the in-process svcnet-cni: realPluginDeps with rtnetlink in place
// of `ip` for the batches (os/ip-netlink.ts). A file of its own so the `svcnet-cni` binary's
// bundle never reaches the FFI: it is one CommonJS file without node_modules.

import type { Execer } from '../os/exec.js';
import { NetlinkIp } from '../os/ip-netlink.js';
import { realPluginDeps } from './in-process.js';
import type { PluginDeps } from './plugin.js';

/**
 * The edges for the in-process plugin: the same, with links, addresses and routes set by
 * rtnetlink requests from the calling process (os/ip-netlink.ts) rather than by an `ip`
 * process per ADD — what starting processes from the agent cost is why it runs in-process.
 * `ip` alone when libc cannot be bound.
 */
export function inProcessPluginDeps(execer: Execer): PluginDeps {
  const deps = realPluginDeps(execer);
  try {
    return { ...deps, ip: new NetlinkIp(deps.ip) };
  } catch {
    return deps;
  }
}
