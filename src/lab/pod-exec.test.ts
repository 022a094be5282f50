import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Pod } from '../kube/types.js';
import { ExecError, FakeExecer } from '../os/exec.js';
import { execProbe, podCommandExecer, runInitContainer } from './pod-exec.js';

const probe = {
  exec: { command: ['sh', '-c', 'test -f /tmp/ready-$HOSTNAME'] },
  timeoutSeconds: 3,
};

function pod(spec: Partial<NonNullable<Pod['spec']>> = {}): Pod {
  return {
    metadata: { name: 'web-1', namespace: 'team' },
    spec: {
      containers: [{ name: 'c', env: [{ name: 'MODE', value: 'x' }], readinessProbe: probe }],
      ...spec,
    },
  };
}

test('an exec probe runs its command in the Pod namespace with the timeout and HOSTNAME', async () => {
  const ex = new FakeExecer().expect({
    cmd: 'ip',
    args: ['netns', 'exec', 'pod-abc', 'sh', '-c', 'test -f /tmp/ready-$HOSTNAME'],
    check: (req) => {
      assert.equal(req.timeoutMs, 3000);
      assert.deepEqual(req.env, { HOSTNAME: 'web-1', MODE: 'x' });
    },
  });
  const p = pod();
  assert.equal(await execProbe(podCommandExecer(ex, p, 'pod-abc'), p, probe, 'n1'), true);
  ex.verify();
});

test('an exec probe fails on a non-zero exit, a timeout, or a command that cannot run', async () => {
  const p = pod();
  const failing = new FakeExecer().expect({ cmd: 'ip', result: { code: 1 } });
  assert.equal(await execProbe(podCommandExecer(failing, p, 'pod-abc'), p, probe, 'n1'), false);
  const timingOut = {
    run: () => Promise.reject(new ExecError('sh: timed out after 3000 ms')),
  };
  assert.equal(await execProbe(timingOut, p, probe, 'n1'), false);
  assert.equal(await execProbe(new FakeExecer(), p, { exec: { command: [] } }, 'n1'), false);
});

test("a hostNetwork Pod's commands run in the node namespace, with the node's name", async () => {
  const ex = new FakeExecer().expect({
    cmd: 'sh',
    args: ['-c', 'test -f /tmp/ready-$HOSTNAME'],
    check: (req) => {
      assert.equal(req.env?.HOSTNAME, 'n1');
    },
  });
  const p = pod({ hostNetwork: true });
  assert.equal(await execProbe(podCommandExecer(ex, p, 'pod-abc'), p, probe, 'n1'), true);
  ex.verify();
});

test('an init container runs command then args; without a command it completes at once', async () => {
  const ex = new FakeExecer().expect({
    cmd: 'ip',
    args: ['netns', 'exec', 'pod-abc', 'sh', '-c', 'exit 3'],
    result: { code: 3, stderr: 'boom\n' },
  });
  const p = pod();
  const run = await runInitContainer(
    podCommandExecer(ex, p, 'pod-abc'),
    p,
    { name: 'init', command: ['sh'], args: ['-c', 'exit 3'] },
    'n1',
  );
  assert.deepEqual(run, { exitCode: 3, output: 'boom\n' });
  assert.deepEqual(await runInitContainer(new FakeExecer(), p, { name: 'noop' }, 'n1'), {
    exitCode: 0,
    output: '',
  });
});
