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

test('a kernel tool that is not installed names the Debian package to install', async () => {
  const execer = new RealExecer();
  await assert.rejects(
    execer.run({ cmd: 'conntrack', args: ['-L'], env: { PATH: '/nonexistent' } }),
    (e: unknown) =>
      e instanceof ExecError &&
      e.message === 'conntrack: command not found (install it: apt-get install conntrack)',
  );
  await assert.rejects(
    execer.run({ cmd: 'svcnet-no-such-tool', args: [], env: { PATH: '/nonexistent' } }),
    (e: unknown) =>
      e instanceof ExecError && e.message === 'svcnet-no-such-tool: command not found',
  );
});
