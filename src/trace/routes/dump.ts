// A node's routing state as `svcnet trace --routes FILE` reads it: the output of `ip route`,
// `ip -6 route`, `ip neigh`, `bridge fdb show` and `ip -d link show`, either in one file
// with a marker line before each dump — the command after `#` or `$`:
//
//   # ip route
//   10.244.2.0/24 via 10.244.2.0 dev flannel.1 onlink
//   # bridge fdb show
//   aa:bb:cc:dd:ee:ff dev flannel.1 dst 172.18.0.4 self permanent
//
// — or one dump per file without markers, its kind told by its first line (`N: name: <…>` a
// link dump, a MAC an FDB dump, an address with `lladdr` or a NUD state a neighbour dump,
// anything else routes). Several states (several --routes files) merge into one. Errors are
// INVALID_INPUT naming the line of the whole file. Pure.

import { SvcnetError } from '../../errors.js';
import type { IPFamily } from '../../util/ip.js';
import { MAC_RE, numberLines, type DumpLine } from './dump-line.js';
import { parseFdb, type FdbEntry } from './parse-fdb.js';
import { parseLinks, type Link } from './parse-link.js';
import { parseNeighbours, type Neighbour } from './parse-neigh.js';
import { parseRoutes, type Route } from './parse-route.js';

export type DumpKind = 'route' | 'neigh' | 'fdb' | 'link';

export interface RoutingState {
  readonly routes: readonly Route[];
  readonly neighbours: readonly Neighbour[];
  readonly fdb: readonly FdbEntry[];
  readonly links: readonly Link[];
  /** The dumps that were given (an empty dump counts): the hop says what it lacked. */
  readonly given: ReadonlySet<DumpKind>;
}

export const EMPTY_ROUTING_STATE: RoutingState = {
  routes: [],
  neighbours: [],
  fdb: [],
  links: [],
  given: new Set(),
};

/** The commands a marker may name, as the help text lists them. */
export const DUMP_COMMANDS =
  'ip route, ip -6 route, ip neigh, ip -6 neigh, bridge fdb show, ip -d link show';

const MARKER = /^\s*[#$]\s*((?:ip|bridge)\b.*)$/;

interface Section {
  readonly kind: DumpKind;
  readonly family?: IPFamily;
  readonly lines: DumpLine[];
}

/** The dump a marker's command prints, or undefined for a command the tracer does not read. */
function kindOfCommand(cmd: string): { kind: DumpKind; family?: IPFamily } | undefined {
  const words = cmd.trim().split(/\s+/);
  const family: IPFamily | undefined = words.includes('-6')
    ? 'IPv6'
    : words.includes('-4')
      ? 'IPv4'
      : undefined;
  const f = family !== undefined ? { family } : {};
  if (words[0] === 'bridge') return words.includes('fdb') ? { kind: 'fdb' } : undefined;
  const object = words.slice(1).find((w) => !w.startsWith('-'));
  if (object === undefined) return undefined;
  if ('route'.startsWith(object) && object.length >= 1 && object !== 'rule')
    return { kind: 'route', ...f };
  if (object.startsWith('nei')) return { kind: 'neigh', ...f };
  if (object === 'link' || object === 'l') return { kind: 'link' };
  return undefined;
}

/** The kind of a dump without a marker, from its first non-blank line. */
export function detectDumpKind(lines: readonly DumpLine[]): DumpKind {
  const first = lines.find((l) => l.text.trim() !== '')?.text.trim() ?? '';
  const word = first.split(/\s+/)[0] ?? '';
  if (/^\d+:\s/.test(first)) return 'link';
  if (MAC_RE.test(word)) return 'fdb';
  if (
    /\slladdr\s/.test(first) ||
    /\s(PERMANENT|REACHABLE|STALE|FAILED|INCOMPLETE|DELAY|PROBE|NOARP|NONE)$/.test(first)
  )
    return 'neigh';
  return 'route';
}

function sectionsOf(text: string): Section[] {
  const lines = numberLines(text);
  const sections: Section[] = [];
  const loose: DumpLine[] = [];
  for (const line of lines) {
    const m = MARKER.exec(line.text);
    if (m === null) {
      const cur = sections.at(-1);
      // `#` lines that are no marker are comments.
      if (/^\s*#/.test(line.text)) continue;
      if (cur === undefined) loose.push(line);
      else cur.lines.push(line);
      continue;
    }
    const k = kindOfCommand(m[1] ?? '');
    if (k === undefined)
      throw new SvcnetError(
        'INVALID_INPUT',
        `line ${String(line.no)}: unknown dump ${JSON.stringify(m[1]?.trim())}: a marker names one of ${DUMP_COMMANDS}`,
      );
    sections.push({ ...k, lines: [] });
  }
  if (loose.some((l) => l.text.trim() !== '')) {
    if (sections.length > 0) {
      const first = loose.find((l) => l.text.trim() !== '');
      throw new SvcnetError(
        'INVALID_INPUT',
        `line ${String(first?.no ?? 1)}: text before the first marker line (# ${DUMP_COMMANDS.split(', ')[0] ?? ''}, …)`,
      );
    }
    sections.push({ kind: detectDumpKind(loose), lines: loose });
  }
  return sections;
}

/** The routing state of one file: marked sections, or one unmarked dump. */
export function parseRoutingDump(text: string): RoutingState {
  const routes: Route[] = [];
  const neighbours: Neighbour[] = [];
  const fdb: FdbEntry[] = [];
  const links: Link[] = [];
  const given = new Set<DumpKind>();
  for (const s of sectionsOf(text)) {
    given.add(s.kind);
    if (s.kind === 'route') routes.push(...parseRoutes(s.lines, s.family));
    else if (s.kind === 'neigh') neighbours.push(...parseNeighbours(s.lines));
    else if (s.kind === 'fdb') fdb.push(...parseFdb(s.lines));
    else links.push(...parseLinks(s.lines));
  }
  return { routes, neighbours, fdb, links, given };
}

/** Several files' states as one (the order of the files is kept). */
export function mergeRoutingStates(states: readonly RoutingState[]): RoutingState {
  return {
    routes: states.flatMap((s) => s.routes),
    neighbours: states.flatMap((s) => s.neighbours),
    fdb: states.flatMap((s) => s.fdb),
    links: states.flatMap((s) => s.links),
    given: new Set(states.flatMap((s) => [...s.given])),
  };
}
