// Executing CNI plugin binaries: finding `type` in CNI_PATH, running it with the CNI_*
// environment and the config on stdin (optionally through a launcher such as
// `nsenter --net=<node netns>`), retrying while the binary is being replaced (ETXTBSY), and
// turning its stdout into a result or a CniError carrying the plugin's own code. Used by the
// runtime and by svcnet-cni when it delegates IPAM. A plugin this process carries as code
// (InProcessPlugin: svcnet-cni for the lab's runtime) is called as a function instead, its
// output read by the same rules.

import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { Execer } from '../os/exec.js';
import { CniError, CniErrorCode } from './types.js';

/** Finds an executable named `type` in `dirs`; throws code 999 naming the path searched. */
export async function findPluginBinary(type: string, dirs: readonly string[]): Promise<string> {
  if (type === '' || type.includes('/'))
    throw new CniError(
      CniErrorCode.invalidNetworkConfig,
      `plugin type must be a binary name, got "${type}"`,
    );
  for (const dir of dirs) {
    const candidate = join(dir, type);
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not in this directory.
    }
  }
  throw new CniError(
    CniErrorCode.internal,
    `failed to find plugin "${type}" in path [${dirs.join(' ')}]`,
  );
}

export interface InvokeRequest {
  readonly binary: string;
  /** Full CNI_* set; '' clears a variable inherited from our own environment. */
  readonly env: Readonly<Record<string, string>>;
  readonly stdin: string;
  /** Command prefix, e.g. ['nsenter', '--net=/run/netns/node1'] to run in a node namespace. */
  readonly launcher?: readonly string[];
  readonly timeoutMs?: number;
}

/**
 * Runs a plugin. Returns its parsed stdout JSON (undefined when stdout is empty, as for DEL
 * and CHECK). Throws CniError: the plugin's error JSON (code, msg, details) when it printed
 * one, else code 999 with its stderr text.
 */
export async function invokePlugin(execer: Execer, req: InvokeRequest): Promise<unknown> {
  const [cmd, ...pre] = [...(req.launcher ?? []), req.binary];
  let attempt = 0;
  for (;;) {
    let res;
    try {
      res = await execer.run({
        cmd,
        args: pre,
        env: req.env,
        stdin: req.stdin,
        timeoutMs: req.timeoutMs ?? 60_000,
      });
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      if (/ETXTBSY/.test(msg) && attempt++ < 5) {
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      throw new CniError(CniErrorCode.internal, `plugin ${req.binary}: ${msg}`, undefined, e);
    }
    return parsePluginOutput(req.binary, res.code, res.stdout, res.stderr);
  }
}

/**
 * A plugin's exit status and output as the spec reads them: its parsed stdout JSON
 * (undefined when empty) on exit 0; else a CniError carrying the plugin's error JSON (code,
 * msg, details) or, without one, code 999 with its stderr text.
 */
export function parsePluginOutput(
  binary: string,
  code: number,
  stdout: string,
  stderr: string,
): unknown {
  const out = stdout.trim();
  if (code === 0) {
    if (out === '') return undefined;
    try {
      return JSON.parse(out) as unknown;
    } catch {
      throw new CniError(
        CniErrorCode.decodeFailure,
        `plugin ${binary}: output is not JSON: ${out.slice(0, 200)}`,
      );
    }
  }
  let parsed: unknown;
  try {
    parsed = out === '' ? undefined : JSON.parse(out);
  } catch {
    parsed = undefined;
  }
  if (
    typeof parsed === 'object' &&
    parsed !== null &&
    typeof (parsed as { code?: unknown }).code === 'number'
  ) {
    const p = parsed as { code: number; msg?: unknown; details?: unknown };
    throw new CniError(
      p.code,
      typeof p.msg === 'string' ? p.msg : `plugin failed with code ${p.code}`,
      typeof p.details === 'string' ? p.details : undefined,
    );
  }
  const text = stderr.trim() || out || `exit status ${code}`;
  throw new CniError(CniErrorCode.internal, `plugin ${binary} failed: ${text}`);
}

/** A plugin run as a function in this process: the CNI_* environment and stdin in, stdout and exit status out. */
export type InProcessPlugin = (
  env: Readonly<Record<string, string>>,
  stdin: string,
) => Promise<{ readonly stdout: string; readonly exitCode: number }>;

/** Runs an in-process plugin with an exec request's env and stdin; same result and errors as invokePlugin. */
export async function invokeInProcess(
  plugin: InProcessPlugin,
  req: Pick<InvokeRequest, 'binary' | 'env' | 'stdin'>,
): Promise<unknown> {
  const out = await plugin(req.env, req.stdin);
  return parsePluginOutput(req.binary, out.exitCode, out.stdout, '');
}
