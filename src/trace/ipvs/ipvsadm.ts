// The IPVS state the tracer follows: virtual servers (protocol, address:port, scheduler,
// persistence timeout) and their real servers (address:port, forwarding method, weight), read
// from `ipvsadm -S -n` text (`-A -t 10.102.97.154:80 -s rr [-p 10800]`,
// `-a -t 10.102.97.154:80 -r 192.168.76.141:80 -m -w 1`; also the long option names). A
// minimal reader kept here until the typed model of netfilter/ipvs lands; it throws
// INVALID_INPUT naming the line. fwmark services (-f) are kept aside: the tracer reports them.
// Pure.

import { SvcnetError } from '../../errors.js';
import { splitArgs } from '../../netfilter/iptables/parse.js';
import { parseIP, type ParsedIP } from '../../util/ip.js';
import { formatHostPort, type Protocol } from '../packet.js';

export interface RealServer {
  readonly ip: ParsedIP;
  readonly port: number;
  /** ipvsadm's forwarding names: Masq (-m), Route (-g), Tunnel (-i). */
  readonly forward: 'Masq' | 'Route' | 'Tunnel';
  readonly weight: number;
}

export interface VirtualServer {
  readonly protocol: Protocol;
  readonly ip: ParsedIP;
  readonly port: number;
  readonly scheduler: string;
  /** `-p TIMEOUT` (persistence: kube-proxy's ClientIP affinity), seconds. */
  readonly persistence: number | undefined;
  readonly realServers: RealServer[];
}

export interface IpvsTable {
  readonly virtualServers: VirtualServer[];
  /** Lines the tracer does not follow (fwmark services), as written. */
  readonly ignored: string[];
}

const SERVICE_FLAGS: Readonly<Record<string, Protocol>> = {
  '-t': 'tcp',
  '--tcp-service': 'tcp',
  '-u': 'udp',
  '--udp-service': 'udp',
  '--sctp-service': 'sctp',
};

const FORWARD_FLAGS: Readonly<Record<string, RealServer['forward']>> = {
  '-m': 'Masq',
  '--masquerading': 'Masq',
  '-g': 'Route',
  '--gatewaying': 'Route',
  '-i': 'Tunnel',
  '--ipip': 'Tunnel',
};

/** `a.b.c.d:port` or `[v6]:port`. */
function parseAddrPort(text: string): { ip: ParsedIP; port: number } | undefined {
  const m = /^\[([^\]]+)\]:(\d{1,5})$/.exec(text) ?? /^([^:]+):(\d{1,5})$/.exec(text);
  const ip = m ? parseIP(m[1] ?? '') : undefined;
  const port = Number(m?.[2]);
  return ip && port <= 65535 ? { ip, port } : undefined;
}

export function vsKey(protocol: string, ip: ParsedIP, port: number): string {
  return `${protocol} ${formatHostPort(ip, port)}`;
}

/** The option values of one line: flag -> value (flags without value map to ''). */
function optionsOf(words: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 1; i < words.length; i++) {
    const w = words[i] ?? '';
    const next = words[i + 1];
    if (next !== undefined && !next.startsWith('-')) {
      out.set(w, next);
      i++;
    } else out.set(w, '');
  }
  return out;
}

/** Reads `ipvsadm -S -n` text. */
export function parseIpvsadmSave(text: string, firstLine = 1): IpvsTable {
  const byKey = new Map<string, VirtualServer>();
  const ignored: string[] = [];
  const bad = (n: number, msg: string): never => {
    throw new SvcnetError('INVALID_INPUT', `line ${n}: ipvsadm -S: ${msg}`);
  };
  text.split('\n').forEach((raw, i) => {
    const n = firstLine + i;
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const words = splitArgs(line, n);
    const cmd = words[0];
    const opts = optionsOf(words);
    if (opts.has('-f') || opts.has('--fwmark-service')) {
      ignored.push(line);
      return;
    }
    const svcFlag = [...opts.keys()].find((k) => Object.hasOwn(SERVICE_FLAGS, k));
    const protocol = svcFlag === undefined ? undefined : SERVICE_FLAGS[svcFlag];
    const vs = parseAddrPort(svcFlag === undefined ? '' : (opts.get(svcFlag) ?? ''));
    if (!protocol || !vs) return bad(n, `expected -t|-u|--sctp-service ADDRESS:PORT in ${line}`);
    const key = vsKey(protocol, vs.ip, vs.port);
    if (cmd === '-A' || cmd === '--add-service') {
      const p = opts.get('-p') ?? opts.get('--persistent');
      byKey.set(key, {
        protocol,
        ...vs,
        scheduler: opts.get('-s') ?? opts.get('--scheduler') ?? 'wlc',
        persistence: p === undefined ? undefined : p === '' ? 300 : Number(p),
        realServers: [],
      });
      return;
    }
    if (cmd !== '-a' && cmd !== '--add-server') return bad(n, `expected -A or -a, got ${line}`);
    const owner = byKey.get(key) ?? bad(n, `real server of ${key}, which no -A line defined`);
    const rs =
      parseAddrPort(opts.get('-r') ?? opts.get('--real-server') ?? '') ??
      bad(n, `expected -r ADDRESS:PORT in ${line}`);
    const fwd = [...opts.keys()].find((k) => Object.hasOwn(FORWARD_FLAGS, k));
    const weight = Number(opts.get('-w') ?? opts.get('--weight') ?? '1');
    if (!Number.isInteger(weight) || weight < 0) bad(n, `bad weight in ${line}`);
    owner.realServers.push({
      ...rs,
      forward: fwd === undefined ? 'Route' : (FORWARD_FLAGS[fwd] ?? 'Route'),
      weight,
    });
  });
  return { virtualServers: [...byKey.values()], ignored };
}
