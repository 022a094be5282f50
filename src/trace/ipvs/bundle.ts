// The rules bundle `svcnet trace --rules` reads for IPVS mode: `ipvsadm -S -n`, `ipset save`
// and `iptables-save` text in one file (the three sections of `svcnet render --mode ipvs`, or
// dumps taken from a node and concatenated, in any order). Each line is given to the section
// its syntax belongs to — ipvsadm `-A|-a` with a service flag (-t, -u, --sctp-service, -f),
// ipset `create`/`add`, everything else iptables — keeping line numbers, so errors name the
// line of the whole file. Pure.

import type { IptablesDocument } from '../../netfilter/iptables/model.js';
import { parseDocument } from '../../netfilter/iptables/parse.js';
import { parseIpsetSave, type IpsetState } from './ipset.js';
import { parseIpvsadmSave, vsKey, type IpvsTable } from './ipvsadm.js';

/**
 * Service names from ipset entry comments: an `ip,proto:port` entry with a comment names the
 * virtual server at that address and port (kube-proxy writes none; hand-made dumps may).
 */
export function serviceNamesOf(ipsets: IpsetState): Map<string, string> {
  const names = new Map<string, string>();
  for (const set of ipsets.values())
    for (const e of set.entries) {
      const [ip, port] = e.dims;
      if (e.comment === undefined || ip?.kind !== 'ip' || port?.kind !== 'port') continue;
      names.set(vsKey(port.protocol, ip.ip, port.port), e.comment);
    }
  return names;
}

export interface IpvsBundle {
  readonly iptables: IptablesDocument;
  readonly ipsets: IpsetState;
  readonly ipvs: IpvsTable;
}

type Section = 'ipvsadm' | 'ipset' | 'iptables';

const IPVSADM_LINE =
  /^(-A|-a|--add-service|--add-server)\s+(-t|-u|-f|--tcp-service|--udp-service|--sctp-service|--fwmark-service)\s/;

function sectionOf(line: string): Section | undefined {
  const t = line.trim();
  if (t === '' || t.startsWith('#')) return undefined;
  if (IPVSADM_LINE.test(t)) return 'ipvsadm';
  if (/^(create|add)\s/.test(t)) return 'ipset';
  return 'iptables';
}

/** Whether `text` holds ipvsadm or ipset lines (what `--rules-format auto` looks for). */
export function looksLikeIpvsBundle(text: string): boolean {
  return text.split('\n').some((l) => {
    const s = sectionOf(l);
    return s === 'ipvsadm' || s === 'ipset';
  });
}

/** Splits and parses a bundle; throws INVALID_INPUT naming the line of the whole file. */
export function parseIpvsBundle(text: string): IpvsBundle {
  const lines = text.split('\n');
  const only = (want: Section): string =>
    lines.map((l) => (sectionOf(l) === want ? l : '')).join('\n');
  return {
    iptables: parseDocument(only('iptables')),
    ipsets: parseIpsetSave(only('ipset')),
    ipvs: parseIpvsadmSave(only('ipvsadm')),
  };
}
