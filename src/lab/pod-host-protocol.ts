// What the node agent and the pod host (pod-host.ts) say to each other over the host's unix
// socket: one JSON object per line. The agent sends requests with a sequence number and gets
// one reply each; the host also sends `exited` events, to every connected agent, when a
// container ends. A container is named by its Pod's sandbox (`id`, the netns name) and a
// run number the host counts up on each start, so an event about an earlier run is never
// mistaken for the current one. Validation names the message and field. Pure.

import type { ExtraPort } from './netexec-container.js';

/** A netexec container the host is asked to run for a Pod. */
export interface HostedContainer {
  /** The Pod's sandbox name (its netns name). */
  readonly id: string;
  /** Path of the Pod's network namespace; absent: the host's own (a hostNetwork Pod). */
  readonly netns?: string;
  readonly hostname: string;
  /** First HTTP port (-1: none) and first UDP port (-1: none). */
  readonly httpPort: number;
  readonly udpPort: number;
  readonly extraPorts: readonly ExtraPort[];
  readonly delayShutdownSeconds: number;
  /** The FIFOs of the container's log run: its stdout and stderr. */
  readonly stdout: string;
  readonly stderr: string;
  /** The Pod's resolv.conf and hosts, for /dial's name lookups. */
  readonly resolvConf?: string;
  readonly hosts?: string;
}

export type HostSignal = 'SIGTERM' | 'SIGKILL';

export type HostRequest =
  | { readonly op: 'hello'; readonly seq: number }
  | { readonly op: 'start'; readonly seq: number; readonly container: HostedContainer }
  | {
      readonly op: 'signal';
      readonly seq: number;
      readonly id: string;
      readonly run: number;
      readonly signal: HostSignal;
    }
  | { readonly op: 'list'; readonly seq: number }
  | { readonly op: 'forget'; readonly seq: number; readonly id: string };

export interface ContainerState {
  readonly id: string;
  readonly run: number;
  readonly state: 'running' | 'exited';
  readonly exitCode?: number;
}

export type HostReply =
  | {
      readonly seq: number;
      readonly ok: true;
      readonly pid?: number;
      readonly run?: number;
      readonly containers?: readonly ContainerState[];
    }
  | { readonly seq: number; readonly ok: false; readonly error: string };

export interface HostEvent {
  readonly event: 'exited';
  readonly id: string;
  readonly run: number;
  readonly exitCode: number;
}

type Json = Record<string, unknown>;

function field<T>(
  o: Json,
  name: string,
  what: string,
  check: (v: unknown) => v is T,
  kind: string,
): T {
  const v = o[name];
  if (!check(v)) throw new Error(`${what}: ${name}: must be ${kind}, got ${JSON.stringify(v)}`);
  return v;
}

const isString = (v: unknown): v is string => typeof v === 'string' && v !== '';
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);
const isPort = (v: unknown): v is number => isInt(v) && v >= -1 && v <= 65535;

function parseObject(line: string, what: string): Json {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (e) {
    throw new Error(`${what}: not JSON: ${e instanceof Error ? e.message : String(e)}`, {
      cause: e,
    });
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new Error(`${what}: must be a JSON object`);
  return v as Json;
}

function parseExtraPorts(v: unknown, what: string): ExtraPort[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new Error(`${what}: extraPorts: must be a list`);
  return v.map((p: unknown, i) => {
    const o = (typeof p === 'object' && p !== null ? p : {}) as Json;
    const at = `${what}: extraPorts[${String(i)}]`;
    const port = field(o, 'port', at, isPort, 'a port');
    const protocol = o.protocol;
    if (protocol !== 'tcp' && protocol !== 'udp')
      throw new Error(`${at}: protocol: must be tcp or udp, got ${JSON.stringify(protocol)}`);
    return { port, protocol };
  });
}

function parseContainer(v: unknown, what: string): HostedContainer {
  if (typeof v !== 'object' || v === null) throw new Error(`${what}: must be an object`);
  const o = v as Json;
  const optionalPath = (name: string): string | undefined => {
    if (o[name] === undefined) return undefined;
    return field(o, name, what, isString, 'a path');
  };
  const netns = optionalPath('netns');
  const resolvConf = optionalPath('resolvConf');
  const hosts = optionalPath('hosts');
  const delay = field(o, 'delayShutdownSeconds', what, isInt, 'whole seconds');
  return {
    id: field(o, 'id', what, isString, 'a name'),
    hostname: field(o, 'hostname', what, isString, 'a name'),
    httpPort: field(o, 'httpPort', what, isPort, '-1 or a port'),
    udpPort: field(o, 'udpPort', what, isPort, '-1 or a port'),
    extraPorts: parseExtraPorts(o.extraPorts, what),
    delayShutdownSeconds: Math.max(0, delay),
    stdout: field(o, 'stdout', what, isString, 'a path'),
    stderr: field(o, 'stderr', what, isString, 'a path'),
    ...(netns === undefined ? {} : { netns }),
    ...(resolvConf === undefined ? {} : { resolvConf }),
    ...(hosts === undefined ? {} : { hosts }),
  };
}

/** A request line from an agent; throws naming the field at fault. */
export function parseHostRequest(line: string): HostRequest {
  const o = parseObject(line, 'pod host request');
  const seq = field(o, 'seq', 'pod host request', isInt, 'a number');
  const what = `pod host request ${String(seq)}`;
  switch (o.op) {
    case 'hello':
    case 'list':
      return { op: o.op, seq };
    case 'start':
      return { op: 'start', seq, container: parseContainer(o.container, `${what}: container`) };
    case 'signal': {
      const signal = o.signal;
      if (signal !== 'SIGTERM' && signal !== 'SIGKILL')
        throw new Error(
          `${what}: signal: must be SIGTERM or SIGKILL, got ${JSON.stringify(signal)}`,
        );
      return {
        op: 'signal',
        seq,
        id: field(o, 'id', what, isString, 'a name'),
        run: field(o, 'run', what, isInt, 'a number'),
        signal,
      };
    }
    case 'forget':
      return { op: 'forget', seq, id: field(o, 'id', what, isString, 'a name') };
    default:
      throw new Error(`${what}: op: unknown ${JSON.stringify(o.op)}`);
  }
}

/** A line from the host: a reply (has `seq`) or an event; throws on anything else. */
export function parseHostMessage(line: string): HostReply | HostEvent {
  const o = parseObject(line, 'pod host message');
  if (o.event === 'exited')
    return {
      event: 'exited',
      id: field(o, 'id', 'pod host event', isString, 'a name'),
      run: field(o, 'run', 'pod host event', isInt, 'a number'),
      exitCode: field(o, 'exitCode', 'pod host event', isInt, 'a number'),
    };
  const seq = field(o, 'seq', 'pod host reply', isInt, 'a number');
  if (o.ok === false)
    return { seq, ok: false, error: typeof o.error === 'string' ? o.error : 'failed' };
  return o as unknown as HostReply;
}
