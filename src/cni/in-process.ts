// svcnet-cni's real edges in one place, for its two ways of running: the `svcnet-cni` binary
// (src/cli/svcnet-cni.ts, one process per operation, as real runtimes run it) and the lab's
// node agent, which hands `inProcessSvcnetCni` to its CniRuntime so ADD and DEL run as a
// function call in the agent: the same runPlugin, the same config and result JSON, no Node
// start-up per Pod. Not a second plugin: nothing here decides anything.

import type { Execer } from '../os/exec.js';
import { RealIp } from '../os/ip.js';
import { RealSysctl } from '../os/sysctl.js';
import { RealTextFiles } from '../os/text-files.js';
import { findPluginBinary, type InProcessPlugin } from './invoke.js';
import { FileIpamStore } from './ipam-store.js';
import { runPlugin, type PluginDeps } from './plugin.js';

/**
 * The plugin's edges on the real machine (iproute2, /proc/sys, host-local files). The IPAM
 * files' calls are blocking, in the binary and in the agent alike (ipam-store.ts says why).
 */
export function realPluginDeps(execer: Execer): PluginDeps {
  return {
    ip: new RealIp(execer),
    sysctl: new RealSysctl(),
    files: new RealTextFiles(),
    store: new FileIpamStore({ blocking: true }),
    execer,
    findPlugin: findPluginBinary,
  };
}

/**
 * svcnet-cni as an in-process plugin: runs in the caller's network namespace (the node's, for
 * the lab's agent). The environment is the CNI_* set only, as the binary would read it.
 */
export function inProcessSvcnetCni(deps: PluginDeps): InProcessPlugin {
  return (env, stdin) => runPlugin(env, stdin, deps);
}
