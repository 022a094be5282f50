// The iptables backend a lab's node proxies program in iptables mode, passed to each as
// `--iptables-variant` rather than left to their detection (a fresh node namespace holds no
// rules, so `auto` would pick nft). Chosen by measurement (README "The lab"): applying
// svcnet's rendered rules for 1k Services × 10 endpoints (32k rules) in a fresh namespace took
// iptables-legacy-restore 0.21 s and iptables-nft-restore 4.2 s (iptables 1.8.9, Linux 6.18;
// #16 saw the nft backend grow quadratically: 48 s at 3k Services). So the lab uses legacy wherever
// the kernel still has it, and nft where it does not (a kernel built without legacy
// xtables), with the reason in the supervisor's log. Not for real nodes: there the proxy
// follows the backend kubelet uses (netfilter/iptables/variant.ts).

import type { IptablesVariant } from '../netfilter/iptables/backend.js';
import type { Execer } from '../os/exec.js';
import type { ComponentOptions } from './components.js';

/** The backend that scales, by the measurement above. */
export const LAB_IPTABLES_VARIANT: IptablesVariant = 'legacy';

export interface LabIptablesChoice {
  readonly variant: IptablesVariant;
  readonly reason: string;
}

/**
 * An Execer whose commands each run in a network namespace of their own (`unshare --net`),
 * gone when the command exits: a probe there touches no namespace of the host or the lab.
 */
export function throwawayNetnsExecer(inner: Execer): Execer {
  return {
    run: (req) => inner.run({ ...req, cmd: 'unshare', args: ['--net', req.cmd, ...req.args] }),
  };
}

/**
 * Whether the legacy backend works on this kernel, asked through `probe` (in production
 * throwawayNetnsExecer): listing the nat table loads the kernel's legacy nat table, as a
 * proxy's first restore would.
 */
export async function chooseLabIptablesVariant(probe: Execer): Promise<LabIptablesChoice> {
  const why = 'the backend that scales on this kernel, by measurement (README "The lab")';
  try {
    const r = await probe.run({
      cmd: 'iptables-legacy',
      args: ['-w', '5', '-t', 'nat', '-S', 'OUTPUT'],
      timeoutMs: 30_000,
    });
    if (r.code === 0) return { variant: LAB_IPTABLES_VARIANT, reason: why };
    return {
      variant: 'nft',
      reason: `iptables-legacy does not work on this kernel (${r.stderr.trim().split('\n')[0] ?? ''}); nft instead`,
    };
  } catch (e) {
    return {
      variant: 'nft',
      reason: `iptables-legacy is not installed (${e instanceof Error ? e.message : String(e)}); nft instead`,
    };
  }
}

/** The command printing a node's nat table from the backend its proxy programs. */
export function natSaveCommand(variant: IptablesVariant | undefined): readonly string[] {
  // States written before the lab chose (no variant): whichever backend holds the chains.
  if (variant === undefined)
    return [
      'sh',
      '-c',
      'iptables-save -t nat 2>/dev/null | grep -q "^:KUBE-SERVICES" && exec iptables-save -t nat; exec iptables-legacy-save -t nat 2>/dev/null',
    ];
  return [`iptables-${variant}-save`, '-t', 'nat'];
}

/** The command printing every table of a node's ruleset from the backend its proxy programs. */
export function rulesSaveCommand(variant: IptablesVariant | undefined): readonly string[] {
  if (variant === undefined)
    return [
      'sh',
      '-c',
      'iptables-save 2>/dev/null | grep -q "^:KUBE-SERVICES" && exec iptables-save; exec iptables-legacy-save 2>/dev/null',
    ];
  return [`iptables-${variant}-save`];
}

/**
 * The components with the node proxies' backend set (iptables mode only, unless already
 * set), probing through `probe` and logging the choice.
 */
export async function withLabIptablesVariant(
  components: ComponentOptions,
  probe: Execer,
  log: (msg: string) => void,
): Promise<ComponentOptions> {
  if ((components.proxyMode ?? 'iptables') !== 'iptables') return components;
  if (components.iptablesVariant !== undefined) return components;
  const c = await chooseLabIptablesVariant(probe);
  log(`node proxies use iptables-${c.variant}: ${c.reason}`);
  return { ...components, iptablesVariant: c.variant };
}
