// Parses `ip neigh` / `ip -6 neigh` text into neighbour entries: the address, the device,
// the link-layer address (absent while INCOMPLETE or FAILED) and the NUD states
// (`10.244.2.0 dev flannel.1 lladdr aa:bb:cc:dd:ee:ff PERMANENT`). A bad address or MAC, a
// missing value or an unknown word is an INVALID_INPUT error naming the line. Pure.

import { formatIP } from '../../util/ip.js';
import { MAC_RE, Words, addressOrFail, type DumpLine } from './dump-line.js';

export interface Neighbour {
  readonly line: number;
  /** The address in canonical text. */
  readonly ip: string;
  readonly dev?: string;
  readonly lladdr?: string;
  /** NUD states as printed: PERMANENT, REACHABLE, STALE, FAILED, … */
  readonly states: readonly string[];
}

const STATES = new Set([
  'PERMANENT',
  'NOARP',
  'REACHABLE',
  'STALE',
  'NONE',
  'INCOMPLETE',
  'DELAY',
  'PROBE',
  'FAILED',
]);

const FLAGS = new Set(['router', 'proxy', 'extern_learn', 'offload', 'managed']);

function neighbourOf(line: DumpLine): Neighbour {
  const w = new Words(line, 'ip neigh');
  const ip = formatIP(addressOrFail(w, w.next(), 'address'));
  let dev: string | undefined;
  let lladdr: string | undefined;
  const states: string[] = [];
  while (!w.done) {
    const word = w.next();
    if (word === 'dev') dev = w.valueOf('dev');
    else if (word === 'lladdr') {
      const mac = w.valueOf('lladdr');
      if (!MAC_RE.test(mac)) throw w.fail(`lladdr: not a MAC address: ${JSON.stringify(mac)}`);
      lladdr = mac.toLowerCase();
    } else if (STATES.has(word)) states.push(word);
    else if (word === 'used' || word === 'probes' || word === 'proto') w.valueOf(word);
    else if (!FLAGS.has(word)) throw w.fail(`unknown word ${JSON.stringify(word)}`);
  }
  return {
    line: line.no,
    ip,
    ...(dev !== undefined ? { dev } : {}),
    ...(lladdr !== undefined ? { lladdr } : {}),
    states,
  };
}

/** Neighbour entries of `ip neigh` lines; blank lines are skipped. */
export function parseNeighbours(lines: readonly DumpLine[]): Neighbour[] {
  return lines.filter((l) => l.text.trim() !== '').map(neighbourOf);
}
