// Applies the ipMasq nftables scripts (render-masq.ts) in the plugin's namespace through the
// Execer. Adding is one atomic `nft -f -` transaction; removing tolerates an element that
// is already gone so DEL stays idempotent.

import { runChecked, type Execer } from '../os/exec.js';
import type { IPFamily } from '../util/ip.js';
import { renderMasqAdd, renderMasqDel } from './render-masq.js';
import { CniError, CniErrorCode } from './types.js';

/** Masquerades `podIP` leaving `subnets`; throws code 999 with nft's message. */
export async function addMasq(
  execer: Execer,
  network: string,
  family: IPFamily,
  subnets: readonly string[],
  podIP: string,
): Promise<void> {
  try {
    await runChecked(execer, {
      cmd: 'nft',
      args: ['-f', '-'],
      stdin: renderMasqAdd(network, family, subnets, podIP),
    });
  } catch (e) {
    throw new CniError(CniErrorCode.internal, `ipMasq: ${(e as Error).message}`, undefined, e);
  }
}

/** Stops masquerading `podIP`; succeeds when it was not masqueraded. */
export async function removeMasq(execer: Execer, family: IPFamily, podIP: string): Promise<void> {
  const res = await execer.run({
    cmd: 'nft',
    args: ['-f', '-'],
    stdin: renderMasqDel(family, podIP),
  });
  if (res.code !== 0 && !/No such file or directory/.test(res.stderr))
    throw new CniError(CniErrorCode.internal, `ipMasq: removing ${podIP}: ${res.stderr.trim()}`);
}
