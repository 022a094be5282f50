// Starts the lab's component processes (components.ts) inside their node namespaces and stops
// them. Each runs as `nsenter --net=/run/netns/NODE svcnet ARGS...`, logs to
// `<logDir>/<name>.log`, and counts as started once its readiness signal appears (a file it
// writes, written after it was started: a restarted API server finds its kubeconfig from the
// run before, and is ready only once it has written it again); a component that exits before
// that fails `lab up` with the tail of its log.

import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SvcnetError } from '../errors.js';
import { realClock, type Clock, type TimerHandle } from '../util/clock.js';
import { netnsPath } from '../util/ip-ops.js';
import { startProcess, type ManagedProcess } from '../os/process.js';
import type { ComponentSpec } from './components.js';

export interface RunningComponent {
  readonly spec: ComponentSpec;
  readonly proc: ManagedProcess;
}

function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

const MTIME_SLACK_MS = 20;

/** The file exists and was written at or after `since` (epoch ms, the file system's clock). */
function writtenSince(path: string, since: number): boolean {
  try {
    return statSync(path).mtimeMs >= since;
  } catch {
    return false;
  }
}

export async function startComponents(
  specs: readonly ComponentSpec[],
  self: readonly string[],
  logDir: string,
  timeoutMs = 30_000,
  clock: Clock = realClock,
): Promise<RunningComponent[]> {
  const running: RunningComponent[] = [];
  try {
    for (const spec of specs) {
      const log = join(logDir, `${spec.name}.log`);
      // File times come from the kernel's coarse clock, which may lag Date.now() by a tick.
      const since = Date.now() - MTIME_SLACK_MS;
      // nsenter joins only the network namespace. `ip netns exec` would also give the
      // component a mount namespace of its own, and the Pod namespaces a node agent creates
      // (bind mounts under /run/netns) would then be invisible to everyone else.
      const proc = startProcess(
        'nsenter',
        [`--net=${netnsPath(spec.netns)}`, '--', ...self, ...spec.args],
        log,
      );
      running.push({ spec, proc });
      let exited: number | undefined;
      void proc.exited.then((code) => (exited = code));
      const deadline = clock.now() + timeoutMs;
      while (spec.ready.kind === 'file' && !writtenSince(spec.ready.path, since)) {
        if (exited !== undefined)
          throw new SvcnetError(
            'INTERNAL',
            `${spec.name} exited with ${exited} while starting:\n${tail(log)}`,
          );
        if (clock.now() > deadline)
          throw new SvcnetError(
            'TIMEOUT',
            `${spec.name} not ready after ${timeoutMs} ms:\n${tail(log)}`,
          );
        await clock.sleep(50);
      }
    }
    return running;
  } catch (e) {
    await stopComponents(running, undefined, clock);
    throw e;
  }
}

/** SIGTERM to all at once, SIGKILL whatever is left after graceMs. */
export async function stopComponents(
  running: readonly RunningComponent[],
  graceMs = 5000,
  clock: Clock = realClock,
): Promise<void> {
  await Promise.all(
    running.map(async (c) => {
      c.proc.signal('SIGTERM');
      let timer: TimerHandle | undefined;
      const killed = await Promise.race([
        c.proc.exited.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = clock.setTimeout(() => {
            resolve(true);
          }, graceMs);
        }),
      ]);
      clock.clearTimeout(timer);
      if (killed) {
        c.proc.signal('SIGKILL');
        await c.proc.exited;
      }
    }),
  );
}
