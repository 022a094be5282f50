#!/usr/bin/env node
// The `svcnet` command: one entry point, one module per subcommand (each exports a
// `register*Command(program)` function). Exit codes follow the CLI contract in DESIGN.md:
// 0 ok, 1 runtime failure, 2 bad usage or bad input.

import { Command, CommanderError } from 'commander';
import { EXIT_USAGE, exitCodeFor } from './run.js';
import { registerNetexecCommand } from './netexec.js';
import { registerLabCommand } from './lab.js';
import { registerApiserverCommand } from './apiserver.js';
import { registerProxyCommand } from './proxy.js';
import { registerRenderCommand } from './render.js';
import { registerTraceCommand } from './trace.js';
import { registerControllerCommand } from './controller.js';
import { registerDnsCommand } from './dns.js';

export function buildProgram(): Command {
  const program = new Command('svcnet')
    .description(
      'Kubernetes Service networking: kube-proxy-compatible rules, tracer, DNS, CNI, API server, lab',
    )
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride();
  registerNetexecCommand(program);
  registerLabCommand(program);
  registerRenderCommand(program);
  registerTraceCommand(program);
  registerApiserverCommand(program);
  registerControllerCommand(program);
  registerDnsCommand(program);
  registerProxyCommand(program);
  return program;
}

async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
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
