// Executing CNI plugin binaries: finding `type` in CNI_PATH, running it with the CNI_*
// environment and the config on stdin (optionally through a launcher such as
// `nsenter --net=<node netns>`), retrying while the binary is being replaced (ETXTBSY), and
// turning its stdout into a result or a CniError carrying the plugin's own code. Used by the
// runtime and by svcnet-cni when it delegates IPAM.

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
    const out = res.stdout.trim();
    if (res.code === 0) {
      if (out === '') return undefined;
      try {
        return JSON.parse(out) as unknown;
      } catch {
        throw new CniError(
          CniErrorCode.decodeFailure,
          `plugin ${req.binary}: output is not JSON: ${out.slice(0, 200)}`,
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
    const text = res.stderr.trim() || out || `exit status ${res.code}`;
    throw new CniError(CniErrorCode.internal, `plugin ${req.binary} failed: ${text}`);
  }
}
