// `svcnet lab up|down|status|exec|supervise`: the one-machine cluster (see src/lab/). `up`
// returns once the lab is ready and leaves the supervisor running in its sandbox; `supervise`
// is that supervisor's own entry point (internal, started by `up`).

import { InvalidArgumentError, type Command } from 'commander';
import { RealExecer } from '../os/exec.js';
import { findLab, labDown, labExec, labUp } from '../lab/lab.js';
import { superviseLab } from '../lab/supervisor.js';
import { startForwarder } from '../lab/forward.js';
import { waitForTermination } from '../os/process.js';
import { planLab } from '../lab/topology.js';
import { action } from './run.js';

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new InvalidArgumentError(`must be a positive integer, got ${JSON.stringify(v)}`);
  return n;
}

function describeNodes(plan: ReturnType<typeof planLab>): string {
  const rows = plan.nodes.map(
    (n) => `  ${n.name.padEnd(28)} ${n.role.padEnd(14)} ${n.ip.padEnd(12)} ${n.podCIDR}`,
  );
  return [`  ${'NODE'.padEnd(28)} ${'ROLE'.padEnd(14)} ${'IP'.padEnd(12)} POD CIDR`, ...rows].join(
    '\n',
  );
}

export function registerLabCommand(program: Command): void {
  const lab = program
    .command('lab')
    .description('a multi-node cluster in network namespaces on this machine (root)');
  lab
    .command('up')
    .description('build the lab and return when it is ready')
    .option('--name <name>', 'lab name', 'svcnet')
    .option('--nodes <n>', 'nodes including the control plane', positiveInt, 3)
    .action(
      action('lab up', async (o: { name: string; nodes: number }) => {
        planLab({ name: o.name, nodes: o.nodes }); // validate before starting anything
        const started = Date.now();
        const running = await labUp({
          name: o.name,
          nodes: o.nodes,
          self: [process.execPath, ...process.execArgv, process.argv[1] ?? ''],
        });
        return `lab ${o.name} is up in ${Date.now() - started} ms (supervisor pid ${running.unsharePid})\n${describeNodes(running.state.plan)}\n\nsvcnet lab exec ${running.state.plan.nodes[0]?.name ?? ''} -- ip addr   # run a command on a node\nsvcnet lab down                  # remove everything`;
      }),
    );
  lab
    .command('down')
    .description('stop the lab and remove everything it created')
    .option('--name <name>', 'lab name', 'svcnet')
    .action(
      action('lab down', async (o: { name: string }) =>
        (await labDown(o.name)) ? `lab ${o.name} removed` : `lab ${o.name} is not running`,
      ),
    );
  lab
    .command('status')
    .description('show the lab and its nodes')
    .option('--name <name>', 'lab name', 'svcnet')
    .action(
      action('lab status', (o: { name: string }) => {
        const running = findLab(o.name);
        if (!running) {
          process.exitCode = 1;
          return Promise.resolve(`lab ${o.name} is not running`);
        }
        return Promise.resolve(
          `lab ${o.name}: ${running.state.status} since ${running.state.readyAt ?? running.state.startedAt} (supervisor pid ${running.unsharePid})\n${describeNodes(running.state.plan)}`,
        );
      }),
    );
  lab
    .command('exec')
    .description(
      'run a command inside a node (or pod) of the lab: svcnet lab exec TARGET -- CMD...',
    )
    .argument('<target>', 'node or pod name')
    .argument('[cmd...]', 'command and arguments')
    .option('--name <name>', 'lab name', 'svcnet')
    .action(
      action('lab exec', async (target: string, cmd: string[], o: { name: string }) => {
        process.exitCode = await labExec(o.name, target, cmd);
        return undefined;
      }),
    );
  lab
    .command('forward', { hidden: true })
    .description('internal: bridge a unix socket to a TCP address (the lab API endpoint)')
    .requiredOption('--listen-unix <path>')
    .requiredOption('--to <host:port>')
    .action(
      action('lab forward', async (o: { listenUnix: string; to: string }) => {
        const m = /^(.*):(\d+)$/.exec(o.to);
        if (!m)
          throw new InvalidArgumentError(`--to: must be HOST:PORT, got ${JSON.stringify(o.to)}`);
        const fwd = await startForwarder(
          { path: o.listenUnix },
          { host: (m[1] ?? '').replace(/^\[|\]$/g, ''), port: Number(m[2]) },
        );
        await waitForTermination();
        await fwd.close();
        return undefined;
      }),
    );
  lab
    .command('supervise', { hidden: true })
    .description('internal: the lab supervisor (PID 1 of the lab sandbox)')
    .requiredOption('--name <name>')
    .requiredOption('--nodes <n>', 'nodes', positiveInt)
    .requiredOption('--state-dir <dir>')
    .action(
      action('lab supervise', async (o: { name: string; nodes: number; stateDir: string }) => {
        await superviseLab({
          plan: planLab({ name: o.name, nodes: o.nodes }),
          stateDir: o.stateDir,
          execer: new RealExecer(),
          log: (m) => process.stderr.write(`${new Date().toISOString()} ${m}\n`),
        });
        return undefined;
      }),
    );
}
