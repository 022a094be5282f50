// Parses iptables-save output and iptables-restore input into the document model: `*table`,
// `:CHAIN POLICY [p:b]`, `[p:b] -A CHAIN ...` (counters from `iptables-save -c`), `-I`, `-F`,
// `-X`, `COMMIT`, comments and blank lines. Arguments are split as iptables-restore splits
// them (double quotes group, backslash escapes a quote or backslash). Pure; throws
// SvcnetError INVALID_INPUT naming the line on malformed input.

import { SvcnetError } from '../../errors.js';
import type {
  ChainDecl,
  Counters,
  IptablesDocument,
  IptablesTableName,
  Rule,
  TableDoc,
} from './model.js';
import { isTableName } from './model.js';

/** Splits a rule line into arguments the way iptables-restore does. */
export function splitArgs(text: string, lineNo = 0): string[] {
  const out: string[] = [];
  let cur = '';
  let inToken = false;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] ?? '';
    if (quoted) {
      if (ch === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\')) {
        cur += text[i + 1] ?? '';
        i++;
      } else if (ch === '"') quoted = false;
      else cur += ch;
      continue;
    }
    if (ch === '"') {
      quoted = true;
      inToken = true;
    } else if (ch === ' ' || ch === '\t') {
      if (inToken) out.push(cur);
      cur = '';
      inToken = false;
    } else {
      cur += ch;
      inToken = true;
    }
  }
  if (quoted) throw new SvcnetError('INVALID_INPUT', `line ${lineNo}: unterminated quote`);
  if (inToken) out.push(cur);
  return out;
}

const COUNTERS_RE = /^\[(\d+):(\d+)\]$/;

function parseCounters(s: string | undefined): Counters | undefined {
  const m = s === undefined ? null : COUNTERS_RE.exec(s);
  return m ? { packets: BigInt(m[1] ?? '0'), bytes: BigInt(m[2] ?? '0') } : undefined;
}

interface OpenTable {
  name: IptablesTableName;
  chains: ChainDecl[];
  rules: Rule[];
  deleteChains: string[];
  flushChains: string[];
}

/**
 * Parses a whole dump. Tables are returned in input order; rules keep their order. Tables
 * the model does not know (e.g. `*broute`) are an error, as are rules outside a table.
 */
export function parseDocument(text: string): IptablesDocument {
  const tables: TableDoc[] = [];
  let cur: OpenTable | undefined;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const line = (lines[i] ?? '').replace(/\r$/, '').trim();
    if (line === '' || line.startsWith('#')) continue;
    const fail = (msg: string): never => {
      throw new SvcnetError('INVALID_INPUT', `line ${lineNo}: ${msg}: ${line}`);
    };
    if (line.startsWith('*')) {
      if (cur) fail(`table ${cur.name} not committed before a new table`);
      const name = line.slice(1);
      if (!isTableName(name)) fail(`unknown table ${JSON.stringify(name)}`);
      cur = {
        name: name as IptablesTableName,
        chains: [],
        rules: [],
        deleteChains: [],
        flushChains: [],
      };
      continue;
    }
    if (!cur) {
      fail('line outside a table (missing *table)');
      continue;
    }
    if (line === 'COMMIT') {
      tables.push({ ...cur });
      cur = undefined;
      continue;
    }
    if (line.startsWith(':')) {
      const [name, policy, counters] = line.slice(1).split(/\s+/);
      if (name === undefined || name === '' || policy === undefined)
        fail('malformed chain declaration');
      const c = parseCounters(counters);
      cur.chains.push({ name: name ?? '', policy: policy ?? '-', ...(c ? { counters: c } : {}) });
      continue;
    }
    let rest = line;
    let counters: Counters | undefined;
    if (rest.startsWith('[')) {
      const end = rest.indexOf(']');
      counters = parseCounters(rest.slice(0, end + 1));
      if (!counters) fail('malformed counters');
      rest = rest.slice(end + 1).trim();
    }
    const args = splitArgs(rest, lineNo);
    const op = args[0];
    const chain = args[1];
    if (chain === undefined) fail('missing chain name');
    switch (op) {
      case '-A':
      case '--append':
        cur.rules.push({
          chain: chain ?? '',
          args: args.slice(2),
          line: lineNo,
          ...(counters ? { counters } : {}),
        });
        break;
      case '-I':
      case '--insert': {
        const posText = args[2];
        const hasPos = posText !== undefined && /^\d+$/.test(posText);
        cur.rules.push({
          chain: chain ?? '',
          args: args.slice(hasPos ? 3 : 2),
          line: lineNo,
          insert: hasPos ? { position: Number(posText) } : {},
          ...(counters ? { counters } : {}),
        });
        break;
      }
      case '-X':
      case '--delete-chain':
        cur.deleteChains.push(chain ?? '');
        break;
      case '-F':
      case '--flush':
        cur.flushChains.push(chain ?? '');
        break;
      default:
        fail(`unsupported command ${JSON.stringify(op)}`);
    }
  }
  if (cur) throw new SvcnetError('INVALID_INPUT', `table ${cur.name} has no COMMIT`);
  return { tables };
}
