// Parses `ip -d link show` (or plain `ip link show`) text into links: index, name, flags, MTU,
// master, MAC and — with `-d` — the kind (the first word of a detail line naming one: vxlan,
// bridge, veth, …) and a VXLAN device's `id`, `local`, `remote`/`group`, underlying `dev`,
// `dstport` and learning. Only what the tracer's hop needs is kept; other detail words are
// passed over. A line that is neither a `N: name: <FLAGS> …` header nor indented detail, a
// bad index or a bad VXLAN value is an INVALID_INPUT error naming the line. Pure.

import { MAC_RE, Words, badLine, type DumpLine } from './dump-line.js';

export interface VxlanInfo {
  /** The VNI; absent for a collect-metadata (`external`) device. */
  readonly id?: number;
  readonly local?: string;
  readonly remote?: string;
  readonly group?: string;
  readonly dev?: string;
  /** The UDP destination port (the kernel's default 8472 when `ip` prints none). */
  readonly dstport: number;
  readonly learning: boolean;
}

export interface Link {
  readonly line: number;
  readonly index: number;
  readonly name: string;
  readonly flags: readonly string[];
  readonly mtu?: number;
  readonly master?: string;
  readonly mac?: string;
  readonly kind?: string;
  readonly vxlan?: VxlanInfo;
}

/** The link kinds `ip -d` names on a detail line of their own. */
const KINDS = new Set([
  'vxlan',
  'bridge',
  'veth',
  'dummy',
  'vlan',
  'macvlan',
  'ipvlan',
  'geneve',
  'wireguard',
  'ipip',
  'sit',
  'gre',
  'gretap',
  'tun',
  'vrf',
  'bond',
  'ip6tnl',
  'nlmon',
]);

/** Linux's VXLAN default port when none is configured (IANA's is 4789). */
const KERNEL_VXLAN_PORT = 8472;

const HEADER = /^(\d+):\s+([^\s:@]+)(?:@(\S*?))?:\s+<([^>]*)>(.*)$/;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function vxlanOf(line: DumpLine): VxlanInfo {
  const w = new Words(line, 'ip -d link');
  w.next(); // `vxlan`
  const v: Mutable<VxlanInfo> = { dstport: KERNEL_VXLAN_PORT, learning: true };
  while (!w.done) {
    const word = w.next();
    if (word === 'id') v.id = w.numberOf('id');
    else if (word === 'local') v.local = w.addressOf('local');
    else if (word === 'remote') v.remote = w.addressOf('remote');
    else if (word === 'group') v.group = w.addressOf('group');
    else if (word === 'dev') v.dev = w.valueOf('dev');
    else if (word === 'dstport') v.dstport = w.numberOf('dstport');
    else if (word === 'nolearning') v.learning = false;
    else if (word === 'learning') v.learning = true;
    else if (word === 'srcport') {
      w.numberOf('srcport');
      w.numberOf('srcport');
    }
  }
  if (v.id !== undefined && v.id > 0xffffff)
    throw w.fail(`id: a VNI is 0-16777215, got ${String(v.id)}`);
  if (v.dstport > 65535) throw w.fail(`dstport: must be 0-65535, got ${String(v.dstport)}`);
  return v;
}

function headerOf(line: DumpLine, m: RegExpExecArray): Mutable<Link> {
  const [, index = '', name = '', , flags = '', rest = ''] = m;
  const l: Mutable<Link> = {
    line: line.no,
    index: Number(index),
    name,
    flags: flags === '' ? [] : flags.split(','),
  };
  const words = rest.trim().split(/\s+/);
  for (let i = 0; i < words.length - 1; i++) {
    const value = words[i + 1] ?? '';
    if (words[i] === 'mtu') {
      if (!/^\d+$/.test(value)) throw badLine(line, 'ip link', `mtu: not a number: ${value}`);
      l.mtu = Number(value);
    } else if (words[i] === 'master') l.master = value;
  }
  return l;
}

/** Links of `ip [-d] link show` lines; blank lines are skipped. */
export function parseLinks(lines: readonly DumpLine[]): Link[] {
  const out: Mutable<Link>[] = [];
  for (const line of lines) {
    if (line.text.trim() === '') continue;
    const m = HEADER.exec(line.text);
    if (m) {
      out.push(headerOf(line, m));
      continue;
    }
    const cur = out.at(-1);
    if (!/^\s/.test(line.text) || cur === undefined)
      throw badLine(line, 'ip link', 'expected a "N: NAME: <FLAGS> …" line or an indented detail');
    const first = line.text.trim().split(/\s+/)[0] ?? '';
    if (first.startsWith('link/')) {
      const mac = line.text.trim().split(/\s+/)[1];
      if (mac !== undefined && MAC_RE.test(mac)) cur.mac = mac.toLowerCase();
    } else if (cur.kind === undefined && KINDS.has(first)) {
      cur.kind = first;
      if (first === 'vxlan') cur.vxlan = vxlanOf(line);
    }
  }
  return out;
}
