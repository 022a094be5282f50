// The VM's kernel has what IPVS mode needs and this machine's kernel lacks: ip_vs with its
// schedulers, ipset, dummy links. Runs inside the VM only (npm run test:vm).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { NetnsSet, inNs, notInVm, sh } from './lib/vm-netns.js';

const nets = new NetnsSet(`vmk${process.pid}`);
after(() => {
  nets.removeAll();
});

test('the kernel has ip_vs and its rr, wrr and sh schedulers loaded', { skip: notInVm }, () => {
  console.log(`kernel ${sh('uname', ['-r']).trim()}`);
  const modules = sh('cat', ['/proc/modules']);
  for (const m of ['ip_vs', 'ip_vs_rr', 'ip_vs_wrr', 'ip_vs_sh', 'ip_set', 'xt_set', 'dummy'])
    assert.match(modules, new RegExp(`^${m} `, 'm'), `module ${m}`);
  assert.ok(existsSync('/proc/net/ip_vs'), '/proc/net/ip_vs');
});

test('ipvsadm -L -n lists an empty table in a fresh namespace', { skip: notInVm }, () => {
  const ns = nets.add('list');
  const listing = inNs(ns, 'ipvsadm', ['-L', '-n']);
  console.log(listing);
  assert.match(listing, /^IP Virtual Server version \d+\.\d+\.\d+ \(size=\d+\)$/m);
  assert.match(listing, /^Prot LocalAddress:Port Scheduler Flags$/m);
  assert.match(listing, /^ {2}-> RemoteAddress:Port +Forward Weight ActiveConn InActConn$/m);
});

test('ipset restores, tests and saves the set types IPVS mode uses', { skip: notInVm }, () => {
  const ns = nets.add('ipset');
  inNs(
    ns,
    'ipset',
    ['restore'],
    [
      'create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536',
      'add KUBE-CLUSTER-IP 10.102.97.154,tcp:80',
      'create KUBE-LOOP-BACK hash:ip,port,ip family inet hashsize 1024 maxelem 65536',
      'add KUBE-LOOP-BACK 192.168.76.141,tcp:80,192.168.76.141',
      'create KUBE-NODE-PORT-TCP bitmap:port range 0-65535',
      'add KUBE-NODE-PORT-TCP 30080',
      '',
    ].join('\n'),
  );
  inNs(ns, 'ipset', ['test', 'KUBE-CLUSTER-IP', '10.102.97.154,tcp:80']);
  assert.throws(() => inNs(ns, 'ipset', ['test', 'KUBE-CLUSTER-IP', '10.102.97.154,tcp:81']));
  const saved = inNs(ns, 'ipset', ['save']);
  assert.match(saved, /^add KUBE-LOOP-BACK 192\.168\.76\.141,tcp:80,192\.168\.76\.141$/m);
  assert.match(saved, /^add KUBE-NODE-PORT-TCP 30080$/m);
});

test('a dummy kube-ipvs0 link holds service addresses', { skip: notInVm }, () => {
  const ns = nets.add('dummy');
  inNs(ns, 'ip', ['link', 'add', 'kube-ipvs0', 'type', 'dummy']);
  inNs(ns, 'ip', ['addr', 'add', '10.102.97.154/32', 'dev', 'kube-ipvs0']);
  const addrs = inNs(ns, 'ip', ['-o', 'addr', 'show', 'dev', 'kube-ipvs0']);
  assert.match(addrs, /inet 10\.102\.97\.154\/32/);
  const local = inNs(ns, 'ip', ['route', 'show', 'table', 'local']);
  assert.match(local, /^local 10\.102\.97\.154 dev kube-ipvs0/m);
});
