// Takes a node's routing dumps through an injected command runner (the lab runs them inside
// the node's network namespace; tests in one they made): `ip route`, `ip -6 route`,
// `ip neigh`, `bridge fdb show`, `ip -d link show`, each output after its marker line — the
// one-file format dump.ts reads. No process is started here: the caller's runner does that.

import { SvcnetError } from '../../errors.js';

/** The commands a live read runs, in order; their outputs follow `# COMMAND` lines. */
export const ROUTING_DUMP_COMMANDS: readonly (readonly string[])[] = [
  ['ip', 'route', 'show'],
  ['ip', '-6', 'route', 'show'],
  ['ip', 'neigh', 'show'],
  ['bridge', 'fdb', 'show'],
  ['ip', '-d', 'link', 'show'],
];

/** Runs one command where the node's state is; its exit code and output. */
export type DumpRunner = (
  argv: readonly string[],
) => Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>;

/** The marked dump of every command; EXEC_FAILED names a command that failed. */
export async function collectRoutingDump(run: DumpRunner, where: string): Promise<string> {
  const parts: string[] = [];
  for (const argv of ROUTING_DUMP_COMMANDS) {
    const r = await run(argv);
    if (r.code !== 0)
      throw new SvcnetError(
        'EXEC_FAILED',
        `${argv.join(' ')} on ${where}: exit ${String(r.code)}: ${r.stderr.trim()}`,
      );
    parts.push(`# ${argv.join(' ')}`, r.stdout.trimEnd());
  }
  return `${parts.join('\n')}\n`;
}
