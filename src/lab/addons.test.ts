import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseNetConf } from '../podnet/parse-net-conf.js';
import { flannelAddon } from './addons.js';
import { planLab } from './topology.js';

test("a flannel lab gets kube-flannel-cfg with the cluster network and the network's backend", () => {
  for (const [podNetwork, type] of [
    ['flannel', 'vxlan'],
    ['flannel-host-gw', 'host-gw'],
  ] as const) {
    const list = flannelAddon(planLab({ podNetwork }));
    assert.equal(list.length, 1);
    const cm = list[0];
    assert.equal(cm?.kind, 'ConfigMap');
    assert.deepEqual(
      [cm.metadata?.namespace, cm.metadata?.name],
      ['kube-system', 'kube-flannel-cfg'],
    );
    const text = (cm as { data: Record<string, string> }).data['net-conf.json'] ?? '';
    const conf = parseNetConf(text, 'kube-flannel-cfg');
    assert.equal(conf.network, '10.244.0.0/16');
    assert.equal(conf.backend.type, type);
  }
});

test('kindnet and kubenet labs get no flannel ConfigMap', () => {
  assert.deepEqual(flannelAddon(planLab()), []);
  assert.deepEqual(flannelAddon(planLab({ podNetwork: 'kubenet' })), []);
});
