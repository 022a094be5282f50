// What every long-running `svcnet` command shares, as Kubernetes daemons do it: `--v=N`,
// `--logging-format text|json` and `--log-level` flags and the logger they give; the client
// configuration (`--kubeconfig`, then $KUBECONFIG, then in-cluster); and the exit contract:
// a daemon that cannot start (bad flag or file: exit 2; a listener that cannot bind or any
// other failure: exit 1) prints one line and exits at once, with nothing left listening,
// instead of running half-started or retrying forever.

import type { Command } from 'commander';
import type { Logger } from 'pino';
import type { KubeConfig } from '../kube/kubeconfig.js';
import { createLogger, LOG_LEVELS, resolveLogSettings } from '../util/log.js';
import type { LogFlags } from '../util/log.js';
import { exitCodeFor, formatCommandError, verbosityFromArgv } from './run.js';

/**
 * A daemon's command with its `--kubeconfig` flag, which daemonKubeConfig reads; `kubeconfigHelp`
 * says what the command falls back to without it.
 */
export function daemonCommand(
  program: Command,
  name: string,
  description: string,
  kubeconfigHelp: string,
): Command {
  return program
    .command(name)
    .description(description)
    .option('--kubeconfig <file>', kubeconfigHelp);
}

/** Adds `--v`, `--logging-format` and `--log-level` to a daemon command. */
export function addLogFlags(cmd: Command): Command {
  return cmd
    .option('--v <n>', 'log verbosity 0-10 as klog: 4 debug, 5+ trace and error stacks (default 0)')
    .option(
      '--logging-format <format>',
      'text or json (default: text on a terminal, json otherwise)',
    )
    .option('--log-level <level>', `pino level, wins over --v: ${LOG_LEVELS.join(', ')}`);
}

/** The daemon's logger from its flags (throws INVALID_INPUT naming a bad flag). */
export function daemonLogger(component: string, flags: LogFlags): Logger {
  return createLogger(component, resolveLogSettings(flags, process.stderr.isTTY));
}

/** The client configuration from `--kubeconfig`, $KUBECONFIG or in-cluster (INVALID_INPUT if none). */
export async function daemonKubeConfig(
  flag: string | undefined,
  context?: string,
): Promise<KubeConfig> {
  const { resolveKubeConfig } = await import('../kube/kubeconfig.js');
  return resolveKubeConfig(flag, process.env, undefined, context);
}

/**
 * Wraps a daemon's action. A failure prints `svcnet <name>: message` (a stack only at --v=5+)
 * and ends the process at once with the contract's exit code: informers, timers and sockets
 * opened before the failure must not keep a half-started daemon alive.
 */
export function daemonAction<A extends unknown[]>(
  name: string,
  fn: (...args: A) => Promise<unknown>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    // A daemon lives until its action ends (a signal): informers retrying a failing API server
    // hold only unref'd timers, which would otherwise let the process exit silently.
    const keepAlive = setInterval(() => undefined, 1 << 30);
    try {
      await fn(...args);
      clearInterval(keepAlive);
    } catch (e) {
      process.stderr.write(formatCommandError(name, e, verbosityFromArgv(process.argv)));
      process.exit(exitCodeFor(e));
    }
  };
}
