// The IPVS state the tracer follows: virtual servers (protocol, address:port, scheduler,
// persistence timeout) and their real servers (address:port, forwarding method, weight), read
// from `ipvsadm -S -n` text (`-A -t 10.102.97.154:80 -s rr [-p 10800]`,
// `-a -t 10.102.97.154:80 -r 192.168.76.141:80 -m -w 1`) by netfilter/ipvs's parser and
// held with parsed addresses for the walk. It throws INVALID_INPUT naming the line. fwmark
// services (-f) are kept aside: the tracer does not follow them. Pure.

import { SvcnetError } from '../../errors.js';
import type { IpvsForward, IpvsService } from '../../netfilter/ipvs/model.js';
import { parseSave } from '../../netfilter/ipvs/parse.js';
import { parseIP, type ParsedIP } from '../../util/ip.js';
import { formatHostPort, type Protocol } from '../packet.js';

export interface RealServer {
  readonly ip: ParsedIP;
  readonly port: number;
  /** ipvsadm's forwarding names: Masq (-m), Route (-g), Tunnel (-i), Local. */
  readonly forward: IpvsForward;
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

export function vsKey(protocol: string, ip: ParsedIP, port: number): string {
  return `${protocol} ${formatHostPort(ip, port)}`;
}

const FWMARK = /^\s*(-A|-a|--add-service|--add-server)\s+(-f|--fwmark-service)\s/;

function ipOf(address: string, what: string): ParsedIP {
  const ip = parseIP(address);
  if (!ip)
    throw new SvcnetError('INVALID_INPUT', `ipvsadm -S: ${what} ${address} is not an address`);
  return ip;
}

/**
 * Reads `ipvsadm -S -n` text with netfilter/ipvs's parser (errors name the line); fwmark
 * services, which it does not model, are set aside (their line numbers are kept).
 */
export function parseIpvsadmSave(text: string): IpvsTable {
  const ignored: string[] = [];
  const kept = text
    .split('\n')
    .map((l) => {
      if (!FWMARK.test(l)) return l;
      ignored.push(l.trim());
      return '';
    })
    .join('\n');
  return { virtualServers: virtualServersOf(parseSave(kept)), ignored };
}

/** netfilter/ipvs's services (parsed or planned) with parsed addresses. */
export function virtualServersOf(services: readonly IpvsService[]): VirtualServer[] {
  return services.map((svc): VirtualServer => {
    const v = svc.virtualServer;
    return {
      protocol: v.protocol,
      ip: ipOf(v.address, 'virtual server'),
      port: v.port,
      scheduler: v.scheduler,
      persistence: v.flags.includes('persistent') ? (v.timeoutSeconds ?? 300) : undefined,
      realServers: svc.realServers.map((r) => ({
        ip: ipOf(r.address, 'real server'),
        port: r.port,
        forward: r.forward,
        weight: r.weight,
      })),
    };
  });
}
