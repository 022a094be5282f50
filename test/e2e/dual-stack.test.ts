// `svcnet lab up --ip-family dual`: IPv4 and IPv6 together, as kind's dual-stack clusters.
// Nodes and Pods carry an address of each family, a PreferDualStack Service gets a ClusterIP of
// each (kubectl shows both) and an EndpointSlice of each, every proxy programs both families,
// and the cluster DNS answers AAAA and IPv6 PTR. Checked the way a user would: curl to
// [ClusterIPv6]:port from a Pod reaches the endpoints on both nodes; Pod to Pod over IPv6
// across nodes keeps the client's address; a NodePort answers on the node's IPv6 address
// from the outside host; an IPv6-only Service (ipFamilies [IPv6]) works too.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { E2eLab, e2eSkipReason, eventually, netexecPod } from './lib/lab.js';
import { skipOrFail } from '../integration/lib/prereq.js';
import { kubectl } from './lib/kubectl.js';
import type { KubeObject } from '../../src/kube/types.js';

const skip = skipOrFail(e2eSkipReason());
const NS = 'dual';

describe('lab up --ip-family dual', { skip }, () => {
  let lab: E2eLab;
  let client = '';

  before(async () => {
    lab = await E2eLab.up('ds', 3, 240_000, { ipFamily: 'dual' });
    const [cp, w1, w2] = lab.nodes;
    await lab.createNamespace(NS);
    await lab.apply([
      netexecPod(NS, 'client', { node: cp?.name ?? '' }),
      netexecPod(NS, 'web-1', { labels: { app: 'web' }, node: w1?.name ?? '' }),
      netexecPod(NS, 'web-2', { labels: { app: 'web' }, node: w2?.name ?? '' }),
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web', namespace: NS },
        spec: {
          type: 'NodePort',
          ipFamilyPolicy: 'PreferDualStack',
          selector: { app: 'web' },
          ports: [{ name: 'http', port: 80, targetPort: 8080 }],
        },
      } as KubeObject,
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web6', namespace: NS },
        spec: {
          ipFamilies: ['IPv6'],
          selector: { app: 'web' },
          ports: [{ name: 'http', port: 80, targetPort: 8080 }],
        },
      } as KubeObject,
    ]);
    await lab.podsReady(NS, ['client', 'web-1', 'web-2']);
    client = `${NS}/client`;
  });

  after(async () => {
    await lab.down();
  });

  test('Nodes and Pods have an address of each family, IPv4 first', async () => {
    const nodes = await kubectl(lab, [
      'get',
      'nodes',
      '-o',
      'jsonpath={range .items[*]}{.spec.podCIDRs}{" "}{.status.addresses[?(@.type=="InternalIP")].address}{"\\n"}{end}',
    ]);
    const lines = nodes.stdout.trim().split('\n');
    assert.equal(lines.length, 3, nodes.stdout);
    for (const l of lines)
      assert.match(
        l,
        /^\["10\.244\.\d+\.0\/24","fd00:10:244:[0-9a-f:]*\/64"\] 172\.18\.0\.\d+ fc00:f853:ccd:e793::\w+$/,
        l,
      );
    const pod = await lab.pod(NS, 'web-1');
    const ips = (pod?.status?.podIPs ?? []).map((p) => p.ip);
    assert.equal(ips.length, 2, JSON.stringify(ips));
    assert.match(ips[0] ?? '', /^10\.244\./);
    assert.match(ips[1] ?? '', /^fd00:10:244:/);
  });

  test('a PreferDualStack Service: two ClusterIPs in kubectl, a slice of each family', async () => {
    const svc = await lab.mustService(NS, 'web');
    assert.deepEqual(svc.spec?.ipFamilies, ['IPv4', 'IPv6']);
    const clusterIPs = svc.spec.clusterIPs ?? [];
    assert.match(clusterIPs[0] ?? '', /^10\.(9[6-9]|10\d|11[01])\./);
    assert.match(clusterIPs[1] ?? '', /^fd00:10:96::/);
    // kubectl get prints the first ClusterIP (as kube-apiserver's table does); describe both.
    const described = await kubectl(lab, ['describe', 'svc', '-n', NS, 'web']);
    assert.match(
      described.stdout,
      new RegExp(`^IPs:\\s+${clusterIPs[0] ?? ''},${clusterIPs[1] ?? ''}$`, 'm'),
      described.stdout,
    );
    await eventually('a ready IPv6 slice with both Pods', async () => {
      const out = await kubectl(lab, [
        'get',
        'endpointslices',
        '-n',
        NS,
        '-l',
        'kubernetes.io/service-name=web',
        '-o',
        'jsonpath={range .items[*]}{.addressType}={.endpoints[*].addresses[0]}{"\\n"}{end}',
      ]);
      const v6 = out.stdout.split('\n').find((l) => l.startsWith('IPv6='));
      return v6 !== undefined && v6.split(' ').length === 2 ? v6 : undefined;
    });
  });

  test('curl [ClusterIPv6]:80 from a Pod reaches both endpoints; the IPv4 ClusterIP still does', async () => {
    const svc = await lab.mustService(NS, 'web');
    const [v4, v6] = svc.spec?.clusterIPs ?? [];
    await lab.proxiesSynced(Date.now() - 60_000);
    const seen = new Set<string>();
    await eventually('both endpoints answering over IPv6', async () => {
      const r = await lab.curl(client, `http://[${v6 ?? ''}]:80/hostname`);
      if (r.code === 0) seen.add(r.body);
      return seen.size === 2 ? [...seen] : undefined;
    });
    assert.deepEqual([...seen].sort(), ['web-1', 'web-2']);
    const r4 = await lab.curl(client, `http://${v4 ?? ''}:80/hostname`);
    assert.equal(r4.code, 0, r4.body);
    assert.match(r4.body, /^web-[12]$/);
  });

  test('Pod to Pod over IPv6 across nodes keeps the client address', async () => {
    const clientPod = await lab.pod(NS, 'client');
    const web = await lab.pod(NS, 'web-2');
    const from6 = clientPod?.status?.podIPs?.[1]?.ip ?? '';
    const to6 = web?.status?.podIPs?.[1]?.ip ?? '';
    const r = await lab.curl(client, `http://[${to6}]:8080/clientip`);
    assert.equal(r.code, 0, r.body);
    assert.equal(r.body.replace(/^\[(.*)\]:\d+$/, '$1'), from6);
  });

  test('an IPv6-only Service (ipFamilies [IPv6]) is served', async () => {
    const svc = await lab.mustService(NS, 'web6');
    assert.deepEqual(svc.spec?.ipFamilies, ['IPv6']);
    const ip = svc.spec.clusterIP ?? '';
    assert.match(ip, /^fd00:10:96::/);
    const r = await eventually('web6 answering', async () => {
      const c = await lab.curl(client, `http://[${ip}]:80/hostname`);
      return c.code === 0 ? c : undefined;
    });
    assert.match(r.body, /^web-[12]$/);
  });

  test('the cluster DNS answers AAAA and IPv6 PTR, and A as before', async () => {
    const svc = await lab.mustService(NS, 'web');
    const [v4, v6] = svc.spec?.clusterIPs ?? [];
    const name = `web.${NS}.svc.cluster.local`;
    assert.deepEqual(await lab.dig(client, ['AAAA', name]), [v6]);
    assert.deepEqual(await lab.dig(client, ['A', name]), [v4]);
    assert.deepEqual(await lab.dig(client, ['-x', v6 ?? '']), [`${name}.`]);
    assert.deepEqual(await lab.dig(client, ['AAAA', `web6.${NS}.svc.cluster.local`]), [
      (await lab.mustService(NS, 'web6')).spec?.clusterIP,
    ]);
  });

  test("a NodePort answers on a node's IPv6 address from the outside host", async () => {
    const svc = await lab.mustService(NS, 'web');
    const port = svc.spec?.ports?.[0]?.nodePort ?? 0;
    const node = lab.nodes[1] as { ip6?: string } | undefined;
    const ip6 = node?.ip6 ?? '';
    assert.match(ip6, /^fc00:f853:ccd:e793::/);
    const r = await lab.curl('outside', `http://[${ip6}]:${String(port)}/hostname`);
    assert.equal(r.code, 0, r.body);
    assert.match(r.body, /^web-[12]$/);
  });
});
