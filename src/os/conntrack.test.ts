// Tests of the conntrack seam: argument building, parsing of the tool's count (including
// its exit 1 on "0 deleted"), real failures, and the Fake's matching.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeExecer } from './exec.js';
import { FakeConntrack, RealConntrack, conntrackDeleteArgs } from './conntrack.js';
import type { FakeFlow } from './conntrack.js';

test('conntrackDeleteArgs builds the conntrack -D command line', () => {
  assert.deepEqual(
    conntrackDeleteArgs({
      family: 'IPv4',
      protocol: 'UDP',
      origDst: '10.96.0.10',
      origDstPort: 53,
      replySrc: '10.244.1.5',
      replySrcPort: 5353,
    }),
    [
      '-D',
      '-f',
      'ipv4',
      '-p',
      'udp',
      '--orig-dst',
      '10.96.0.10',
      '--orig-port-dst',
      '53',
      '--reply-src',
      '10.244.1.5',
      '--reply-port-src',
      '5353',
    ],
  );
  assert.deepEqual(conntrackDeleteArgs({ family: 'IPv6', protocol: 'UDP', origDstPort: 30053 }), [
    '-D',
    '-f',
    'ipv6',
    '-p',
    'udp',
    '--orig-port-dst',
    '30053',
  ]);
});

test('RealConntrack reads the deleted count, also from exit 1 with 0 deleted', async () => {
  const ex = new FakeExecer().expect(
    {
      cmd: 'conntrack',
      result: {
        code: 0,
        stderr: 'conntrack v1.4.7 (conntrack-tools): 3 flow entries have been deleted.\n',
      },
    },
    {
      cmd: 'conntrack',
      result: {
        code: 1,
        stderr: 'conntrack v1.4.7 (conntrack-tools): 0 flow entries have been deleted.\n',
      },
    },
    {
      cmd: 'conntrack',
      result: { code: 1, stderr: 'conntrack v1.4.7: Operation failed: invalid parameters\n' },
    },
  );
  const ct = new RealConntrack(ex);
  const f = { family: 'IPv4', protocol: 'UDP', origDst: '10.0.0.1' } as const;
  assert.equal(await ct.deleteEntries(f), 3);
  assert.equal(await ct.deleteEntries(f), 0);
  await assert.rejects(ct.deleteEntries(f), /invalid parameters/);
  ex.verify();
});

test('FakeConntrack deletes exactly the matching flows', async () => {
  const flow = (
    replySrc: string,
    origDst = '10.96.0.10',
    protocol: 'UDP' | 'TCP' = 'UDP',
  ): FakeFlow => ({
    family: 'IPv4',
    protocol,
    origSrc: '10.244.0.2',
    origSrcPort: 40000,
    origDst,
    origDstPort: 53,
    replySrc,
    replySrcPort: 53,
  });
  const ct = new FakeConntrack([
    flow('10.244.1.5'),
    flow('10.244.2.6'),
    flow('10.244.1.5', '10.96.0.11'),
    flow('10.244.1.5', '10.96.0.10', 'TCP'),
  ]);
  const n = await ct.deleteEntries({
    family: 'IPv4',
    protocol: 'UDP',
    origDst: '10.96.0.10',
    replySrc: '10.244.1.5',
  });
  assert.equal(n, 1);
  assert.deepEqual(
    ct.flows.map((f) => `${f.protocol} ${f.origDst} ${f.replySrc}`),
    ['UDP 10.96.0.10 10.244.2.6', 'UDP 10.96.0.11 10.244.1.5', 'TCP 10.96.0.10 10.244.1.5'],
  );
});
