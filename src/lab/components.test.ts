import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planComponents, labPaths } from './components.js';
import { planLab } from './topology.js';

test('the control plane runs in the first node, the load balancer in the hub; every node gets an agent and a proxy', () => {
  const specs = planComponents(planLab({ nodes: 2 }), labPaths('/run/x'), {
    cni: 'svcnet',
    cniBinDir: '/b',
  });
  assert.deepEqual(
    specs.map((s) => `${s.netns} ${s.name}`),
    [
      'node-0 apiserver',
      'node-0 apiserver-socket',
      'node-0 controller',
      'hub lb-controller',
      'node-0 agent-svcnet-control-plane',
      'node-0 proxy-svcnet-control-plane',
      'node-1 agent-svcnet-worker',
      'node-1 proxy-svcnet-worker',
    ],
  );
  const api = specs[0]!;
  assert.deepEqual(api.args.slice(0, 3), ['apiserver', '--listen', '172.18.0.2:6443']);
  assert.deepEqual(api.ready, { kind: 'file', path: '/run/x/cluster.kubeconfig' });
  // Objects, token and certificate survive a restart of the API server.
  assert.equal(api.args[api.args.indexOf('--data-dir') + 1], '/run/x/apiserver');
  const proxy = specs.find((s) => s.name === 'proxy-svcnet-worker')!;
  assert.ok(proxy.args.includes('--hostname-override') && proxy.args.includes('svcnet-worker'));
  assert.ok(proxy.args.join(' ').includes('--cluster-cidr 10.244.0.0/16'));
  const lb = specs.find((s) => s.name === 'lb-controller')!;
  assert.ok(lb.args.join(' ').includes('--lb-pool 172.18.255.200-172.18.255.250'));
});

test('--proxy-mode reaches every node proxy (iptables by default)', () => {
  const modeOf = (opts: { proxyMode?: 'nftables' }): string[] =>
    planComponents(planLab({ nodes: 3 }), labPaths('/s'), {
      cni: 'svcnet',
      cniBinDir: '/b',
      ...opts,
    })
      .filter((s) => s.name.startsWith('proxy-'))
      .map((s) => s.args[s.args.indexOf('--proxy-mode') + 1] ?? '');
  assert.deepEqual(modeOf({}), ['iptables', 'iptables', 'iptables']);
  assert.deepEqual(modeOf({ proxyMode: 'nftables' }), ['nftables', 'nftables', 'nftables']);
});

test('--cni reference reaches every agent', () => {
  const specs = planComponents(planLab({ nodes: 3 }), labPaths('/s'), {
    cni: 'reference',
    cniBinDir: '/b',
  });
  assert.equal(specs.filter((s) => s.args.includes('reference')).length, 3);
});
