// Parses `bridge fdb show` text into forwarding-database entries: the MAC, the device, and
// for a VXLAN device the remote VTEP (`dst`, plus `port`, `vni`, `via` when set) —
// `aa:bb:cc:dd:ee:ff dev flannel.1 dst 172.18.0.4 self permanent`; bridge ports carry
// `master cni0` and `vlan N`. A bad MAC or address, a missing value or an unknown word is an
// INVALID_INPUT error naming the line. Pure.

import { MAC_RE, Words, type DumpLine } from './dump-line.js';

export interface FdbEntry {
  readonly line: number;
  /** Lower case. `00:00:00:00:00:00` on a VXLAN device: the default (flood) destination. */
  readonly mac: string;
  readonly dev?: string;
  /** The remote VTEP address of a VXLAN device's entry, canonical. */
  readonly dst?: string;
  readonly port?: number;
  readonly vni?: number;
  readonly master?: string;
  readonly vlan?: number;
  /** self, permanent, static, … as printed. */
  readonly flags: readonly string[];
}

const FLAGS = new Set([
  'self',
  'permanent',
  'static',
  'dynamic',
  'router',
  'use',
  'extern_learn',
  'sticky',
  'offload',
  'local',
  'locked',
]);

function entryOf(line: DumpLine): FdbEntry {
  const w = new Words(line, 'bridge fdb');
  const mac = w.next();
  if (!MAC_RE.test(mac)) throw w.fail(`not a MAC address: ${JSON.stringify(mac)}`);
  const e: {
    -readonly [K in keyof FdbEntry]: FdbEntry[K];
  } = { line: line.no, mac: mac.toLowerCase(), flags: [] };
  const flags: string[] = [];
  while (!w.done) {
    const word = w.next();
    if (word === 'dev') e.dev = w.valueOf('dev');
    else if (word === 'dst') e.dst = w.addressOf('dst');
    else if (word === 'port') e.port = w.numberOf('port');
    else if (word === 'vni') e.vni = w.numberOf('vni');
    else if (word === 'vlan') e.vlan = w.numberOf('vlan');
    else if (word === 'master') e.master = w.valueOf('master');
    else if (word === 'via' || word === 'src_vni' || word === 'nhid') w.valueOf(word);
    else if (FLAGS.has(word)) flags.push(word);
    else throw w.fail(`unknown word ${JSON.stringify(word)}`);
  }
  return { ...e, flags };
}

/** FDB entries of `bridge fdb show` lines; blank lines are skipped. */
export function parseFdb(lines: readonly DumpLine[]): FdbEntry[] {
  return lines.filter((l) => l.text.trim() !== '').map(entryOf);
}
