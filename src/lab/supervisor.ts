// The lab supervisor: PID 1 of the lab sandbox (see sandbox.ts). It builds the lab network
// from the topology plan, records its state for `lab status` / `lab exec`, and on SIGTERM
// tears everything down in order. If it is killed instead, the kernel does the teardown.

import { writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { Execer } from '../os/exec.js';
import { applyNetworkScript, deleteNamespaces } from './network.js';
import { mountPrivateDirs } from './sandbox.js';
import { waitForTermination } from '../os/process.js';
import { networkScript, type LabPlan } from './topology.js';

export interface LabState {
  readonly status: 'starting' | 'ready' | 'failed' | 'stopping';
  readonly plan: LabPlan;
  readonly startedAt: string;
  readonly readyAt?: string;
  readonly error?: string;
}

export const STATE_FILE = 'state.json';

export function writeState(stateDir: string, state: LabState): void {
  const tmp = join(stateDir, `${STATE_FILE}.tmp`);
  writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(tmp, join(stateDir, STATE_FILE));
}

export interface SupervisorOptions {
  readonly plan: LabPlan;
  readonly stateDir: string;
  readonly execer: Execer;
  readonly log: (msg: string) => void;
}

/** Builds the lab and serves until SIGTERM/SIGINT; resolves after the teardown. */
export async function superviseLab(opts: SupervisorOptions): Promise<void> {
  const { plan, stateDir, execer, log } = opts;
  const startedAt = new Date().toISOString();
  writeState(stateDir, { status: 'starting', plan, startedAt });
  const script = networkScript(plan);
  try {
    await mountPrivateDirs(execer);
    await applyNetworkScript(execer, script);
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    writeState(stateDir, { status: 'failed', plan, startedAt, error });
    throw e;
  }
  writeState(stateDir, { status: 'ready', plan, startedAt, readyAt: new Date().toISOString() });
  log(`lab ${plan.name} ready: ${plan.nodes.length} nodes`);
  await waitForTermination();
  log(`lab ${plan.name} stopping`);
  writeState(stateDir, { status: 'stopping', plan, startedAt });
  await deleteNamespaces(execer, script.namespaces);
}
