// The README's walkthrough, checked: the examples/lab manifests come up, `curl nginx-svc:3000`
// from a Pod is answered by more than one nginx Pod, the short, namespaced and full names of
// the Service resolve through the Pod's search path, and the NodePort answers on every node.
// Modelled on sig-network "Services should serve a basic endpoint from pods" and
// "DNS should provide DNS for services".

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { E2eLab, e2eSkipReason, eventually, netexecPod } from './lib/lab.js';
import { skipOrFail } from '../integration/lib/prereq.js';

const skip = skipOrFail(e2eSkipReason());
const examples = join(import.meta.dirname, '..', '..', 'examples', 'lab');

describe('walkthrough (examples/lab)', { skip }, () => {
  let lab: E2eLab;

  before(async () => {
    lab = await E2eLab.up('w');
    for (const f of readdirSync(examples).sort())
      await lab.apply(readFileSync(join(examples, f), 'utf8'));
    // As `lab up -f examples/lab` does: the NodePort test below asks every node at once, so
    // every proxy must have programmed the examples first.
    await lab.settled();
    assert.equal((await lab.endpoints('default', 'nginx-svc')).length, 3);
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

  // Not a sig-network test: the kubelet's promise that restarting it leaves running Pods alone.
  test('restarting a node agent leaves its Pods running, with the same IPs', async () => {
    const before = await lab.pod('default', 'client');
    const node = before?.spec?.nodeName ?? '';
    const ip = before?.status?.podIP ?? '';
    assert.notEqual(ip, '');
    await lab.restart(`agent-${node}`);
    const log = join(lab.lab.stateDir, 'logs', `agent-${node}.log`);
    await eventually('the new agent to take the client Pod over', () =>
      Promise.resolve(
        readFileSync(log, 'utf8')
          .split('\n')
          .some((l) => l.includes('"pod":"default/client"') && l.includes('Pod adopted')),
      ),
    );
    const pod = (await lab.podsReady('default', ['client']))[0];
    assert.equal(pod?.status?.podIP, ip, 'the Pod keeps its address');
    assert.equal(
      pod.status.startTime,
      before?.status?.startTime,
      'and its server was not restarted',
    );
    const other = lab.nodes.find((n) => n.name !== node)?.name ?? '';
    const r = await lab.curl(other, `http://${ip}:8080/hostname`);
    assert.deepEqual(r, { code: 0, body: 'client' });
    // The restarted agent still starts and stops Pods on its node.
    await lab.apply([netexecPod('default', 'after-restart', { node })]);
    await lab.podsReady('default', ['after-restart']);
    await lab.deleteObject('Pod', 'default', 'after-restart', 0);
    await eventually('after-restart to be gone', async () =>
      (await lab.pod('default', 'after-restart')) === undefined ? true : undefined,
    );
    assert.deepEqual(await lab.curl('client', 'http://127.0.0.1:8080/hostname'), {
      code: 0,
      body: 'client',
    });
  });
});
