// kubectl against an e2e lab, as a user drives it: the real binary with the kubeconfig `lab up`
// wrote, objects on stdin as JSON, raw API paths for the verbs kubectl has no command for
// (deletecollection, a watch from a resourceVersion, a subresource read). Also a long-running
// command in a lab namespace: inLab's default 60 s limit is too short for the conformance
// clients that keep sending while Pods come and go.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RealExecer, type ExecResult } from '../../../src/os/exec.js';
import { inLab, resolveTarget } from '../../../src/lab/lab.js';
import type { E2eLab } from './lab.js';

const execer = new RealExecer();

/** kubectl with the lab's kubeconfig; never throws for a non-zero exit. */
export function kubectl(
  lab: E2eLab,
  args: readonly string[],
  stdin?: unknown,
): Promise<ExecResult> {
  return execer.run({
    cmd: 'kubectl',
    args: ['--kubeconfig', lab.lab.state.kubeconfig ?? '', '--request-timeout=20s', ...args],
    ...(stdin === undefined ? {} : { stdin: JSON.stringify(stdin) }),
  });
}

/** kubectl that must succeed; returns its stdout. */
export async function kubectlOk(
  lab: E2eLab,
  args: readonly string[],
  stdin?: unknown,
): Promise<string> {
  const r = await kubectl(lab, args, stdin);
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** kubectl … -o json, parsed. */
export async function kubectlJson<T>(lab: E2eLab, args: readonly string[]): Promise<T> {
  return JSON.parse(await kubectlOk(lab, [...args, '-o', 'json'])) as T;
}

/** The events of a watch from `resourceVersion` on `path`, ending after `seconds`. */
export async function watchEvents(
  lab: E2eLab,
  path: string,
  resourceVersion: string,
  seconds = 2,
): Promise<{ type: string; name: string }[]> {
  const sep = path.includes('?') ? '&' : '?';
  const out = await kubectlOk(lab, [
    'get',
    '--raw',
    `${path}${sep}watch=1&resourceVersion=${resourceVersion}&timeoutSeconds=${String(seconds)}`,
  ]);
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const e = JSON.parse(l) as { type: string; object?: { metadata?: { name?: string } } };
      return { type: e.type, name: e.object?.metadata?.name ?? '' };
    });
}

/** argv in a node or Pod of the lab, allowed to run for `timeoutMs`. */
export async function execLong(
  lab: E2eLab,
  target: string,
  argv: readonly string[],
  timeoutMs: number,
): Promise<ExecResult> {
  const netns = await resolveTarget(lab.lab, target);
  return inLab(lab.lab, netns, argv, { run: (req) => execer.run({ ...req, timeoutMs }) });
}

/** lab.podsReady, failing with what `kubectl get pods -o wide` shows of the namespace. */
export async function podsReadyOrShow(
  lab: E2eLab,
  namespace: string,
  names: readonly string[],
  timeoutMs: number,
): Promise<void> {
  try {
    await lab.podsReady(namespace, names, timeoutMs);
  } catch (e) {
    const r = await kubectl(lab, ['get', 'pods', '-n', namespace, '-o', 'wide']);
    const logs = join(lab.lab.stateDir, 'logs');
    const agents = readdirSync(logs)
      .filter((f) => f.startsWith('agent-'))
      .map(
        (f) => `${f}:\n${readFileSync(join(logs, f), 'utf8').split('\n').slice(-15).join('\n')}`,
      );
    const shown = [r.stdout + r.stderr, ...agents].join('\n');
    throw new Error(`${e instanceof Error ? e.message : String(e)}\n${shown}`, {
      cause: e,
    });
  }
}
