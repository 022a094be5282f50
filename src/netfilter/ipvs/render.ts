// ipvsadm's two text forms for the model. `renderSave` is `ipvsadm -S -n` (also an
// `ipvsadm -R` script): `-A -t 10.0.0.1:80 -s rr [-p 10800] [-M mask] [-o] [-b flags]` then
// `-a -t 10.0.0.1:80 -r 10.1.0.5:80 -m -w 1` per real server. `renderList` is `ipvsadm -L -n`:
// the version header, the two title lines, `TCP  10.0.0.1:80 rr persistent 10800` and
// `  -> 10.1.0.5:80                  Masq    1      0          0         ` (printf
// `%-28s %-7s %-6d %-10u %-10u`, trailing spaces kept). Both list services in ipvsadm's
// sorted order (family, protocol number, address, port; destinations by address, port),
// computed without ipvsadm's signed-overflow quirk. Pure.

import { parseIP } from '../../util/ip.js';
import {
  joinHostPort,
  PROTOCOL_NUMBERS,
  type IpvsForward,
  type IpvsOperation,
  type IpvsProtocol,
  type IpvsService,
  type IpvsState,
  type RealServer,
  type VirtualServer,
  type VirtualServerFlag,
  type VirtualServerId,
} from './model.js';

export const LIST_TITLE_LINES = [
  'Prot LocalAddress:Port Scheduler Flags',
  '  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn',
] as const;

export const SERVICE_SWITCH: Readonly<Record<IpvsProtocol, string>> = {
  tcp: '-t',
  udp: '-u',
  sctp: '--sctp-service',
};

export const FORWARD_SWITCH: Readonly<Record<IpvsForward, string>> = {
  Masq: '-m',
  Tunnel: '-i',
  Route: '-g',
  Local: '-g',
};

const SCHED_FLAG_ORDER: readonly VirtualServerFlag[] = ['schedFlag1', 'schedFlag2', 'schedFlag3'];

/** ipvsadm's names of the scheduler flags: sh/mh fallback and port, else flag-1..3. */
export function schedFlagNames(scheduler: string, flags: readonly VirtualServerFlag[]): string[] {
  const names: string[] = [];
  SCHED_FLAG_ORDER.forEach((f, i) => {
    if (!flags.includes(f)) return;
    if ((scheduler === 'sh' || scheduler === 'mh') && i < 2) {
      names.push(`${scheduler}-${i === 0 ? 'fallback' : 'port'}`);
    } else {
      names.push(`flag-${String(i + 1)}`);
    }
  });
  return names;
}

function isFullMask(vs: VirtualServer): boolean {
  return vs.netmask === undefined || vs.netmask === (vs.address.includes(':') ? 128 : 32);
}

/** An IPv4 prefix length as a dotted mask (`24` → `255.255.255.0`). */
export function prefixToDotted(prefix: number): string {
  const bits = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return [24, 16, 8, 0].map((s) => String((bits >>> s) & 255)).join('.');
}

function maskText(vs: VirtualServer): string {
  return vs.address.includes(':') ? String(vs.netmask) : prefixToDotted(vs.netmask ?? 32);
}

export function serviceSpec(id: VirtualServerId): string {
  return `${SERVICE_SWITCH[id.protocol]} ${joinHostPort(id.address, id.port)}`;
}

/** `-A -t 10.0.0.1:80 -s rr -p 10800` (verb `-E` for an edit). */
export function renderSaveService(vs: VirtualServer, verb = '-A'): string {
  let line = `${verb} ${serviceSpec(vs)} -s ${vs.scheduler}`;
  if (vs.flags.includes('persistent')) {
    line += ` -p ${String(vs.timeoutSeconds ?? 300)}`;
    if (!isFullMask(vs)) line += ` -M ${maskText(vs)}`;
  }
  if (vs.flags.includes('onePacket')) line += ' -o';
  const sched = schedFlagNames(vs.scheduler, vs.flags);
  if (sched.length > 0) line += ` -b ${sched.join(',')}`;
  return line;
}

/** `-a -t 10.0.0.1:80 -r 10.1.0.5:80 -m -w 1` (verb `-e` for an edit). */
export function renderSaveReal(id: VirtualServerId, rs: RealServer, verb = '-a'): string {
  const real = joinHostPort(rs.address, rs.port);
  return `${verb} ${serviceSpec(id)} -r ${real} ${FORWARD_SWITCH[rs.forward]} -w ${String(rs.weight)}`;
}

export function renderOperation(op: IpvsOperation): string {
  switch (op.verb) {
    case 'addService':
      return renderSaveService(op.virtualServer, '-A');
    case 'editService':
      return renderSaveService(op.virtualServer, '-E');
    case 'deleteService':
      return `-D ${serviceSpec(op.id)}`;
    case 'addReal':
      return renderSaveReal(op.id, op.realServer, '-a');
    case 'editReal':
      return renderSaveReal(op.id, op.realServer, '-e');
    case 'deleteReal':
      return `-d ${serviceSpec(op.id)} -r ${joinHostPort(op.realServer.address, op.realServer.port)}`;
    case 'clear':
      return '-C';
  }
}

/** An `ipvsadm -R` script, one command per line. */
export function renderRestore(ops: readonly IpvsOperation[]): string {
  return ops.map((op) => `${renderOperation(op)}\n`).join('');
}

function addressOrder(address: string): [number, bigint] {
  const ip = parseIP(address);
  return ip ? [ip.family === 'IPv4' ? 4 : 6, ip.value] : [9, 0n];
}

function cmpAddressPort(
  a: { address: string; port: number },
  b: { address: string; port: number },
): number {
  const [fa, va] = addressOrder(a.address);
  const [fb, vb] = addressOrder(b.address);
  if (fa !== fb) return fa - fb;
  if (va !== vb) return va < vb ? -1 : 1;
  return a.port - b.port;
}

/** ipvsadm's service order: family, protocol number, address, port. */
export function compareVirtualServers(a: VirtualServerId, b: VirtualServerId): number {
  const fa = a.address.includes(':') ? 1 : 0;
  const fb = b.address.includes(':') ? 1 : 0;
  if (fa !== fb) return fa - fb;
  const p = PROTOCOL_NUMBERS[a.protocol] - PROTOCOL_NUMBERS[b.protocol];
  return p !== 0 ? p : cmpAddressPort(a, b);
}

/** Services in listing order, each with its destinations in listing order. */
export function listingOrder(state: IpvsState | readonly IpvsService[]): IpvsService[] {
  const services = Array.isArray(state)
    ? [...(state as IpvsService[])]
    : [...(state as IpvsState).values()];
  return services
    .sort((a, b) => compareVirtualServers(a.virtualServer, b.virtualServer))
    .map((s) => ({
      virtualServer: s.virtualServer,
      realServers: [...s.realServers].sort(cmpAddressPort),
    }));
}

/** `ipvsadm -S -n`. */
export function renderSave(state: IpvsState | readonly IpvsService[]): string {
  const lines: string[] = [];
  for (const s of listingOrder(state)) {
    lines.push(renderSaveService(s.virtualServer));
    for (const rs of s.realServers) lines.push(renderSaveReal(s.virtualServer, rs));
  }
  return lines.map((l) => `${l}\n`).join('');
}

/** `TCP  10.0.0.1:80 rr persistent 10800` (IPv4 svc text cut to 33 characters). */
export function renderListService(vs: VirtualServer): string {
  let svc = `${vs.protocol.toUpperCase().padEnd(4)} ${joinHostPort(vs.address, vs.port)}`;
  if (!vs.address.includes(':')) svc = svc.slice(0, 33);
  let line = `${svc} ${vs.scheduler}`;
  const sched = schedFlagNames(vs.scheduler, vs.flags);
  if (sched.length > 0) line += ` (${sched.join(',')})`;
  if (vs.flags.includes('persistent')) {
    line += ` persistent ${String(vs.timeoutSeconds ?? 300)}`;
    if (!isFullMask(vs)) line += ` mask ${maskText(vs)}`;
  }
  if (vs.flags.includes('onePacket')) line += ' ops';
  return line;
}

/** `  -> 10.1.0.5:80                  Masq    1      0          0         `. */
export function renderListReal(rs: RealServer): string {
  let addr = joinHostPort(rs.address, rs.port);
  if (!rs.address.includes(':')) addr = addr.slice(0, 28);
  const cols = [
    addr.padEnd(28),
    rs.forward.padEnd(7),
    String(rs.weight).padEnd(6),
    String(rs.activeConn ?? 0).padEnd(10),
    String(rs.inactConn ?? 0).padEnd(10),
  ];
  return `  -> ${cols.join(' ')}`;
}

export interface ListOptions {
  /** Header `IP Virtual Server version 1.2.1 (size=4096)`; omit with `header: false`. */
  readonly version?: string;
  readonly size?: number;
  readonly header?: boolean;
}

/** `ipvsadm -L -n`. */
export function renderList(
  state: IpvsState | readonly IpvsService[],
  options: ListOptions = {},
): string {
  const lines: string[] = [];
  if (options.header ?? true) {
    lines.push(
      `IP Virtual Server version ${options.version ?? '1.2.1'} (size=${String(options.size ?? 4096)})`,
    );
  }
  lines.push(...LIST_TITLE_LINES);
  for (const s of listingOrder(state)) {
    lines.push(renderListService(s.virtualServer));
    for (const rs of s.realServers) lines.push(renderListReal(rs));
  }
  return lines.map((l) => `${l}\n`).join('');
}
