// Running programs inside a named network namespace: the argv of `ip netns exec NAME …` (which
// also shows /etc/netns/NAME/* as /etc/* to the program) and an Execer that wraps every
// command in it. The one place that spells `ip netns exec`; creating and deleting namespaces
// and configuring their links is the Ip seam's job (ip.ts).

import type { ExecRequest, ExecResult, Execer } from './exec.js';

/** `argv` run inside the namespace NAME (in /run/netns): `ip netns exec NAME argv…`. */
export function netnsExecArgv(name: string, argv: readonly string[]): [string, ...string[]] {
  return ['ip', 'netns', 'exec', name, ...argv];
}

/** An Execer whose commands run inside the namespace NAME (through `inner`). */
export function netnsExecer(inner: Execer, name: string): Execer {
  return {
    run: (req: ExecRequest): Promise<ExecResult> => {
      const [cmd, ...args] = netnsExecArgv(name, [req.cmd, ...req.args]);
      return inner.run({ ...req, cmd, args });
    },
  };
}
