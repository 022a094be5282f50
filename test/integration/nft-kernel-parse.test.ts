// The nftables parser agrees with what nft really prints. Each chosen fixture ruleset
// (kube-proxy's expectRuleset texts, plus an IPv6 twin of TestOverallNFTablesRules made by
// moving every address into fd00::/96) is loaded into the Fake, its dump (the same objects,
// definitions before references, which the fixture's own order is not) is loaded with the
// real `nft -f -` into a fresh private network namespace, and `nft list ruleset` is read back.
// parseRuleset(that dump) must deep-equal the Fake's state, handles and counters aside
// (canonicalRuleset). This pins parse.ts and rule.ts to nft's own output (nft 1.0.6 here).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { canonicalRuleset } from '../../src/netfilter/nftables/compare.js';
import { NftFake } from '../../src/netfilter/nftables/fake.js';
import type {
  MapEntry,
  NftElement,
  NftRule,
  Operand,
  Ruleset,
  Selector,
  Statement,
  TableState,
} from '../../src/netfilter/nftables/model.js';
import { parseRuleset } from '../../src/netfilter/nftables/parse.js';
import { dump } from '../../src/netfilter/nftables/render.js';
import { fixtureText, fixtureTexts } from '../../src/netfilter/nftables/testing.js';
import { formatIP, parseCIDR, parseIP } from '../../src/util/ip.js';
import { addNs, inNs, removeAll, sweepStale } from './lib/trace-netns.js';
import { missingToolsReason, skipOrFail } from './lib/prereq.js';

function missingPrerequisite(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root';
  const missing = missingToolsReason(['ip', 'nft']);
  if (missing !== undefined) return missing;
  const probe = spawnSync('ip', ['netns', 'list']);
  if (probe.status !== 0) return `ip netns unavailable: ${probe.stderr.toString().trim()}`;
  return undefined;
}

const skip = skipOrFail(missingPrerequisite());

// ---------------------------------------------------------------------------------------
// An IPv6 twin of an IPv4 ruleset: a.b.c.d -> fd00::a.b.c.d (as hex), /n -> /(96+n).

function v6Word(w: string): string {
  const ip = parseIP(w);
  if (ip?.family === 'IPv4')
    return formatIP({ family: 'IPv6', value: (0xfd00n << 112n) | ip.value });
  const cidr = w.includes('/') ? parseCIDR(w) : undefined;
  if (cidr?.family === 'IPv4') {
    const base = formatIP({ family: 'IPv6', value: (0xfd00n << 112n) | cidr.base });
    return `${base}/${String(96 + cidr.prefix)}`;
  }
  return w;
}

function v6Selector(s: Selector): Selector {
  switch (s.kind) {
    case 'payload':
      return s.base === 'ip' ? { ...s, base: 'ip6' } : s;
    case 'binop':
      return { ...s, left: v6Selector(s.left) };
    case 'concat':
      return { ...s, parts: s.parts.map(v6Selector) };
    default:
      return s;
  }
}

function v6Operand(o: Operand): Operand {
  switch (o.kind) {
    case 'value':
      return { kind: 'value', value: v6Word(o.value) };
    case 'anonset':
      return { kind: 'anonset', items: o.items.map((i) => i.map(v6Word)) };
    default:
      return o;
  }
}

function v6Entry(e: MapEntry): MapEntry {
  const value =
    e.value.kind === 'data' ? { kind: 'data' as const, parts: e.value.parts.map(v6Word) } : e.value;
  return { key: e.key.map(v6Word), value };
}

function v6Statement(s: Statement): Statement {
  switch (s.kind) {
    case 'match':
      return { ...s, left: v6Selector(s.left), right: v6Operand(s.right) };
    case 'vmap':
      return s.map.kind === 'setref'
        ? { ...s, key: v6Selector(s.key) }
        : {
            ...s,
            key: v6Selector(s.key),
            map: { kind: 'anonmap', entries: s.map.entries.map(v6Entry) },
          };
    case 'setupdate':
      return { ...s, key: v6Selector(s.key) };
    case 'nat': {
      const family = s.family === 'ip' ? 'ip6' : s.family;
      const to =
        s.to.kind === 'map'
          ? { ...s.to, entries: s.to.entries.map(v6Entry) }
          : { ...s.to, addr: v6Word(s.to.addr) };
      return { ...s, ...(family !== undefined ? { family } : {}), to };
    }
    default:
      return s;
  }
}

function v6Table(t: TableState): TableState {
  const at = { family: 'ip6' as const, table: t.table.table };
  const chains = new Map(
    [...t.chains].map(([k, c]) => [
      k,
      {
        chain: { ...c.chain, ...at },
        rules: c.rules.map((r): NftRule => ({
          ...r,
          ...at,
          statements: r.statements.map(v6Statement),
        })),
      },
    ]),
  );
  const sets = new Map(
    [...t.sets].map(([k, s]) => {
      const elements = new Map<string, NftElement>();
      for (const e of s.elements.values()) {
        const value =
          e.value?.kind === 'data'
            ? { kind: 'data' as const, parts: e.value.parts.map(v6Word) }
            : e.value;
        const key = e.key.map(v6Word);
        elements.set(key.join(' . '), {
          ...e,
          ...at,
          key,
          ...(value !== undefined ? { value } : {}),
        });
      }
      const keyType = s.set.keyType.map((x) => (x === 'ipv4_addr' ? 'ipv6_addr' : x));
      return [k, { set: { ...s.set, ...at, keyType }, elements }];
    }),
  );
  return { table: { ...t.table, ...at }, chains, sets };
}

function v6Ruleset(rs: Ruleset): Ruleset {
  const tables = new Map<string, TableState>();
  for (const t of rs.tables.values()) tables.set(`ip6 ${t.table.table}`, v6Table(t));
  return { tables };
}

// ---------------------------------------------------------------------------------------

interface Case {
  readonly name: string;
  readonly text: string;
  readonly ipv6?: boolean;
}

/** Shapes kube-proxy does not write but a node's ruleset may hold, and nft reprints. */
const ODD_SHAPES = `add table ip svcnet-odd
add chain ip svcnet-odd a
add chain ip svcnet-odd b
add chain ip svcnet-odd c { type nat hook prerouting priority -100 ; }
add chain ip svcnet-odd f { type filter hook input priority 10 ; policy drop ; comment "base" ; }
add set ip svcnet-odd r { type ipv4_addr . inet_service ; flags interval ; }
add map ip svcnet-odd d { type inet_service : ipv4_addr . inet_service ; }
add rule ip svcnet-odd c meta l4proto tcp dnat ip addr . port to numgen random mod 10 map { ${Array.from(
  { length: 10 },
  (_, i) => `${String(i)} : 10.0.0.${String(i + 1)} . 80`,
).join(' , ')} }
add rule ip svcnet-odd c numgen random mod 4 vmap { 0 : goto a , 1 : goto b , 2 : goto a , 3 : jump b }
add rule ip svcnet-odd c meta l4proto udp dnat to 10.0.0.1:53
add rule ip svcnet-odd c ct mark set mark
add rule ip svcnet-odd c meta mark set 0x10
add rule ip svcnet-odd f ip saddr != { 192.168.0.0/16 , 10.0.0.0/8 , 172.16.0.0/12 } counter drop
add rule ip svcnet-odd f tcp dport { 80 , 443 , 8080 } ct state new,established accept
add rule ip svcnet-odd f iifname "eth0" log prefix "hi " reject with icmp type port-unreachable
add rule ip svcnet-odd f fib daddr . iif type local return
add rule ip svcnet-odd f ip saddr . tcp dport @r accept
add element ip svcnet-odd r { 10.0.0.0/8 . 80 }
add element ip svcnet-odd r { 192.168.1.1-192.168.1.9 . 1000-2000 }
add element ip svcnet-odd d { 80 : 10.0.0.1 . 8080 }
`;

function cases(): Case[] {
  const overall = fixtureText('TestOverallNFTablesRules', 'expectRuleset');
  const out: Case[] = [{ name: 'shapes kube-proxy does not write', text: ODD_SHAPES }];
  if (overall !== undefined) {
    out.push({ name: 'TestOverallNFTablesRules', text: overall });
    out.push({ name: 'TestOverallNFTablesRules (IPv6 twin)', text: overall, ipv6: true });
  }
  for (const t of fixtureTexts()) {
    const keep =
      /^(TestBadIPs|TestSyncProxyRulesStartup)#/.test(t.name) ||
      /^TestSyncProxyRulesRepeated#\.steps\[(3|11|27|49)\]/.test(t.name);
    if (keep) out.push({ name: t.name, text: t.text });
  }
  return out;
}

let seq = 0;

function kernelRoundTrip(state: Ruleset): Ruleset {
  const ns = addNs(`nftp${String(seq++)}`);
  try {
    inNs(ns, 'nft', ['-f', '-'], dump(state));
    return parseRuleset(inNs(ns, 'nft', ['list', 'ruleset']));
  } finally {
    spawnSync('ip', ['netns', 'del', ns]);
  }
}

before(() => {
  if (skip === false) sweepStale();
});

after(() => {
  if (skip === false) removeAll();
});

test('nft list ruleset parses to the state that was loaded', { skip }, async (t) => {
  const all = cases();
  if (all.length === 0) {
    t.skip('fixtures not found');
    return;
  }
  assert.ok(all.length >= 6, `only ${String(all.length)} cases`);
  for (const c of all) {
    await t.test(c.name, () => {
      const fake = new NftFake();
      fake.load(c.text);
      const want = c.ipv6 === true ? v6Ruleset(fake.ruleset()) : fake.ruleset();
      const got = kernelRoundTrip(want);
      assert.deepEqual(canonicalRuleset(got), canonicalRuleset(want));
    });
  }
});
