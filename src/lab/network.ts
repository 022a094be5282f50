// Applies the lab's network script (topology.ts): namespaces and links, addresses and routes
// through the Ip seam (one batch per namespace), then firewall rules and sysctls inside each
// namespace through netnsExecer. Runs only inside the lab sandbox, whose private /run/netns
// keeps every name off the host; unit tests build the same network on FakeIp.

import type { Execer } from '../os/exec.js';
import { runChecked } from '../os/exec.js';
import type { Ip } from '../os/ip.js';
import { netnsExecer } from '../os/netns.js';
import { netnsPath } from '../util/ip-ops.js';
import type { NetworkScript } from './topology.js';

/** Creates the script's namespaces and runs each namespace's ops. */
export async function buildNetwork(ip: Ip, script: NetworkScript): Promise<void> {
  for (const ns of script.namespaces) await ip.addNetns(ns);
  for (const b of script.batches) await ip.batch(netnsPath(b.netns), b.ops);
}

export async function applyNetworkScript(
  ip: Ip,
  execer: Execer,
  script: NetworkScript,
): Promise<void> {
  await buildNetwork(ip, script);
  for (const f of script.firewall)
    await runChecked(netnsExecer(execer, f.netns), {
      cmd: f.family === 'IPv6' ? 'ip6tables-restore' : 'iptables-restore',
      // -w: the xtables lock file is shared with every namespace's iptables, proxies included.
      args: ['-w', '5', '--noflush'],
      stdin: `${f.restore.join('\n')}\n`,
    });
  for (const s of script.sysctls)
    await runChecked(netnsExecer(execer, s.netns), {
      cmd: 'sysctl',
      args: ['-qw', ...s.settings],
    });
}

/** Deletes the namespaces (reverse order). Failures are ignored: teardown is idempotent. */
export async function deleteNamespaces(ip: Ip, namespaces: readonly string[]): Promise<void> {
  for (const ns of [...namespaces].reverse()) await ip.deleteNetns(ns).catch(() => false);
}
