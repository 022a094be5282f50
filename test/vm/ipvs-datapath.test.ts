// IPVS's data path in the VM's kernel, before any svcnet code drives it: the walkthrough's
// Service (ClusterIP 10.102.97.154:80, endpoints 192.168.76.141:80 and 192.168.76.142:80) as
// kube-proxy's IPVS mode programs it by hand — the ClusterIP on a dummy kube-ipvs0, a virtual
// server with two masquerading real servers — in a node namespace between a client namespace
// and two server namespaces, each server a tiny HTTP server answering its own address.
// Runs inside the VM only (npm run test:vm).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { NetnsSet, inNs, notInVm } from './lib/vm-netns.js';

const VIP = '10.102.97.154';
const REAL = ['192.168.76.141', '192.168.76.142'];
const nets = new NetnsSet(`vmd${process.pid}`);
let node = '';
let client = '';

before(async () => {
  if (notInVm !== false) return;
  node = nets.add('node');
  client = nets.add('client');
  inNs(node, 'sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
  nets.link(node, '10.0.0.1/24', client, '10.0.0.2/24');
  inNs(client, 'ip', ['route', 'add', 'default', 'via', '10.0.0.1']);
  const servers: Promise<void>[] = [];
  REAL.forEach((addr, i) => {
    const ns = nets.add(`pod${i}`);
    const [nodeEnd, podEnd] = nets.link(node, `10.1.${i}.1/32`, ns, `${addr}/24`);
    // Real servers need a route to their address before `ipvsadm -a` accepts them.
    inNs(node, 'ip', ['route', 'add', `${addr}/32`, 'dev', nodeEnd]);
    inNs(ns, 'ip', ['route', 'add', 'default', 'via', `10.1.${i}.1`, 'dev', podEnd, 'onlink']);
    servers.push(nets.serve(ns, addr, 80));
  });
  inNs(node, 'ip', ['link', 'add', 'kube-ipvs0', 'type', 'dummy']);
  inNs(node, 'ip', ['addr', 'add', `${VIP}/32`, 'dev', 'kube-ipvs0']);
  // The same lines `ipvsadm -S -n` prints, and `svcnet render --mode ipvs` will.
  inNs(
    node,
    'ipvsadm',
    ['-R'],
    [`-A -t ${VIP}:80 -s rr`, ...REAL.map((r) => `-a -t ${VIP}:80 -r ${r}:80 -m -w 1`), ''].join(
      '\n',
    ),
  );
  await Promise.all(servers);
});

after(() => {
  nets.removeAll();
});

/** The bodies of `n` fresh connections from the client to the ClusterIP. */
function curlMany(n: number): string[] {
  const answers: string[] = [];
  for (let i = 0; i < n; i++)
    answers.push(inNs(client, 'curl', ['-sS', '--max-time', '10', `http://${VIP}/`]).trim());
  return answers;
}

test('ipvsadm -L -n lists the virtual server and its Masq real servers', { skip: notInVm }, () => {
  const listing = inNs(node, 'ipvsadm', ['-L', '-n']);
  console.log(listing);
  assert.match(listing, new RegExp(`^TCP  ${VIP.replaceAll('.', '\\.')}:80 rr\\s*$`, 'm'));
  for (const r of REAL)
    assert.match(
      listing,
      new RegExp(`^ {2}-> ${r.replaceAll('.', '\\.')}:80 +Masq +1 +\\d+ +\\d+\\s*$`, 'm'),
    );
  const saved = inNs(node, 'ipvsadm', ['-S', '-n']);
  assert.match(saved, new RegExp(`^-A -t ${VIP.replaceAll('.', '\\.')}:80 -s rr\\s*$`, 'm'));
});

test(
  'connections through the ClusterIP reach both real servers in turn (rr)',
  {
    skip: notInVm,
  },
  () => {
    const answers = curlMany(4);
    console.log(`answers: ${answers.join(' ')}`);
    for (const r of REAL)
      assert.equal(answers.filter((a) => a === r).length, 2, `${r} in ${answers.join(' ')}`);
    assert.notEqual(answers[0], answers[1], 'rr alternates');
  },
);

test('a real server of weight 0 (terminating) gets no new connections', { skip: notInVm }, () => {
  inNs(node, 'ipvsadm', ['-e', '-t', `${VIP}:80`, '-r', `${REAL[1] ?? ''}:80`, '-m', '-w', '0']);
  try {
    assert.deepEqual(curlMany(3), [REAL[0], REAL[0], REAL[0]]);
  } finally {
    inNs(node, 'ipvsadm', ['-e', '-t', `${VIP}:80`, '-r', `${REAL[1] ?? ''}:80`, '-m', '-w', '1']);
  }
});

test(
  'persistence (ClientIP affinity) keeps one client on one real server',
  {
    skip: notInVm,
  },
  () => {
    inNs(node, 'ipvsadm', ['-E', '-t', `${VIP}:80`, '-s', 'rr', '-p', '10800']);
    try {
      const answers = curlMany(4);
      assert.equal(new Set(answers).size, 1, answers.join(' '));
      assert.ok(REAL.includes(answers[0] ?? ''), answers.join(' '));
      assert.match(inNs(node, 'ipvsadm', ['-L', '-n']), /rr persistent 10800/);
    } finally {
      inNs(node, 'ipvsadm', ['-E', '-t', `${VIP}:80`, '-s', 'rr']);
    }
  },
);
