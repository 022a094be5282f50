import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planComponents, labPaths } from './components.js';
import { planLab } from './topology.js';

test('the control plane runs in the first node, the load balancer in the hub; every node gets an agent (the proxies are DaemonSet Pods)', () => {
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
      'node-1 agent-svcnet-worker',
    ],
  );
  const api = specs[0]!;
  assert.deepEqual(api.args.slice(0, 3), ['apiserver', '--listen', '172.18.0.2:6443']);
  assert.deepEqual(api.ready, { kind: 'file', path: '/run/x/cluster.kubeconfig' });
  // Objects, token and certificate survive a restart of the API server.
  assert.equal(api.args[api.args.indexOf('--data-dir') + 1], '/run/x/apiserver');
  const lb = specs.find((s) => s.name === 'lb-controller')!;
  assert.ok(lb.args.join(' ').includes('--lb-pool 172.18.255.200-172.18.255.250'));
});

test('the agents make their kubelet chains in the iptables backend the proxies use (iptables mode only)', () => {
  const variantOf = (opts: { proxyMode?: 'nftables' }): string[] =>
    planComponents(planLab({ nodes: 2 }), labPaths('/s'), {
      cni: 'svcnet',
      cniBinDir: '/b',
      iptablesVariant: 'legacy',
      ...opts,
    })
      .filter((s) => s.name.startsWith('agent-'))
      .map((s) =>
        s.args.includes('--iptables-variant')
          ? (s.args[s.args.indexOf('--iptables-variant') + 1] ?? '')
          : 'none',
      );
  assert.deepEqual(variantOf({}), ['legacy', 'legacy']);
  assert.deepEqual(variantOf({ proxyMode: 'nftables' }), ['none', 'none']);
});

test('--cni reference reaches every agent', () => {
  const specs = planComponents(planLab({ nodes: 3 }), labPaths('/s'), {
    cni: 'reference',
    cniBinDir: '/b',
  });
  assert.equal(specs.filter((s) => s.args.includes('reference')).length, 3);
});

test('a flannel lab runs no flannel process of its own (kube-flannel is a DaemonSet); the agents learn the pod network', () => {
  const specs = planComponents(planLab({ nodes: 2, podNetwork: 'flannel' }), labPaths('/run/x'), {
    cni: 'svcnet',
    cniBinDir: '/b',
  });
  assert.ok(!specs.some((s) => s.name.startsWith('flannel-') || s.args[0] === 'flannel'));
  const agent = specs.find((s) => s.name === 'agent-svcnet-worker')!;
  assert.equal(agent.args[agent.args.indexOf('--pod-network') + 1], 'flannel');
});

test('kindnet and kubenet labs run no flannel agent; kindnet agents get no --pod-network', () => {
  for (const podNetwork of ['kindnet', 'kubenet'] as const) {
    const specs = planComponents(planLab({ nodes: 2, podNetwork }), labPaths('/run/x'), {
      cni: 'svcnet',
      cniBinDir: '/b',
    });
    assert.ok(!specs.some((s) => s.name.startsWith('flannel-')));
    const agent = specs.find((s) => s.name === 'agent-svcnet-worker')!;
    assert.equal(agent.args.includes('--pod-network'), podNetwork === 'kubenet');
  }
});
