// Applies the lab's network script (topology.ts) through the Execer: namespaces with
// `ip netns add`, one `ip -n NS -batch -` per namespace, firewall rules and sysctls inside
// each namespace.
// Runs only inside the lab sandbox, whose private /run/netns keeps every name off the host.

import type { Execer } from '../os/exec.js';
import { runChecked } from '../os/exec.js';
import type { NetworkScript } from './topology.js';

export async function applyNetworkScript(execer: Execer, script: NetworkScript): Promise<void> {
  for (const ns of script.namespaces)
    await runChecked(execer, { cmd: 'ip', args: ['netns', 'add', ns] });
  for (const b of script.batches)
    await runChecked(execer, {
      cmd: 'ip',
      args: ['-n', b.netns, '-batch', '-'],
      stdin: `${b.lines.join('\n')}\n`,
    });
  for (const f of script.firewall)
    await runChecked(execer, {
      cmd: 'ip',
      // -w: the xtables lock file is shared with every namespace's iptables, proxies included.
      args: ['netns', 'exec', f.netns, 'iptables-restore', '-w', '5', '--noflush'],
      stdin: `${f.restore.join('\n')}\n`,
    });
  for (const s of script.sysctls)
    await runChecked(execer, {
      cmd: 'ip',
      args: ['netns', 'exec', s.netns, 'sysctl', '-qw', ...s.settings],
    });
}

/** Deletes the namespaces (reverse order). Missing ones are ignored: teardown is idempotent. */
export async function deleteNamespaces(
  execer: Execer,
  namespaces: readonly string[],
): Promise<void> {
  for (const ns of [...namespaces].reverse())
    await execer.run({ cmd: 'ip', args: ['netns', 'del', ns] });
}
