// Tests of the nfacct seam: parsing nfacct(8) output, the commands RealNfacct runs and how it
// reads their failures, and the Fake's behaviour.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SvcnetError } from '../errors.js';
import { FakeExecer } from './exec.js';
import { FakeNfacct, RealNfacct, isValidNfacctName, parseNfacctOutput } from './nfacct.js';

const LINE = (pkts: number, bytes: number, name: string): string =>
  `{ pkts = ${String(pkts).padStart(20, '0')}, bytes = ${String(bytes).padStart(20, '0')} } = ${name};\n`;

test('parseNfacctOutput reads every object of nfacct list and ignores other lines', () => {
  const text = LINE(1, 60, 'localhost_nps_accepted_pkts') + 'garbage\n' + LINE(0, 0, 'other');
  assert.deepEqual(
    [...parseNfacctOutput(text)],
    [
      ['localhost_nps_accepted_pkts', { packets: 1, bytes: 60 }],
      ['other', { packets: 0, bytes: 0 }],
    ],
  );
  assert.equal(parseNfacctOutput('').size, 0);
});

test('isValidNfacctName accepts kube-proxy names and refuses empty, long or odd names', () => {
  assert.equal(isValidNfacctName('ct_state_invalid_dropped_pkts'), true);
  assert.equal(isValidNfacctName(''), false);
  assert.equal(isValidNfacctName('x'.repeat(32)), false);
  assert.equal(isValidNfacctName('a b'), false);
});

test('ensure adds a missing object and leaves an existing one alone', async () => {
  const ex = new FakeExecer().expect(
    {
      cmd: 'nfacct',
      args: ['get', 'a'],
      result: { code: 1, stderr: 'nfacct v1.0.2: error: No such file or directory\n' },
    },
    { cmd: 'nfacct', args: ['add', 'a'] },
    { cmd: 'nfacct', args: ['get', 'b'], result: { stdout: LINE(3, 180, 'b') } },
  );
  const n = new RealNfacct(ex);
  await n.ensure('a');
  await n.ensure('b');
  ex.verify();
});

test('ensure accepts an object another process created in between, and reports a real failure', async () => {
  const raced = new FakeExecer().expect(
    { cmd: 'nfacct', args: ['get', 'a'], result: { code: 1, stderr: 'No such file or directory' } },
    { cmd: 'nfacct', args: ['add', 'a'], result: { code: 1, stderr: 'Device or resource busy' } },
    { cmd: 'nfacct', args: ['get', 'a'], result: { stdout: LINE(0, 0, 'a') } },
  );
  await new RealNfacct(raced).ensure('a');
  raced.verify();

  const denied = new FakeExecer().expect(
    { cmd: 'nfacct', args: ['get', 'a'], result: { code: 1, stderr: 'Operation not permitted' } },
    {
      cmd: 'nfacct',
      args: ['add', 'a'],
      result: { code: 1, stderr: 'nfacct v1.0.2: error: Operation not permitted' },
    },
    { cmd: 'nfacct', args: ['get', 'a'], result: { code: 1, stderr: 'Operation not permitted' } },
  );
  await assert.rejects(new RealNfacct(denied).ensure('a'), /nfacct add a: exit 1: .*not permitted/);
});

test('get returns the counts, NOT_FOUND for a missing object, and rejects bad names before running', async () => {
  const ex = new FakeExecer().expect(
    { cmd: 'nfacct', args: ['get', 'a'], result: { stdout: LINE(12, 720, 'a') } },
    {
      cmd: 'nfacct',
      args: ['get', 'b'],
      result: { code: 1, stderr: 'nfacct v1.0.2: error: No such file or directory\n' },
    },
  );
  const n = new RealNfacct(ex);
  assert.deepEqual(await n.get('a'), { packets: 12, bytes: 720 });
  await assert.rejects(
    n.get('b'),
    (e: unknown) => e instanceof SvcnetError && e.code === 'NOT_FOUND',
  );
  await assert.rejects(n.get('bad name'), /invalid/);
  ex.verify();
  assert.equal(ex.calls.length, 2);
});

test('FakeNfacct counts into existing objects and can play a host without nfacct', async () => {
  const f = new FakeNfacct();
  await f.ensure('a');
  f.count('a', 2, 100);
  await f.ensure('a');
  assert.deepEqual(await f.get('a'), { packets: 2, bytes: 100 });
  await assert.rejects(f.get('missing'), /not found/);
  f.unsupported = 'spawn nfacct ENOENT';
  await assert.rejects(f.ensure('b'), /ENOENT/);
});
