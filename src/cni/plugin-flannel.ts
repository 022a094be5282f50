// svcnet-cni's `flannel` type, the edge: reads subnet.env, builds the delegate config
// (parse-flannel.ts), keeps it under `dataDir/<containerID>` so DEL and CHECK use what ADD
// used even after subnet.env changed, and runs the delegate — in this process when it is
// ours (`bridge`, `svcnet-cni`), else the binary of that type from CNI_PATH, as flannel's
// plugin does. DEL without a stored config falls back to subnet.env, and without either has
// nothing to undo (flannel's plugin succeeds then too). GC delegates with the current
// subnet.env and drops the stored configs of containers that are not among the valid ones.

import type { Execer } from '../os/exec.js';
import type { TextFiles } from '../os/text-files.js';
import { parseSubnetEnv, type SubnetEnv } from '../podnet/subnet-env.js';
import { invokePlugin } from './invoke.js';
import { decodeJson, parseResult } from './parse-config.js';
import {
  delegateStatePath,
  flannelDelegate,
  parseFlannelConfig,
  type FlannelConfig,
} from './parse-flannel.js';
import type { CniRequest } from './parse-request.js';
import { CniError, CniErrorCode, type CniResult } from './types.js';

type Env = Readonly<Record<string, string | undefined>>;
type Json = Record<string, unknown>;

export interface FlannelDeps {
  readonly files: TextFiles;
  readonly execer: Execer;
  readonly findPlugin: (type: string, dirs: readonly string[]) => Promise<string>;
}

/** Runs one invocation of svcnet-cni itself (the plugin's dispatch), throwing CniError. */
export type InProcessPlugin = (env: Env, stdin: string) => Promise<CniResult | undefined>;

/** Delegate types served by this binary without an exec. */
const IN_PROCESS_TYPES: readonly string[] = ['bridge', 'svcnet-cni'];

async function loadSubnetEnv(
  f: FlannelConfig,
  files: TextFiles,
  missingCode: number,
): Promise<SubnetEnv> {
  const text = await files.read(f.subnetFile);
  if (text === undefined)
    throw new CniError(
      missingCode,
      `network "${f.name}": subnetFile: ${f.subnetFile} does not exist (is the flannel agent running on this node?)`,
    );
  const parsed = parseSubnetEnv(text, `network "${f.name}": subnetFile ${f.subnetFile}`);
  if (!parsed.env) throw new CniError(CniErrorCode.internal, parsed.problems.join('; '));
  return parsed.env;
}

async function loadStored(path: string, files: TextFiles): Promise<Json | undefined> {
  const text = await files.read(path);
  if (text === undefined) return undefined;
  const v = decodeJson(text, `stored delegate config ${path}`);
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new CniError(CniErrorCode.decodeFailure, `stored delegate config ${path}: not an object`);
  return v as Json;
}

function cniEnv(env: Env, command: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && k.startsWith('CNI_')) out[k] = v;
  out.CNI_COMMAND = command;
  return out;
}

async function runDelegate(
  command: string,
  conf: Json,
  env: Env,
  deps: FlannelDeps,
  inProcess: InProcessPlugin,
): Promise<CniResult | undefined> {
  const stdin = JSON.stringify(conf);
  const type = typeof conf.type === 'string' ? conf.type : '';
  if (IN_PROCESS_TYPES.includes(type)) return inProcess({ ...env, CNI_COMMAND: command }, stdin);
  const dirs = (env.CNI_PATH ?? '').split(':').filter((d) => d !== '');
  const binary = await deps.findPlugin(type, dirs);
  const out = await invokePlugin(deps.execer, { binary, env: cniEnv(env, command), stdin });
  return out === undefined ? undefined : parseResult(out, `delegate ${type} result`);
}

/** Container IDs of a GC request's valid attachments (malformed entries skipped). */
function validContainerIds(v: unknown): string[] {
  if (!Array.isArray(v)) return [];
  return v.flatMap((a: unknown) =>
    typeof a === 'object' &&
    a !== null &&
    typeof (a as { containerID?: unknown }).containerID === 'string'
      ? [(a as { containerID: string }).containerID]
      : [],
  );
}

/** One `type: "flannel"` invocation (not VERSION). Throws CniError. */
export async function runFlannel(
  req: CniRequest,
  env: Env,
  stdin: string,
  deps: FlannelDeps,
  inProcess: InProcessPlugin,
): Promise<CniResult | undefined> {
  const f = parseFlannelConfig(stdin);
  const state = delegateStatePath(f, req.containerId ?? '');
  const withPrev = (conf: Json): Json =>
    f.prevResult === undefined ? conf : { ...conf, prevResult: f.prevResult };
  switch (req.command) {
    case 'ADD': {
      const conf = flannelDelegate(f, await loadSubnetEnv(f, deps.files, CniErrorCode.internal));
      await deps.files.write(state, `${JSON.stringify(conf)}\n`);
      try {
        return await runDelegate('ADD', withPrev(conf), env, deps, inProcess);
      } catch (e) {
        await deps.files.remove(state).catch(() => undefined);
        throw e;
      }
    }
    case 'DEL': {
      let conf = await loadStored(state, deps.files);
      if (!conf && (await deps.files.read(f.subnetFile)) !== undefined)
        conf = flannelDelegate(f, await loadSubnetEnv(f, deps.files, CniErrorCode.internal));
      if (!conf) return undefined;
      await runDelegate('DEL', withPrev(conf), env, deps, inProcess);
      await deps.files.remove(state);
      return undefined;
    }
    case 'CHECK': {
      const conf = await loadStored(state, deps.files);
      if (!conf)
        throw new CniError(
          CniErrorCode.internal,
          `network "${f.name}": CHECK: no delegate config at ${state} (dataDir); was ADD run for this container?`,
        );
      return runDelegate('CHECK', withPrev(conf), env, deps, inProcess);
    }
    case 'STATUS': {
      const conf = flannelDelegate(
        f,
        await loadSubnetEnv(f, deps.files, CniErrorCode.notAvailable),
      );
      return runDelegate('STATUS', conf, env, deps, inProcess);
    }
    case 'GC': {
      // Without subnet.env there is no delegate to ask; keep everything.
      if ((await deps.files.read(f.subnetFile)) === undefined) return undefined;
      const conf = flannelDelegate(f, await loadSubnetEnv(f, deps.files, CniErrorCode.internal));
      if (f.validAttachments !== undefined) conf['cni.dev/valid-attachments'] = f.validAttachments;
      await runDelegate('GC', conf, env, deps, inProcess);
      // The delegate released what it kept; forget the stored configs of the same containers.
      if (f.validAttachments === undefined) return undefined;
      const keep = new Set(validContainerIds(f.validAttachments));
      for (const id of await deps.files.list(f.dataDir))
        if (!keep.has(id)) await deps.files.remove(delegateStatePath(f, id));
      return undefined;
    }
    default:
      return undefined;
  }
}
