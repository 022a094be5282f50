import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeExecer, RealExecer, runChecked, ExecError } from './exec.js';

test('RealExecer passes stdin and collects stdout, stderr and the exit code', async () => {
  const ex = new RealExecer();
  const res = await ex.run({
    cmd: process.execPath,
    args: ['-e', 'process.stdin.pipe(process.stdout); console.error("e"); process.exitCode = 3'],
    stdin: 'hello',
  });
  assert.deepEqual(res, { code: 3, stdout: 'hello', stderr: 'e\n' });
  await assert.rejects(
    runChecked(ex, {
      cmd: process.execPath,
      args: ['-e', 'console.error("boom"); process.exit(4)'],
    }),
    /exit 4: boom/,
  );
  await assert.rejects(ex.run({ cmd: '/nonexistent/cmd', args: [] }), ExecError);
});

test('FakeExecer enforces order and reports unused expectations', async () => {
  const fake = new FakeExecer().expect(
    { cmd: 'ip', args: ['link'], result: { stdout: 'x' } },
    { cmd: 'nft', args: (a) => a.includes('-f') },
  );
  assert.equal((await fake.run({ cmd: 'ip', args: ['link'] })).stdout, 'x');
  assert.throws(() => {
    fake.verify();
  }, /1 expected call\(s\) never came; first: nft/);
  await assert.rejects(fake.run({ cmd: 'ip', args: [] }), /expected nft/);
});
