import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { FakeExecer } from '../../os/exec.js';
import { FakeSysctl } from '../../os/sysctl.js';
import { setUpIpvsHost } from './host-setup.js';
import {
  connReuseModeDecision,
  ipvsTimeoutArgs,
  kernelVersionOf,
  planIpvsSysctls,
} from './sysctls.js';

const log = pino({ level: 'silent' });

const VS_KEYS = {
  'net.ipv4.vs.conntrack': '0',
  'net.ipv4.vs.conn_reuse_mode': '1',
  'net.ipv4.vs.expire_nodest_conn': '0',
  'net.ipv4.vs.expire_quiescent_template': '0',
  'net.ipv4.ip_forward': '0',
  'net.ipv4.conf.all.arp_ignore': '0',
  'net.ipv4.conf.all.arp_announce': '0',
};

test('conn_reuse_mode=0 only on kernels 4.1 to 5.8, as kube-proxy does', () => {
  assert.deepEqual(kernelVersionOf('6.1.0-27-amd64'), [6, 1]);
  assert.equal(kernelVersionOf('unknown'), undefined);
  assert.equal(connReuseModeDecision('4.0.9').set, false);
  assert.equal(connReuseModeDecision('4.1.0').set, true);
  assert.equal(connReuseModeDecision('5.8.18-generic').set, true);
  assert.equal(connReuseModeDecision('5.9.0').set, false);
  assert.equal(connReuseModeDecision('6.1.0-27-amd64').set, false);
  assert.equal(connReuseModeDecision('').set, false);
});

test('the ipvs sysctls, with strictARP adding the ARP pair', () => {
  const keys = (strictARP: boolean, kernelRelease: string) =>
    planIpvsSysctls({ kernelRelease, strictARP }).map((s) => `${s.key}=${s.value}`);
  assert.deepEqual(keys(false, '6.1.0'), [
    'net.ipv4.vs.conntrack=1',
    'net.ipv4.vs.expire_nodest_conn=1',
    'net.ipv4.vs.expire_quiescent_template=1',
    'net.ipv4.ip_forward=1',
  ]);
  assert.deepEqual(keys(true, '5.4.0-150-generic'), [
    'net.ipv4.vs.conntrack=1',
    'net.ipv4.vs.conn_reuse_mode=0',
    'net.ipv4.vs.expire_nodest_conn=1',
    'net.ipv4.vs.expire_quiescent_template=1',
    'net.ipv4.ip_forward=1',
    'net.ipv4.conf.all.arp_ignore=1',
    'net.ipv4.conf.all.arp_announce=2',
  ]);
});

test('ipvsadm --set only when a timeout is configured, whole seconds', () => {
  const none = { tcpTimeoutSeconds: 0, tcpFinTimeoutSeconds: 0, udpTimeoutSeconds: 0 };
  assert.equal(ipvsTimeoutArgs(none), undefined);
  assert.deepEqual(ipvsTimeoutArgs({ ...none, tcpFinTimeoutSeconds: 30.7 }), [
    '--set',
    '0',
    '30',
    '0',
  ]);
});

test('set-up through the seams: sysctls of the kernel in hand, then the timeouts', async () => {
  const sysctl = new FakeSysctl({ ...VS_KEYS, 'kernel.osrelease': '5.4.0-150-generic' });
  const execer = new FakeExecer().expect({ cmd: 'ipvsadm', args: ['--set', '900', '120', '300'] });
  const r = await setUpIpvsHost(
    { sysctl, execer, log },
    { strictARP: true, tcpTimeoutMs: 900_000, tcpFinTimeoutMs: 120_000, udpTimeoutMs: 300_000 },
  );
  execer.verify();
  assert.deepEqual(r.timeoutArgs, ['--set', '900', '120', '300']);
  assert.deepEqual(
    sysctl.writes.map((w) => `${w.key}=${w.value}`),
    [
      'net.ipv4.vs.conntrack=1',
      'net.ipv4.vs.conn_reuse_mode=0',
      'net.ipv4.vs.expire_nodest_conn=1',
      'net.ipv4.vs.expire_quiescent_template=1',
      'net.ipv4.ip_forward=1',
      'net.ipv4.conf.all.arp_ignore=1',
      'net.ipv4.conf.all.arp_announce=2',
    ],
  );
});

test('set-up never throws: a missing key, an unknown kernel and a failing ipvsadm are logged', async () => {
  const sysctl = new FakeSysctl({ 'net.ipv4.ip_forward': '1', 'net.ipv4.vs.conntrack': '0' });
  const execer = new FakeExecer().expect({
    cmd: 'ipvsadm',
    args: ['--set', '0', '0', '5'],
    result: { code: 2, stderr: 'Protocol not available' },
  });
  const r = await setUpIpvsHost(
    { sysctl, execer, log },
    { strictARP: false, tcpTimeoutMs: 0, tcpFinTimeoutMs: 0, udpTimeoutMs: 5_000 },
  );
  execer.verify();
  assert.deepEqual(r.changed, ['net.ipv4.vs.conntrack']);
  // Nothing to set: no ipvsadm call at all.
  const quiet = new FakeExecer();
  await setUpIpvsHost(
    { sysctl, execer: quiet, log },
    { strictARP: false, tcpTimeoutMs: 0, tcpFinTimeoutMs: 0, udpTimeoutMs: 0 },
  );
  assert.equal(quiet.calls.length, 0);
});
