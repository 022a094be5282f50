import { test } from 'node:test';
import assert from 'node:assert/strict';
import { splitArgs } from './parse.js';
import { parseRule, type RuleOption } from './rule.js';
import {
  ALL_TCP_FLAGS,
  addrtypeOf,
  commentWordsOf,
  conntrackOf,
  dnatOf,
  limitOf,
  logOf,
  markOf,
  markTargetOf,
  masqueradeOf,
  multiportOf,
  physdevOf,
  portMatchOf,
  recentOf,
  rejectOf,
  setOf,
  snatOf,
  statisticOf,
} from './rule-views.js';

/** The options of the rule's first match or target part named `name`. */
function opts(rule: string, name: string): readonly RuleOption[] {
  for (const p of parseRule(splitArgs(rule)).parts)
    if ((p.kind === 'match' && p.module === name) || (p.kind === 'target' && p.name === name))
      return p.options;
  throw new Error(`no ${name} in ${rule}`);
}

test('port options: direction, negation, tcp flags; an unknown option still surfaces', () => {
  const v = portMatchOf(opts('-p tcp -m tcp ! --dport 80:90 --source-port 1 --syn --x 5', 'tcp'));
  assert.deepEqual(v, [
    { kind: 'port', dir: 'dst', name: '--dport', text: '80:90', negate: true },
    { kind: 'port', dir: 'src', name: '--source-port', text: '1', negate: false },
    { kind: 'tcp-flags', mask: ['SYN', 'RST', 'ACK', 'FIN'], comp: ['SYN'], negate: false },
    { kind: 'port', dir: 'other', name: '--x', text: '5', negate: false },
  ]);
  const [flags] = portMatchOf(opts('-p tcp --tcp-flags ALL NONE', 'tcp'));
  assert.deepEqual(flags, { kind: 'tcp-flags', mask: ALL_TCP_FLAGS, comp: [], negate: false });
});

test('multiport and addrtype options, in written order', () => {
  assert.deepEqual(
    multiportOf(
      opts('-p tcp -m multiport --dports 80,443 ! --sports 1:2 --ports 3', 'multiport'),
    ).map((o) => [o.dir, o.text, o.negate]),
    [
      ['dst', '80,443', false],
      ['src', '1:2', true],
      ['either', '3', false],
    ],
  );
  assert.deepEqual(
    addrtypeOf(opts('-m addrtype ! --src-type LOCAL,UNICAST --limit-iface-in', 'addrtype')),
    [
      { kind: 'type', dir: 'src', types: ['LOCAL', 'UNICAST'], negate: true },
      { kind: 'limit-iface', name: '--limit-iface-in' },
    ],
  );
});

test('statistic and recent views', () => {
  const s = statisticOf(opts('-m statistic --mode random ! --probability 0.25', 'statistic'));
  assert.equal(s.mode, 'random');
  assert.deepEqual(s.probability, { name: '--probability', text: '0.25', negate: true });
  assert.equal(s.every, undefined);
  assert.equal(statisticOf(opts('-m statistic --mode fancy', 'statistic')).mode, 'other');
  assert.equal(statisticOf(opts('-m statistic --every 2', 'statistic')).mode, undefined);

  const r = recentOf(opts('-m recent ! --rcheck --seconds 10 --reap --name X --rdest', 'recent'));
  assert.deepEqual(r, {
    command: { kind: 'rcheck', negate: true },
    name: 'X',
    seconds: 10,
    reap: true,
    rsource: false,
    rdest: true,
    mask: undefined,
    hitcount: undefined,
    rttl: false,
  });
  const d = recentOf(opts('-m recent --set --mask 255.255.0.0 --hitcount 3 --rttl', 'recent'));
  assert.deepEqual(
    [d.command?.kind, d.name, d.mask, d.hitcount, d.rttl],
    ['set', 'DEFAULT', '255.255.0.0', '3', true],
  );
});

test('mark, conntrack, comment, set, physdev and limit views', () => {
  assert.deepEqual(markOf(opts('-m mark ! --mark 0x4000/0x4000', 'mark')), [
    { name: '--mark', text: '0x4000/0x4000', negate: true },
  ]);
  assert.deepEqual(conntrackOf(opts('-m conntrack ! --ctstate NEW,DNAT', 'conntrack')), [
    { states: ['NEW', 'DNAT'], negate: true },
  ]);
  const [c] = opts('-m comment --comment a b', 'comment');
  assert.deepEqual(c && commentWordsOf(c), ['a', 'b']);
  assert.deepEqual(setOf(opts('-m set ! --match-set KUBE-X dst,dst --return-nomatch', 'set')), {
    sets: [{ name: 'KUBE-X', flags: ['dst', 'dst'], negate: true }],
    returnNomatch: true,
  });
  const p = physdevOf(opts('-m physdev --physdev-in eth0 --physdev-is-bridged', 'physdev'));
  assert.deepEqual([p.in?.text, p.out, p.isBridged, p.isIn], ['eth0', undefined, true, false]);
  assert.deepEqual(limitOf(opts('-m limit --limit 5/s --limit-burst 10', 'limit')), {
    limit: '5/s',
    burst: 10,
  });
});

test('target views: DNAT/SNAT, MARK, REJECT, LOG, MASQUERADE', () => {
  assert.deepEqual(dnatOf(opts('-j DNAT --to-destination 10.0.0.1:80 --persistent', 'DNAT')), {
    to: '10.0.0.1:80',
    random: false,
    randomFully: false,
    persistent: true,
  });
  assert.equal(
    snatOf(opts('-j SNAT --to-source 1.2.3.4 --random-fully', 'SNAT')).randomFully,
    true,
  );
  assert.equal(dnatOf([]).to, undefined);
  assert.deepEqual(markTargetOf(opts('-j MARK --set-xmark 0x4000/0x4000', 'MARK')), {
    op: 'xset',
    text: '0x4000/0x4000',
  });
  assert.equal(markTargetOf(opts('-j MARK --or-mark 1', 'MARK'))?.op, 'or');
  assert.equal(markTargetOf(opts('-j MARK --xor-mark 1', 'MARK'))?.op, 'xor');
  assert.equal(markTargetOf([]), undefined);
  assert.equal(
    rejectOf(opts('-j REJECT --reject-with icmp-host-unreachable', 'REJECT')).rejectWith,
    'icmp-host-unreachable',
  );
  assert.equal(rejectOf([]).rejectWith, undefined);
  assert.deepEqual(logOf(opts('-j LOG --log-prefix "x y" --log-level 4', 'LOG')), {
    prefix: 'x y',
    level: '4',
  });
  assert.deepEqual(masqueradeOf(opts('-j MASQUERADE --to-ports 100-200 --random', 'MASQUERADE')), {
    toPorts: '100-200',
    random: true,
    randomFully: false,
    words: ['--to-ports', '100-200', '--random'],
  });
});
