#!/usr/bin/env node
// The `svcnet` command: one entry point, one module per subcommand (each exports a
// `register*Command(program)` function). Exit codes follow the CLI contract in DESIGN.md:
// 0 ok, 1 runtime failure, 2 bad usage or bad input.
//
// Only the invoked subcommand's module is loaded: the lab starts a `svcnet netexec` process
// per Pod, and loading the API server, the UI and the proxy for each would cost most of
// a second of CPU apiece. `svcnet --help` (or an unknown command) loads them all.
//
// Usage errors are one line, as kubectl's are: `svcnet trace: unknown option '--source' (did
// you mean --src?)`, without the help text. Required options are checked after unknown ones,
// so a misspelt required flag is reported as misspelt, not as missing.

import { Command, CommanderError } from 'commander';
import {
  EXIT_USAGE,
  exitCodeFor,
  formatCommandError,
  formatUsageError,
  verbosityFromArgv,
} from './run.js';

type Register = (program: Command) => void;

/** Subcommands in help order, each loaded on demand. */
export const SUBCOMMANDS: Readonly<Record<string, () => Promise<Register>>> = {
  render: async () => (await import('./render.js')).registerRenderCommand,
  trace: async () => (await import('./trace.js')).registerTraceCommand,
  proxy: async () => (await import('./proxy.js')).registerProxyCommand,
  dns: async () => (await import('./dns.js')).registerDnsCommand,
  controller: async () => (await import('./controller.js')).registerControllerCommand,
  apiserver: async () => (await import('./apiserver.js')).registerApiserverCommand,
  lab: async () => (await import('./lab.js')).registerLabCommand,
  netexec: async () => (await import('./netexec.js')).registerNetexecCommand,
  flannel: async () => (await import('./flannel.js')).registerFlannelCommand,
  ui: async () => (await import('./ui.js')).registerUiCommand,
};

/** The program with `only` registered, or every subcommand when `only` is not one of them. */
export async function buildProgram(only?: string): Promise<Command> {
  const program = new Command('svcnet')
    .description(
      'Kubernetes Service networking: kube-proxy-compatible rules, tracer, DNS, CNI, API server, lab',
    )
    .version('0.1.0')
    .exitOverride();
  const load = only === undefined ? undefined : SUBCOMMANDS[only];
  const loaders = load ? [load] : Object.values(SUBCOMMANDS);
  for (const register of await Promise.all(loaders.map((l) => l()))) register(program);
  configureErrors(program);
  return program;
}

/** The full name of a command, e.g. `svcnet lab up`. */
function fullName(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/**
 * One-line usage errors on every command, and required options checked in a preAction hook
 * (after commander's unknown-option check) instead of before it.
 */
function configureErrors(cmd: Command): void {
  const name = fullName(cmd);
  cmd.configureOutput({
    outputError: (text, write) => {
      write(formatUsageError(name, text));
    },
  });
  const required = cmd.options.filter((o) => o.mandatory);
  for (const o of required) o.mandatory = false;
  if (required.length > 0)
    cmd.hook('preAction', (_this, actionCommand) => {
      for (const o of required)
        if (actionCommand.getOptionValue(o.attributeName()) === undefined)
          actionCommand.error(`error: required option '${o.flags}' not specified`, {
            code: 'commander.missingMandatoryOptionValue',
          });
    });
  for (const sub of cmd.commands) configureErrors(sub);
}

async function main(argv: string[]): Promise<void> {
  try {
    const program = await buildProgram(argv[2]);
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      process.exitCode = e.exitCode === 0 ? 0 : EXIT_USAGE;
      return;
    }
    process.stderr.write(formatCommandError(argv[2] ?? '', e, verbosityFromArgv(argv)));
    process.exitCode = exitCodeFor(e);
  }
}

await main(process.argv);
