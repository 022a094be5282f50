import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseNetConf } from '../podnet/parse-net-conf.js';
import type { Container, KubeObject, PodSpec } from '../kube/types.js';
import { flannelAddon } from './flannel-addon.js';
import { planLab } from './topology.js';

const kinds = (list: readonly KubeObject[]): string[] =>
  list.map((o) => `${o.kind ?? ''}/${o.metadata?.name ?? ''}`);

test("a flannel lab applies deploy/flannel.yaml: kube-flannel-cfg with the lab's network and backend", () => {
  for (const [podNetwork, type] of [
    ['flannel', 'vxlan'],
    ['flannel-host-gw', 'host-gw'],
  ] as const) {
    const list = flannelAddon(planLab({ podNetwork }), '/run/lab');
    assert.deepEqual(kinds(list), [
      'ServiceAccount/flannel',
      'ClusterRole/svcnet:flannel',
      'ClusterRoleBinding/svcnet:flannel',
      'Role/svcnet:flannel',
      'RoleBinding/svcnet:flannel',
      'ConfigMap/kube-flannel-cfg',
      'DaemonSet/kube-flannel',
    ]);
    const cm = list.find((o) => o.kind === 'ConfigMap');
    assert.equal(cm?.metadata?.namespace, 'kube-system');
    const text = (cm as { data: Record<string, string> }).data['net-conf.json'] ?? '';
    const conf = parseNetConf(text, 'kube-flannel-cfg');
    assert.equal(conf.network, '10.244.0.0/16');
    assert.equal(conf.backend.type, type);
  }
});

test('the lab runs only the agent container: what installs CNI on a real node is the node agent here', () => {
  const ds = flannelAddon(planLab({ podNetwork: 'flannel' }), '/run/lab').find(
    (o) => o.kind === 'DaemonSet',
  ) as { spec: { template: { spec: PodSpec & { initContainers?: Container[] } } } };
  const pod = ds.spec.template.spec;
  assert.equal(pod.hostNetwork, true);
  assert.equal(pod.initContainers, undefined);
  assert.deepEqual(
    pod.containers.map((c) => c.name),
    ['kube-flannel'],
  );
  const [agent] = pod.containers;
  assert.ok(agent);
  assert.deepEqual(agent.command, [
    'svcnet',
    'flannel',
    '--ip-masq',
    '--iface',
    'eth0',
    '--subnet-file',
    '/run/lab/nodes/$(NODE_NAME)/flannel/subnet.env',
  ]);
  assert.ok(
    (agent.env ?? []).some((e) => e.name === 'NODE_NAME'),
    'NODE_NAME from the downward API, as the manifest has it',
  );
});

test('kindnet and kubenet labs get no flannel objects', () => {
  assert.deepEqual(flannelAddon(planLab(), '/run/lab'), []);
  assert.deepEqual(flannelAddon(planLab({ podNetwork: 'kubenet' }), '/run/lab'), []);
});
