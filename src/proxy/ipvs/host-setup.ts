// The start-up edge of ipvs mode: reads the kernel release through the Sysctl seam, makes
// the sysctls of sysctls.ts in the proxy's own network namespace (through node-setup.ts's
// applySysctls: a setting that cannot be made is logged and skipped, as for the other
// modes' sysctls) and sets the IPVS timeouts with one `ipvsadm --set` when any is
// configured (a failure is logged, as kube-proxy logs "Failed to configure IPVS timeouts").
// It also warns when the scheduler's module (ip_vs_<scheduler>) is neither in /proc/modules
// nor built in: the first virtual server then needs the kernel to load it, which a
// container without module loading cannot do.

import { access, readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { Execer } from '../../os/exec.js';
import { runChecked } from '../../os/exec.js';
import type { Sysctl } from '../../os/sysctl.js';
import { applySysctls } from '../node-setup.js';
import type { IpvsModeConfig } from './config.js';
import { connReuseModeDecision, ipvsTimeoutArgs, planIpvsSysctls } from './sysctls.js';
import { firstColumn } from './host.js';

export interface IpvsHostSeams {
  readonly sysctl: Sysctl;
  readonly execer: Execer;
  readonly log: Logger;
  /** Whether a kernel module is loaded or built in; default: /proc/modules, /sys/module. */
  readonly hasModule?: (name: string) => Promise<boolean>;
}

/** Reads /proc/modules (loaded modules), then /sys/module/NAME (built in too). */
export async function hasKernelModule(name: string): Promise<boolean> {
  try {
    if (firstColumn(await readFile('/proc/modules', 'utf8')).includes(name)) return true;
  } catch {
    // No /proc/modules (a kernel without modules): fall through to /sys/module.
  }
  try {
    await access(`/sys/module/${name}`);
    return true;
  } catch {
    return false;
  }
}

/** What the set-up did: the sysctl keys changed and the `ipvsadm` arguments run (if any). */
export interface IpvsHostSetup {
  readonly changed: readonly string[];
  readonly timeoutArgs: readonly string[] | undefined;
}

async function kernelRelease(sysctl: Sysctl): Promise<string> {
  try {
    return await sysctl.get('kernel.osrelease');
  } catch {
    return '';
  }
}

/** See the file header. Never throws. */
export async function setUpIpvsHost(
  seams: IpvsHostSeams,
  cfg: Pick<
    IpvsModeConfig,
    'scheduler' | 'strictARP' | 'tcpTimeoutMs' | 'tcpFinTimeoutMs' | 'udpTimeoutMs'
  >,
): Promise<IpvsHostSetup> {
  const { sysctl, execer, log } = seams;
  const module = `ip_vs_${cfg.scheduler === '' ? 'rr' : cfg.scheduler}`;
  if (!(await (seams.hasModule ?? hasKernelModule)(module)))
    log.warn({ module }, 'IPVS scheduler module not loaded; the kernel must load it on first use');
  const release = await kernelRelease(sysctl);
  const reuse = connReuseModeDecision(release);
  if (!reuse.set)
    log.info(
      { sysctl: 'net.ipv4.vs.conn_reuse_mode', kernel: release, reason: reuse.reason },
      'Left sysctl as-is',
    );
  const changed = await applySysctls(
    sysctl,
    planIpvsSysctls({ kernelRelease: release, strictARP: cfg.strictARP }),
    log,
  );
  const timeoutArgs = ipvsTimeoutArgs({
    tcpTimeoutSeconds: cfg.tcpTimeoutMs / 1000,
    tcpFinTimeoutSeconds: cfg.tcpFinTimeoutMs / 1000,
    udpTimeoutSeconds: cfg.udpTimeoutMs / 1000,
  });
  if (timeoutArgs !== undefined) {
    try {
      await runChecked(execer, { cmd: 'ipvsadm', args: timeoutArgs });
      log.info({ args: timeoutArgs }, 'Set IPVS timeouts');
    } catch (err) {
      log.error(
        { args: timeoutArgs, err: err instanceof Error ? err.message : String(err) },
        'Failed to configure IPVS timeouts',
      );
    }
  }
  return { changed, timeoutArgs };
}
