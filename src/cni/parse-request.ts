// Parsing of one plugin invocation's environment (CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS,
// CNI_IFNAME, CNI_ARGS, CNI_PATH) into a request, with the spec's error codes for missing
// or malformed variables. Pure; no I/O. The stdin config is parsed by parse-config.ts.

import { CNI_COMMANDS, CniError, CniErrorCode, type CniCommand } from './types.js';

/** Network names and container IDs: spec §"Network configuration" / libcni ValidateContainerID. */
export const NAME_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

export interface CniRequest {
  readonly command: CniCommand;
  /** Absent only for VERSION, STATUS and GC. */
  readonly containerId: string | undefined;
  /** Netns path; may be empty on DEL (the runtime already removed the namespace). */
  readonly netns: string | undefined;
  readonly ifName: string | undefined;
  /** CNI_ARGS as key/value pairs, in order. */
  readonly args: ReadonlyMap<string, string>;
  /** CNI_PATH entries. */
  readonly path: readonly string[];
}

/** Reason `name` is not a valid interface name, or undefined when it is (Linux rules). */
export function invalidIfName(name: string): string | undefined {
  if (name === '') return 'is empty';
  if (Buffer.byteLength(name) > 15) return 'is longer than 15 bytes';
  if (name === '.' || name === '..') return 'may not be "." or ".."';
  if (/[/:\s]/.test(name)) return 'may not contain "/", ":" or whitespace';
  return undefined;
}

/** CNI_ARGS keys the plugin understands; others need IgnoreUnknown (as the reference's skel). */
const KNOWN_ARGS = new Set([
  'IgnoreUnknown',
  'IP',
  'K8S_POD_NAMESPACE',
  'K8S_POD_NAME',
  'K8S_POD_INFRA_CONTAINER_ID',
  'K8S_POD_UID',
]);

/** Parses `K=V;K=V`. Throws code 4 on a pair without `=`, or unknown keys without IgnoreUnknown. */
export function parseCniArgs(text: string): Map<string, string> {
  const out = new Map<string, string>();
  if (text === '') return out;
  for (const pair of text.split(';')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0)
      throw new CniError(
        CniErrorCode.invalidEnvironment,
        `CNI_ARGS: invalid pair "${pair}" (want KEY=VALUE)`,
      );
    out.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  const ignore = /^(1|true)$/i.test(out.get('IgnoreUnknown') ?? '');
  const unknown = [...out.keys()].filter((k) => !KNOWN_ARGS.has(k));
  if (!ignore && unknown.length > 0)
    throw new CniError(
      CniErrorCode.invalidEnvironment,
      `CNI_ARGS: unknown args [${unknown.join(', ')}] (add IgnoreUnknown=1 to ignore them)`,
    );
  return out;
}

/**
 * Reads the CNI_* variables. Throws CniError code 4 naming every missing variable, or a bad
 * command, container ID or interface name.
 */
export function parseEnvironment(env: Readonly<Record<string, string | undefined>>): CniRequest {
  const cmd = env.CNI_COMMAND ?? '';
  if (!(CNI_COMMANDS as readonly string[]).includes(cmd))
    throw new CniError(
      CniErrorCode.invalidEnvironment,
      cmd === ''
        ? 'required env variable CNI_COMMAND missing'
        : `unknown CNI_COMMAND "${cmd}"; want one of ${CNI_COMMANDS.join(', ')}`,
    );
  const command = cmd as CniCommand;
  const needsContainer = command === 'ADD' || command === 'DEL' || command === 'CHECK';
  const required = needsContainer
    ? command === 'DEL'
      ? ['CNI_CONTAINERID', 'CNI_IFNAME']
      : ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME']
    : [];
  const missing = required.filter((k) => (env[k] ?? '') === '');
  if (missing.length > 0)
    throw new CniError(
      CniErrorCode.invalidEnvironment,
      `required env variables [${missing.join(',')}] missing for ${command}`,
    );
  const containerId = env.CNI_CONTAINERID || undefined;
  if (needsContainer && containerId !== undefined && !NAME_RE.test(containerId))
    throw new CniError(
      CniErrorCode.invalidEnvironment,
      'CNI_CONTAINERID: invalid characters (want letters, digits, "_", "." and "-", starting alphanumeric)',
      containerId,
    );
  const ifName = env.CNI_IFNAME || undefined;
  if (needsContainer && ifName !== undefined) {
    const bad = invalidIfName(ifName);
    if (bad) throw new CniError(CniErrorCode.invalidEnvironment, `CNI_IFNAME ${bad}`, ifName);
  }
  return {
    command,
    containerId: needsContainer ? containerId : undefined,
    netns: needsContainer ? env.CNI_NETNS || undefined : undefined,
    ifName: needsContainer ? ifName : undefined,
    args: needsContainer ? parseCniArgs(env.CNI_ARGS ?? '') : new Map(),
    path: (env.CNI_PATH ?? '').split(':').filter((p) => p !== ''),
  };
}
