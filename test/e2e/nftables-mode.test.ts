// The lab in nftables mode (SVCNET_E2E_PROXY_MODE=nftables; skipped in the iptables pass): a
// node's `ip kube-proxy` table holds the Service's chains and map elements and its
// `iptables-save` holds no KUBE-SVC chain (the proxy removes iptables mode's leftovers at
// start), cluster-ips-check drops unallocated ClusterIPs of the default ServiceCIDR,
// `/proxyMode` says nftables, and the Service answers through those rules. The issue's
// "Must show" for the lab, modelled on sig-network "Services should serve a basic endpoint
// from pods".

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { service } from '../../src/kube/testing.js';
import { planLab } from '../../src/lab/topology.js';
import { E2E_PROXY_MODE, E2eLab, e2eSkipReason, eventually, netexecPod } from './lib/lab.js';
import { skipOrFail } from '../integration/lib/prereq.js';

const NS = 'nft-mode';
const skip =
  E2E_PROXY_MODE === 'nftables'
    ? skipOrFail(e2eSkipReason())
    : 'nftables mode only (SVCNET_E2E_PROXY_MODE=nftables)';

describe('the lab in nftables mode', { skip }, () => {
  let lab: E2eLab;
  let worker = '';

  before(async () => {
    lab = await E2eLab.up('n');
    worker = lab.nodes[1]?.name ?? '';
    await lab.createNamespace(NS);
    await lab.apply([
      netexecPod(NS, 'backend-a', { labels: { app: 'backend' }, node: lab.nodes[1]?.name ?? '' }),
      netexecPod(NS, 'backend-b', { labels: { app: 'backend' }, node: lab.nodes[2]?.name ?? '' }),
      service(`${NS}/web`, {
        selector: { app: 'backend' },
        ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
      }),
    ]);
    await lab.podsReady(NS, ['backend-a', 'backend-b']);
    await lab.settled();
  });
  after(async () => {
    await lab.down();
  });

  test("a node's nft list table ip kube-proxy shows the service chains; iptables-save shows no KUBE-SVC chain", async () => {
    const ip = (await lab.service(NS, 'web'))?.spec?.clusterIP ?? '';
    assert.notEqual(ip, '');
    const table = await lab.exec(worker, ['nft', 'list', 'table', 'ip', 'kube-proxy']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^\s*chain services \{$/m);
    assert.match(table.stdout, /^\s*chain service-[A-Z0-9]{8}-nft-mode\/web\/tcp\/http \{$/m);
    // The ClusterIP's element in the service-ips verdict map points at that chain.
    assert.match(
      table.stdout,
      new RegExp(
        `${ip.replaceAll('.', '\\.')} \\. tcp \\. 80 : goto service-[A-Z0-9]{8}-nft-mode/web/tcp/http`,
      ),
    );
    // The default ServiceCIDR `kubernetes` (the lab's service range) reached the proxy: traffic
    // to an unallocated ClusterIP in it is dropped (nft may print a one-element set bare).
    const cidr = planLab().serviceCIDR.replaceAll('.', '\\.');
    await eventually('the ServiceCIDR drop rule', async () => {
      const t = await lab.exec(worker, [
        'nft',
        'list',
        'chain',
        'ip',
        'kube-proxy',
        'cluster-ips-check',
      ]);
      return new RegExp(
        `ip daddr (\\{ )?${cidr}( \\})? drop comment "Drop traffic to unallocated ClusterIPs"`,
      ).test(t.stdout);
    });
    for (const argv of [['iptables-save'], ['iptables-legacy-save']]) {
      const save = await lab.exec(worker, argv);
      assert.doesNotMatch(save.stdout, /KUBE-SVC-/, `${argv[0] ?? ''} has KUBE-SVC chains`);
    }
    const mode = await lab.curl(worker, 'http://127.0.0.1:10249/proxyMode');
    assert.deepEqual(mode, { code: 0, body: 'nftables' });
  });

  test('the ClusterIP reaches both backends from a node', async () => {
    const ip = (await lab.service(NS, 'web'))?.spec?.clusterIP ?? '';
    const seen = new Set<string>();
    await eventually(
      'answers from both backends',
      async () => {
        const r = await lab.curl(lab.nodes[0]?.name ?? '', `http://${ip}/hostname`);
        assert.equal(r.code, 0, `curl ${ip} exited ${String(r.code)}`);
        seen.add(r.body);
        return seen.size >= 2;
      },
      30_000,
      0,
    );
    assert.deepEqual([...seen].sort(), ['backend-a', 'backend-b']);
  });
});
