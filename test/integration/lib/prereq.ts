// Prerequisites of the root test tiers (integration and e2e): which tools are missing, the
// Debian package that has each, and what a missing prerequisite means. On a developer's
// machine the suite skips with the reason; under CI=true it fails instead, naming the tool
// and the install step, because a skip in CI hides an install step the machine lacks (a
// green run on one machine, a red one on a fresh one). Not for unit tests: they need nothing.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

/** The Debian package of every tool a root test runs (scripts/install-deps.sh installs them). */
export const TOOL_PACKAGES: Readonly<Record<string, string>> = {
  ip: 'iproute2',
  bridge: 'iproute2',
  unshare: 'util-linux',
  nsenter: 'util-linux',
  iptables: 'iptables',
  'iptables-restore': 'iptables',
  'iptables-save': 'iptables',
  'iptables-legacy-restore': 'iptables',
  nft: 'nftables',
  conntrack: 'conntrack',
  nfacct: 'nfacct',
  curl: 'curl',
  dig: 'dnsutils',
  ping: 'iputils-ping',
  python3: 'python3',
  git: 'git',
  kubectl: 'kubectl (scripts/install-deps.sh installs it from npm)',
  '/usr/lib/cni/ptp': 'containernetworking-plugins',
  '/usr/lib/cni/host-local': 'containernetworking-plugins',
};

/** True when `tool` (a command on PATH, or an absolute path) is there and executable. */
export function hasTool(tool: string): boolean {
  if (tool.startsWith('/')) return existsSync(tool);
  return (process.env.PATH ?? '').split(':').some((d) => d !== '' && existsSync(join(d, tool)));
}

/** The tools of the list that are missing. */
export function missingTools(tools: readonly string[]): string[] {
  return tools.filter((t) => !hasTool(t));
}

/** "needs ping (Debian package iputils-ping), ...; install: bash scripts/install-deps.sh". */
export function missingToolsReason(tools: readonly string[]): string | undefined {
  const missing = missingTools(tools);
  if (missing.length === 0) return undefined;
  const named = missing.map((t) => {
    const pkg = TOOL_PACKAGES[t];
    return pkg === undefined ? t : `${t} (Debian package ${pkg})`;
  });
  return `needs ${named.join(', ')}; install: bash scripts/install-deps.sh`;
}

/** True under CI=true: a missing prerequisite fails the run instead of skipping. */
export function prerequisitesRequired(): boolean {
  return process.env.CI === 'true';
}

/**
 * The `skip` option for a suite: false when `reason` is empty, else the reason. Under CI=true
 * it also registers a failing test that names the reason and the install step, so the file
 * fails (the suite itself still skips: running it without its tools would only fail later
 * with a less helpful error).
 */
export function skipOrFail(reason: string | undefined | false): string | false {
  if (reason === undefined || reason === false || reason === '') return false;
  if (prerequisitesRequired())
    test(`prerequisites: ${reason}`, () => {
      throw new Error(
        `missing prerequisite under CI=true (a skip would hide it): ${reason}` +
          (reason.includes('install-deps') ? '' : '; install: bash scripts/install-deps.sh'),
      );
    });
  return reason;
}
