// The start-up edge of ipvs mode: reads the kernel release through the Sysctl seam, makes
// the sysctls of sysctls.ts in the proxy's own network namespace (through node-setup.ts's
// applySysctls: a setting that cannot be made is logged and skipped, as for the other
// modes' sysctls) and sets the IPVS timeouts with one `ipvsadm --set` when any is
// configured (a failure is logged, as kube-proxy logs "Failed to configure IPVS timeouts").

import type { Logger } from 'pino';
import type { Execer } from '../../os/exec.js';
import { runChecked } from '../../os/exec.js';
import type { Sysctl } from '../../os/sysctl.js';
import { applySysctls } from '../node-setup.js';
import type { IpvsModeConfig } from './config.js';
import { connReuseModeDecision, ipvsTimeoutArgs, planIpvsSysctls } from './sysctls.js';

export interface IpvsHostSeams {
  readonly sysctl: Sysctl;
  readonly execer: Execer;
  readonly log: Logger;
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
  cfg: Pick<IpvsModeConfig, 'strictARP' | 'tcpTimeoutMs' | 'tcpFinTimeoutMs' | 'udpTimeoutMs'>,
): Promise<IpvsHostSetup> {
  const { sysctl, execer, log } = seams;
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
