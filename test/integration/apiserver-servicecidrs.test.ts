// ServiceCIDRs through `svcnet apiserver` with the machine's default kubectl and the
// informer the proxy uses: the default `kubernetes` ServiceCIDR holds
// --service-cluster-ip-range and prints as NAME, CIDRS, AGE; kubectl applies another (and
// the server refuses a non-canonical one with 422); the SERVICE_CIDRS informer lists and
// watches them. Loopback only.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startApiServer, type RunningApiServer } from '../../src/apiserver/daemon.js';
import { SERVICE_CIDRS, createInformer, loadKubeConfig } from '../../src/kube/client.js';
import type { Informer } from '../../src/kube/informer.js';
import { serviceCIDRsOf } from '../../src/kube/service-cidr.js';
import type { ServiceCIDR } from '../../src/kube/types.js';
import { findKubectls, KubectlRunner, tableRows } from './lib/apiserver-kubectl.js';
import { skipOrFail } from './lib/prereq.js';

const EXTRA = `apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: extra}
spec: {cidrs: [10.200.0.0/16]}
`;

async function waitFor(what: string, cond: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const kubectl = findKubectls().find((k) => k.minor === undefined);

describe(
  'ServiceCIDRs in svcnet apiserver',
  {
    skip: skipOrFail(
      kubectl === undefined ? 'no kubectl installed; install: bash scripts/install-deps.sh' : false,
    ),
  },
  () => {
    let server: RunningApiServer;
    let dir: string;
    let kubeconfig: string;
    let informer: Informer<ServiceCIDR> | undefined;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'svcnet-apiserver-servicecidrs-'));
      server = await startApiServer({ listen: '127.0.0.1:0', serviceCIDRs: ['10.96.0.0/16'] });
      kubeconfig = join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, server.kubeconfig());
    });

    after(async () => {
      await informer?.stop();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('kubectl gets and applies them; the informer lists and watches them', async () => {
      const kc = new KubectlRunner(kubectl ?? assert.fail(), kubeconfig);
      const rows = tableRows(await kc.ok(['get', 'servicecidrs']));
      assert.deepEqual(rows[0], ['NAME', 'CIDRS', 'AGE']);
      assert.deepEqual(rows[1]?.slice(0, 2), ['kubernetes', '10.96.0.0/16']);
      assert.equal(
        await kc.ok([
          'get',
          'servicecidr',
          'kubernetes',
          '-o',
          'jsonpath={.status.conditions[0].type}={.status.conditions[0].status}',
        ]),
        'Ready=True',
      );

      informer = createInformer<ServiceCIDR>(loadKubeConfig(kubeconfig), SERVICE_CIDRS, {
        initialBackoffMs: 100,
      });
      await informer.start();
      assert.deepEqual(serviceCIDRsOf(informer.list()), ['10.96.0.0/16']);

      assert.match(
        await kc.ok(['apply', '-f', '-'], { stdin: EXTRA }),
        /servicecidr.networking.k8s.io\/extra created/,
      );
      await waitFor('the watch delivers extra', () => informer?.get('extra') !== undefined);
      assert.deepEqual(serviceCIDRsOf(informer.list()), ['10.200.0.0/16', '10.96.0.0/16']);

      const bad = await kc.run(['apply', '-f', '-'], {
        stdin: EXTRA.replace('extra', 'bad').replace('10.200.0.0', '10.201.0.1'),
      });
      assert.notEqual(bad.code, 0);
      assert.match(
        bad.stderr,
        /spec\.cidrs\[0\]: Invalid value: "10\.201\.0\.1\/16": must be in canonical form/,
      );

      // kubectl create (protobuf on 1.32+; this kind falls back to JSON after a 415).
      assert.match(
        await kc.ok(['create', '-f', '-'], {
          stdin: EXTRA.replace('extra', 'made').replace('10.200.', '10.202.'),
        }),
        /servicecidr.networking.k8s.io\/made created/,
      );
      assert.match(await kc.ok(['delete', 'servicecidr', 'extra', 'made']), /deleted/);
      await waitFor('the watch delivers the delete', () => informer?.get('extra') === undefined);
    });
  },
);
