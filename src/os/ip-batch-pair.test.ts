import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { FakeExecer, type ExecRequest, type ExecResult, type Execer } from './exec.js';
import { FakeIp, IpError, RealIp } from './ip.js';
import { netnsNameOf } from './ip-batch-pair.js';
import { addrAdd, linkUp, routeAdd, vethPair } from '../util/ip-ops.js';

const HOST_OPS = [
  vethPair({ host: 'veth1', peer: 'eth0', netns: '/run/netns/p1' }),
  linkUp('veth1'),
];
const POD_OPS = [linkUp('eth0'), addrAdd('10.0.0.2/24', 'eth0')];

/** The batch file named on the `netns exec` line of a request's stdin. */
function batchFileOf(stdin: unknown): string {
  const m = /^netns exec (\S+) ip -batch (\S+)$/m.exec(String(stdin));
  assert.ok(m, `no netns exec line in ${String(stdin)}`);
  return m[2] ?? '';
}

test('netnsNameOf: names only direct children of the netns run directory', () => {
  assert.equal(netnsNameOf('/run/netns/pod-1'), 'pod-1');
  assert.equal(netnsNameOf('/var/run/netns/cni-0a1b'), 'cni-0a1b');
  assert.equal(netnsNameOf('/proc/42/ns/net'), undefined);
  assert.equal(netnsNameOf('/run/netns/a/b'), undefined);
  assert.equal(netnsNameOf('/run/netns/..'), undefined);
  assert.equal(netnsNameOf('/run/netns/'), undefined);
});

test('RealIp.batchPair: one exec for a named namespace, the Pod ops in a batch file that is removed after', async () => {
  let file = '';
  const fake = new FakeExecer().expect({
    cmd: 'ip',
    args: ['-batch', '-'],
    check: (r) => {
      file = batchFileOf(r.stdin);
      assert.equal(
        String(r.stdin),
        `link add veth1 type veth peer name eth0 netns /run/netns/p1\nlink set veth1 up\nnetns exec p1 ip -batch ${file}\n`,
      );
      assert.equal(readFileSync(file, 'utf8'), 'link set eth0 up\naddr add 10.0.0.2/24 dev eth0\n');
    },
  });
  await new RealIp(fake).batchPair(HOST_OPS, '/run/netns/p1', POD_OPS);
  fake.verify();
  assert.throws(() => readFileSync(file), /ENOENT/);
});

test('RealIp.batchPair: names the failing op on either side', async () => {
  const fake = new FakeExecer().expect({
    cmd: 'ip',
    args: ['-batch', '-'],
    result: { code: 1, stderr: 'RTNETLINK answers: File exists\nCommand failed -:1\n' },
  });
  await assert.rejects(
    new RealIp(fake).batchPair(HOST_OPS, '/run/netns/p1', POD_OPS),
    (e: unknown) => {
      assert.ok(e instanceof IpError);
      assert.equal(
        e.message,
        'ip in host namespace: "link add veth1 type veth peer name eth0 netns /run/netns/p1": RTNETLINK answers: File exists',
      );
      return true;
    },
  );
  fake.verify();
  // iproute2's report of a failing child: its own line in the file, then the netns exec line.
  const podFails: Execer = {
    run: (r: ExecRequest): Promise<ExecResult> =>
      Promise.resolve({
        code: 1,
        stdout: '',
        stderr: `Error: any valid prefix is expected rather than "x".\nCommand failed ${batchFileOf(r.stdin)}:2\nCommand failed -:3\n`,
      }),
  };
  await assert.rejects(
    new RealIp(podFails).batchPair(HOST_OPS, '/run/netns/p1', POD_OPS),
    (e: unknown) => {
      assert.ok(e instanceof IpError);
      assert.equal(
        e.message,
        'ip in /run/netns/p1: "addr add 10.0.0.2/24 dev eth0": Error: any valid prefix is expected rather than "x".',
      );
      return true;
    },
  );
});

test('RealIp.batchPair: two execs for a namespace without a name; FakeIp applies both sides', async () => {
  const fake = new FakeExecer().expect(
    { cmd: 'ip', args: ['-batch', '-'] },
    { cmd: 'nsenter', args: ['--net=/proc/42/ns/net', 'ip', '-batch', '-'] },
  );
  await new RealIp(fake).batchPair([linkUp('veth1')], '/proc/42/ns/net', POD_OPS);
  fake.verify();
  const ip = new FakeIp();
  await ip.addNetns('p1');
  await ip.batchPair(HOST_OPS, '/run/netns/p1', [
    ...POD_OPS,
    routeAdd('default', { via: '10.0.0.1' }),
  ]);
  assert.deepEqual(
    ip.history.filter((h) => h.startsWith('/run/netns/p1')),
    [
      '/run/netns/p1: link set eth0 up',
      '/run/netns/p1: addr add 10.0.0.2/24 dev eth0',
      '/run/netns/p1: route add default via 10.0.0.1',
    ],
  );
});
