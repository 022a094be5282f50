// Reads ipvsadm's text forms back into the model: `parseRestore` takes `ipvsadm -S -n`
// output or any `ipvsadm -R` script (-A -E -D -a -e -d -C with their short and long
// options), `parseSave` folds a save dump into services, `parseList` reads `ipvsadm -L -n`
// (header and title lines optional, connection counters kept). Addresses are canonicalized.
// Errors are SvcnetError INVALID_INPUT `line N: ...`. Pure.

import { SvcnetError } from '../../errors.js';
import { canonicalIP } from '../../util/ip.js';
import {
  makeIpvsState,
  normalizeFlags,
  toIpvsProtocol,
  virtualServerKey,
  type IpvsForward,
  type IpvsOperation,
  type IpvsProtocol,
  type IpvsService,
  type RealServer,
  type VirtualServer,
  type VirtualServerFlag,
  type VirtualServerId,
} from './model.js';

/** `10.0.0.1:80` / `[fd00::1]:80` → canonical address and port. */
export function splitHostPort(text: string): { address: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(text) ?? /^([^:[\]]+):(\d+)$/.exec(text);
  if (!m) throw new Error(`${JSON.stringify(text)} is not address:port`);
  const address = canonicalIP(m[1] ?? '');
  const port = Number(m[2]);
  if (address === undefined) throw new Error(`${JSON.stringify(m[1])} is not an IP address`);
  if (port > 65535) throw new Error(`port ${String(port)} is out of range`);
  if (address.includes(':') !== text.startsWith('['))
    throw new Error(`IPv6 addresses are written [addr]:port`);
  return { address, port };
}

const SCHED_FLAG_BY_NAME: Readonly<Record<string, VirtualServerFlag>> = {
  'flag-1': 'schedFlag1',
  'flag-2': 'schedFlag2',
  'flag-3': 'schedFlag3',
  'sh-fallback': 'schedFlag1',
  'sh-port': 'schedFlag2',
  'mh-fallback': 'schedFlag1',
  'mh-port': 'schedFlag2',
};

export function parseSchedFlags(text: string): VirtualServerFlag[] {
  return text.split(',').map((name) => {
    const f = SCHED_FLAG_BY_NAME[name];
    if (!f) throw new Error(`unknown scheduler flag ${name}`);
    return f;
  });
}

/** `255.255.0.0` or a prefix length → prefix length. */
export function parseNetmask(text: string): number {
  if (/^\d+$/.test(text)) return Number(text);
  const parts = text.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !(p >= 0 && p <= 255)))
    throw new Error(`bad netmask ${text}`);
  const bits = parts.reduce((acc, p) => acc * 256 + p, 0);
  const prefix = bits.toString(2).replace(/0+$/, '').length;
  if (bits !== 0 && !/^1+0*$/.test(bits.toString(2).padStart(32, '0')))
    throw new Error(`bad netmask ${text}`);
  return bits === 0 ? 0 : prefix;
}

const PROTOCOL_SWITCHES: Readonly<Record<string, IpvsProtocol>> = {
  '-t': 'tcp',
  '--tcp-service': 'tcp',
  '-u': 'udp',
  '--udp-service': 'udp',
  '--sctp-service': 'sctp',
};

const FORWARD_BY_SWITCH: Readonly<Record<string, IpvsForward>> = {
  '-m': 'Masq',
  '--masquerading': 'Masq',
  '-g': 'Route',
  '--gatewaying': 'Route',
  '-i': 'Tunnel',
  '--ipip': 'Tunnel',
};

interface Args {
  id?: VirtualServerId;
  scheduler?: string;
  flags: VirtualServerFlag[];
  timeout?: number;
  netmask?: number;
  real?: { address: string; port: number };
  forward?: IpvsForward;
  weight?: number;
}

function needValue(words: readonly string[], i: number, opt: string): string {
  const v = words[i];
  if (v === undefined || v.startsWith('-')) throw new Error(`${opt} needs a value`);
  return v;
}

/** Reads the options after the command switch. */
function parseArgs(words: readonly string[]): Args {
  const a: Args = { flags: [] };
  for (let i = 0; i < words.length; i++) {
    const w = words[i] ?? '';
    const proto = PROTOCOL_SWITCHES[w];
    if (proto) a.id = { protocol: proto, ...splitHostPort(needValue(words, ++i, w)) };
    else if (w === '-s' || w === '--scheduler') a.scheduler = needValue(words, ++i, w);
    else if (w === '-p' || w === '--persistent') {
      a.flags.push('persistent');
      if (/^\d+$/.test(words[i + 1] ?? '')) a.timeout = Number(words[++i]);
      else a.timeout = 300;
    } else if (w === '-M' || w === '--netmask') a.netmask = parseNetmask(needValue(words, ++i, w));
    else if (w === '-o' || w === '--ops') a.flags.push('onePacket');
    else if (w === '-b' || w === '--sched-flags')
      a.flags.push(...parseSchedFlags(needValue(words, ++i, w)));
    else if (w === '-r' || w === '--real-server') a.real = splitHostPort(needValue(words, ++i, w));
    else if (FORWARD_BY_SWITCH[w]) a.forward = FORWARD_BY_SWITCH[w];
    else if (w === '-w' || w === '--weight') {
      const v = needValue(words, ++i, w);
      if (!/^\d+$/.test(v)) throw new Error(`bad weight ${v}`);
      a.weight = Number(v);
    } else throw new Error(`unknown option ${w}`);
  }
  return a;
}

function toVirtualServer(a: Args, id: VirtualServerId): VirtualServer {
  return {
    ...id,
    scheduler: a.scheduler ?? 'wlc',
    flags: normalizeFlags(a.flags),
    ...(a.timeout !== undefined ? { timeoutSeconds: a.timeout } : {}),
    ...(a.netmask !== undefined ? { netmask: a.netmask } : {}),
  };
}

function toRealServer(a: Args): RealServer {
  if (!a.real) throw new Error('needs -r address:port');
  return { ...a.real, weight: a.weight ?? 1, forward: a.forward ?? 'Route' };
}

const VERBS: Readonly<Record<string, IpvsOperation['verb']>> = {
  '-A': 'addService',
  '--add-service': 'addService',
  '-E': 'editService',
  '--edit-service': 'editService',
  '-D': 'deleteService',
  '--delete-service': 'deleteService',
  '-a': 'addReal',
  '--add-server': 'addReal',
  '-e': 'editReal',
  '--edit-server': 'editReal',
  '-d': 'deleteReal',
  '--delete-server': 'deleteReal',
  '-C': 'clear',
  '--clear': 'clear',
};

/** One ipvsadm command line (without the leading `ipvsadm`). */
export function parseCommand(line: string): IpvsOperation {
  const [cmd, ...rest] = line.trim().split(/\s+/);
  const verb = VERBS[cmd ?? ''];
  if (!verb) throw new Error(`unknown command ${String(cmd)}`);
  if (verb === 'clear') {
    if (rest.length > 0) throw new Error('-C takes no options');
    return { verb };
  }
  const a = parseArgs(rest);
  if (!a.id) throw new Error('needs a -t, -u or --sctp-service address:port');
  const id = a.id;
  switch (verb) {
    case 'addService':
    case 'editService':
      return { verb, virtualServer: toVirtualServer(a, id) };
    case 'deleteService':
      return { verb, id };
    case 'addReal':
    case 'editReal':
      return { verb, id, realServer: toRealServer(a) };
    case 'deleteReal':
      if (!a.real) throw new Error('needs -r address:port');
      return { verb, id, realServer: a.real };
  }
}

function eachLine(text: string, fn: (line: string) => void): void {
  text.split('\n').forEach((raw, idx) => {
    const line = raw.trimEnd();
    if (line.trim() === '' || line.trimStart().startsWith('#')) return;
    try {
      fn(line);
    } catch (err) {
      if (err instanceof SvcnetError) throw err;
      throw new SvcnetError('INVALID_INPUT', `line ${String(idx + 1)}: ${(err as Error).message}`);
    }
  });
}

/** An `ipvsadm -R` script or `ipvsadm -S -n` output → commands. */
export function parseRestore(text: string): IpvsOperation[] {
  const ops: IpvsOperation[] = [];
  eachLine(text, (line) => ops.push(parseCommand(line)));
  return ops;
}

/** `ipvsadm -S -n` output → services (only -A and -a lines; real servers sorted). */
export function parseSave(text: string): IpvsService[] {
  const byKey = new Map<string, { virtualServer: VirtualServer; realServers: RealServer[] }>();
  eachLine(text, (line) => {
    const op = parseCommand(line);
    if (op.verb === 'addService')
      byKey.set(virtualServerKey(op.virtualServer), {
        virtualServer: op.virtualServer,
        realServers: [],
      });
    else if (op.verb === 'addReal') {
      const s = byKey.get(virtualServerKey(op.id));
      if (!s) throw new Error(`-a for ${virtualServerKey(op.id)} before its -A line`);
      s.realServers.push(op.realServer);
    } else throw new Error(`save output holds only -A and -a lines`);
  });
  return [...makeIpvsState([...byKey.values()]).values()];
}

export interface IpvsListing {
  readonly version?: string;
  readonly size?: number;
  /** In listing order, real servers as listed (with connection counters). */
  readonly services: readonly IpvsService[];
}

const HEADER = /^IP Virtual Server version (\S+) \(size=(\d+)\)$/;
const SERVICE_LINE =
  /^(TCP|UDP|SCTP) +(\S+) (\S+)(?: \(([^)]*)\))?(?: persistent (\d+))?(?: mask (\S+))?( ops)?$/;
const DEST_LINE = /^ {2}-> (\S+) +(Masq|Local|Tunnel|Route) +(\d+) +(\d+) +(\d+) *$/;

/** `ipvsadm -L -n` output → listing. */
export function parseList(text: string): IpvsListing {
  let version: string | undefined;
  let size: number | undefined;
  const services: { virtualServer: VirtualServer; realServers: RealServer[] }[] = [];
  eachLine(text, (line) => {
    const h = HEADER.exec(line);
    if (h) {
      version = h[1];
      size = Number(h[2]);
      return;
    }
    if (line.startsWith('Prot LocalAddress') || line.startsWith('  -> RemoteAddress')) return;
    const s = SERVICE_LINE.exec(line);
    if (s) {
      services.push({ virtualServer: listedService(s), realServers: [] });
      return;
    }
    const d = DEST_LINE.exec(line);
    if (!d) throw new Error(`not an ipvsadm -L -n line: ${JSON.stringify(line)}`);
    const current = services[services.length - 1];
    if (!current) throw new Error('destination line before any service line');
    current.realServers.push({
      ...splitHostPort(d[1] ?? ''),
      forward: d[2] as IpvsForward,
      weight: Number(d[3]),
      activeConn: Number(d[4]),
      inactConn: Number(d[5]),
    });
  });
  return { ...(version !== undefined && size !== undefined ? { version, size } : {}), services };
}

function listedService(m: RegExpExecArray): VirtualServer {
  const protocol = toIpvsProtocol(m[1] ?? '') ?? 'tcp';
  const flags: VirtualServerFlag[] = m[4] ? parseSchedFlags(m[4]) : [];
  if (m[5] !== undefined) flags.push('persistent');
  if (m[7]) flags.push('onePacket');
  return {
    protocol,
    ...splitHostPort(m[2] ?? ''),
    scheduler: m[3] ?? '',
    flags: normalizeFlags(flags),
    ...(m[5] !== undefined ? { timeoutSeconds: Number(m[5]) } : {}),
    ...(m[6] !== undefined ? { netmask: parseNetmask(m[6]) } : {}),
  };
}
