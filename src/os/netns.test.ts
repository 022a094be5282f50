import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeExecer } from './exec.js';
import { netnsExecer, netnsExecArgv } from './netns.js';

test('commands run inside a named namespace through ip netns exec, stdin passed on', async () => {
  assert.deepEqual(netnsExecArgv('node-1', ['sysctl', '-qw', 'a=1']), [
    'ip',
    'netns',
    'exec',
    'node-1',
    'sysctl',
    '-qw',
    'a=1',
  ]);
  const fake = new FakeExecer().expect({
    cmd: 'ip',
    args: ['netns', 'exec', 'hub', 'iptables-restore', '--noflush'],
    check: (r) => {
      assert.equal(r.stdin, '*filter\nCOMMIT\n');
    },
    result: { stdout: 'ok' },
  });
  const res = await netnsExecer(fake, 'hub').run({
    cmd: 'iptables-restore',
    args: ['--noflush'],
    stdin: '*filter\nCOMMIT\n',
  });
  assert.equal(res.stdout, 'ok');
  fake.verify();
});
