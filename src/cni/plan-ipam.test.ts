import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parsePluginConfig, type BuiltinIpamConfig } from './parse-config.js';
import { FileIpamStore, LOCK_FILE, MemoryIpamStore } from './ipam-store.js';
import {
  ipamResult,
  planAllocation,
  planGc,
  planRelease,
  requestedIPs,
  type IpamState,
  type Reservation,
} from './plan-ipam.js';
import { CniError } from './types.js';
import { formatIP, parseIP } from '../util/ip.js';

function ipam(ranges: unknown, extra: Record<string, unknown> = {}): BuiltinIpamConfig {
  const cfg = parsePluginConfig(
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'n',
      type: 'svcnet-cni',
      ipam: { type: 'host-local', ranges, dataDir: '/d', ...extra },
    }),
    'ADD',
  );
  assert.equal(cfg.ipam?.kind, 'builtin');
  return cfg.ipam;
}

function state(
  res: Record<string, Reservation> = {},
  last: Record<number, string> = {},
): IpamState {
  return {
    reservations: new Map(Object.entries(res)),
    lastReserved: new Map(Object.entries(last).map(([k, v]) => [Number(k), v])),
  };
}

const owner = (c: string): Reservation => ({ containerId: c, ifName: 'eth0' });

test('round-robin after the last reservation, skipping the gateway and taken addresses, wrapping once', () => {
  const cfg = ipam([[{ subnet: '10.0.0.0/29' }]]); // .1 gateway, .2-.6 usable
  const pick = (s: IpamState): string =>
    formatIP(planAllocation(cfg, s, 'c', 'eth0', []).allocations[0]!.ip);
  assert.equal(pick(state()), '10.0.0.2');
  assert.equal(pick(state({ '10.0.0.2': owner('a') }, { 0: '10.0.0.2' })), '10.0.0.3');
  assert.equal(
    pick(state({ '10.0.0.3': owner('a') }, { 0: '10.0.0.5' })),
    '10.0.0.6',
    'not re-using a freed lower address',
  );
  assert.equal(pick(state({ '10.0.0.6': owner('a') }, { 0: '10.0.0.6' })), '10.0.0.2', 'wraps');
  const full = state(
    Object.fromEntries(['2', '3', '4', '5', '6'].map((o) => [`10.0.0.${o}`, owner(`c${o}`)])),
    { 0: '10.0.0.4' },
  );
  assert.throws(
    () => planAllocation(cfg, full, 'c', 'eth0', []),
    (e: unknown) =>
      e instanceof CniError &&
      e.cniCode === 999 &&
      /no IP addresses available in range set 0 \(10\.0\.0\.1-10\.0\.0\.6\)/.test(e.message),
  );
});

test('rangeStart/rangeEnd, several ranges in a set, dual stack, requested IPs, duplicates', () => {
  const cfg = ipam([
    [
      { subnet: '10.0.0.0/24', rangeStart: '10.0.0.10', rangeEnd: '10.0.0.11' },
      { subnet: '10.0.1.0/24', rangeStart: '10.0.1.5', rangeEnd: '10.0.1.5' },
    ],
    [{ subnet: 'fd00::/120' }],
  ]);
  const s = state({ '10.0.0.10': owner('a'), '10.0.0.11': owner('b') });
  const plan = planAllocation(cfg, s, 'c', 'eth0', []);
  assert.deepEqual(
    plan.allocations.map((a) => formatIP(a.ip)),
    ['10.0.1.5', 'fd00::2'],
  );
  assert.deepEqual(
    plan.changes.map((c) => (c.op === 'reserve' ? `${c.ip}@${c.setIndex}` : '')),
    ['10.0.1.5@0', 'fd00::2@1'],
  );
  const res = ipamResult('1.0.0', cfg, plan.allocations);
  assert.deepEqual(res.ips, [
    { address: '10.0.1.5/24', gateway: '10.0.1.1' },
    { address: 'fd00::2/120', gateway: 'fd00::1' },
  ]);
  assert.equal(ipamResult('0.3.1', cfg, plan.allocations).ips?.[1]?.version, '6');
  const req = planAllocation(cfg, state(), 'c', 'eth0', requestedIPs('10.0.0.11'));
  assert.equal(formatIP(req.allocations[0]!.ip), '10.0.0.11');
  assert.throws(
    () => planAllocation(cfg, s, 'c', 'eth0', requestedIPs('10.0.0.10')),
    /already allocated/,
  );
  assert.throws(
    () => planAllocation(cfg, state(), 'c', 'eth0', requestedIPs('192.168.0.1')),
    /in none of the configured ranges/,
  );
  assert.throws(
    () => planAllocation(cfg, s, 'a', 'eth0', []),
    /duplicate allocation: 10\.0\.0\.10/,
  );
});

test('release and GC pick the attachment’s reservations only', () => {
  const s = state({
    '10.0.0.2': owner('a'),
    '10.0.0.3': { containerId: 'a', ifName: 'net1' },
    '10.0.0.4': owner('b'),
    '10.0.0.5': { containerId: 'c', ifName: '' },
  });
  assert.deepEqual(planRelease(s, 'a', 'eth0'), [{ op: 'release', ip: '10.0.0.2' }]);
  assert.deepEqual(
    planRelease(s, 'c', 'eth0'),
    [{ op: 'release', ip: '10.0.0.5' }],
    'legacy container-only files',
  );
  assert.deepEqual(planRelease(s, 'zzz', 'eth0'), []);
  assert.deepEqual(
    planGc(s, [{ containerID: 'a', ifname: 'eth0' }]).map((c) => c.ip),
    ['10.0.0.3', '10.0.0.4', '10.0.0.5'],
  );
  assert.ok(parseIP('10.0.0.2'));
});

test('FileIpamStore: host-local layout; 20 concurrent allocations (blocking and non-blocking stores mixed) are distinct; release frees the file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svcnet-ipam-'));
  try {
    const cfg = ipam([[{ subnet: '10.1.0.0/24' }]], { dataDir: dir });
    const store = new FileIpamStore();
    const stores = Array.from(
      { length: 20 },
      (_, i) => new FileIpamStore({ blocking: i % 2 === 0 }),
    );
    const got = await Promise.all(
      stores.map((s, i) =>
        s.update(dir, 'net', (st) => {
          const p = planAllocation(cfg, st, `c${i}`, 'eth0', []);
          return { value: formatIP(p.allocations[0]!.ip), changes: p.changes };
        }),
      ),
    );
    assert.equal(new Set(got).size, 20);
    const files = await readdir(join(dir, 'net'));
    assert.ok(files.includes('last_reserved_ip.0'));
    assert.ok(!files.includes(LOCK_FILE), 'lock released');
    const owner0 = await readFile(join(dir, 'net', got[0]!), 'utf8');
    assert.equal(owner0, 'c0\r\neth0');
    const released = await store.update(dir, 'net', (st) => {
      const changes = planRelease(st, 'c0', 'eth0');
      return { value: changes.length, changes };
    });
    assert.equal(released, 1);
    assert.ok(!(await readdir(join(dir, 'net'))).includes(got[0]!));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('FileIpamStore breaks a lock left by a dead process and times out on a live one', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svcnet-ipam-'));
  try {
    const store = new FileIpamStore({ lockTimeoutMs: 200, blocking: true });
    await store.update(dir, 'net', () => ({ value: 0, changes: [] }));
    await writeFile(join(dir, 'net', LOCK_FILE), '999999999');
    assert.equal(await store.update(dir, 'net', () => ({ value: 'ok', changes: [] })), 'ok');
    await writeFile(join(dir, 'net', LOCK_FILE), String(process.pid));
    await assert.rejects(
      store.update(dir, 'net', () => ({ value: 0, changes: [] })),
      (e: unknown) => e instanceof CniError && e.cniCode === 11,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('MemoryIpamStore applies the same changes', async () => {
  const cfg = ipam([[{ subnet: '10.2.0.0/24' }]]);
  const mem = new MemoryIpamStore();
  for (const c of ['a', 'b'])
    await mem.update('/d', 'n', (st) => {
      const p = planAllocation(cfg, st, c, 'eth0', []);
      return { value: undefined, changes: p.changes };
    });
  assert.deepEqual(mem.dump('/d', 'n'), ['10.2.0.2 a eth0', '10.2.0.3 b eth0']);
});
