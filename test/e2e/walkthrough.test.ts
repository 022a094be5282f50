// The README's walkthrough, checked: the examples/lab manifests come up, `curl nginx-svc:3000`
// from a Pod is answered by more than one nginx Pod, the short, namespaced and full names of
// the Service resolve through the Pod's search path, and the NodePort answers on every node.
// Modelled on sig-network "Services should serve a basic endpoint from pods" and
// "DNS should provide DNS for services".

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { E2eLab, e2eSkipReason, eventually } from './lib/lab.js';

const skip = e2eSkipReason();
const examples = join(import.meta.dirname, '..', '..', 'examples', 'lab');

describe('walkthrough (examples/lab)', { skip }, () => {
  let lab: E2eLab;

  before(async () => {
    lab = await E2eLab.up('w');
    for (const f of readdirSync(examples).sort())
      await lab.apply(readFileSync(join(examples, f), 'utf8'));
    await lab.podsReady('default', ['client', 'web-0', 'web-1']);
    await eventually('nginx-svc to have 3 endpoints', async () =>
      (await lab.endpoints('default', 'nginx-svc')).length === 3 ? true : undefined,
    );
  });
  after(async () => {
    await lab.down();
  });

  test('curl nginx-svc:3000/hostname from a Pod reaches more than one nginx Pod', async () => {
    const seen = new Set<string>();
    await eventually(
      'answers from 2 different nginx Pods',
      async () => {
        const r = await lab.curl('client', 'http://nginx-svc:3000/hostname');
        assert.equal(r.code, 0, `curl failed with ${String(r.code)}`);
        assert.match(r.body, /^nginx-[a-z0-9]+-[a-z0-9]{5}$/);
        seen.add(r.body);
        return seen.size >= 2;
      },
      30_000,
      0,
    );
  });

  test('nginx-svc, nginx-svc.default and the full name resolve to the ClusterIP', async () => {
    const ip = (await lab.service('default', 'nginx-svc'))?.spec?.clusterIP ?? '';
    assert.match(ip, /^10\.(9[6-9]|10[0-9]|11[01])\./);
    assert.deepEqual(await lab.dig('client', ['nginx-svc'], true), [ip]);
    assert.deepEqual(await lab.dig('client', ['nginx-svc.default'], true), [ip]);
    assert.deepEqual(await lab.dig('client', ['nginx-svc.default.svc.cluster.local']), [ip]);
  });

  test('the NodePort answers on every node address, from every node', async () => {
    for (const from of lab.nodes)
      for (const to of lab.nodes) {
        const r = await lab.curl(from.name, `http://${to.ip}:30080/hostname`);
        assert.equal(r.code, 0, `${from.name} -> ${to.ip}:30080 failed (${String(r.code)})`);
        assert.match(r.body, /^nginx-/);
      }
  });
});
