#!/usr/bin/env node
// The `svcnet` command: one entry point, one module per subcommand (each exports a
// `register*Command(program)` function). Exit codes follow the CLI contract in DESIGN.md:
// 0 ok, 1 runtime failure, 2 bad usage or bad input.
//
// Only the invoked subcommand's module is loaded: the lab starts a `svcnet netexec` process
// per Pod, and loading the API server, client-node and the proxy for each would cost most of
// a second of CPU apiece. `svcnet --help` (or an unknown command) loads them all.

import { Command, CommanderError } from 'commander';
import { EXIT_USAGE, exitCodeFor } from './run.js';

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
};

/** The program with `only` registered, or every subcommand when `only` is not one of them. */
export async function buildProgram(only?: string): Promise<Command> {
  const program = new Command('svcnet')
    .description(
      'Kubernetes Service networking: kube-proxy-compatible rules, tracer, DNS, CNI, API server, lab',
    )
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride();
  const load = only === undefined ? undefined : SUBCOMMANDS[only];
  const loaders = load ? [load] : Object.values(SUBCOMMANDS);
  for (const register of await Promise.all(loaders.map((l) => l()))) register(program);
  return program;
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
    process.stderr.write(`svcnet: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = exitCodeFor(e);
  }
}

await main(process.argv);
