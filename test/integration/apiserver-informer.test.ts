// svcnet's informers (src/kube/client.ts) against `svcnet apiserver` over
// HTTPS with its bearer token: list+watch, surviving an API server restart on a --data-dir,
// and relisting after 410 Expired when changes happened beyond the server's watch history.
// Loopback only.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startApiServer, type RunningApiServer } from '../../src/apiserver/daemon.js';
import { SERVICES as SERVICE_RESOURCE } from '../../src/apiserver/resources.js';
import { SERVICES, createInformer, loadKubeConfig } from '../../src/kube/client.js';
import type { Informer } from '../../src/kube/informer.js';
import type { Service } from '../../src/kube/types.js';

async function waitFor(what: string, cond: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const svc = (name: string) => ({
  metadata: { name },
  spec: { selector: { app: name }, ports: [{ port: 80 }] },
});

describe('informers against svcnet apiserver', () => {
  let dir: string;
  let server: RunningApiServer | undefined;
  let informer: Informer<Service> | undefined;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'svcnet-apiserver-informer-'));
  });

  after(async () => {
    await informer?.stop();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists, watches, survives a restart and relists on 410', async () => {
    const dataDir = join(dir, 'data');
    server = await startApiServer({ listen: '127.0.0.1:0', dataDir, historySize: 50 });
    const port = server.port;
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, server.kubeconfig());
    assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);

    const events: string[] = [];
    informer = createInformer<Service>(loadKubeConfig(kubeconfig), SERVICES, {
      initialBackoffMs: 100,
      maxBackoffMs: 500,
    });
    informer.addHandlers({
      onAdd: (o) => events.push(`add ${o.metadata?.name ?? ''}`),
      onUpdate: (_, o) => events.push(`update ${o.metadata?.name ?? ''}`),
      onDelete: (o) => events.push(`delete ${o.metadata?.name ?? ''}`),
    });
    await informer.start();
    assert.ok(informer.get('default/kubernetes'), 'the list delivered default/kubernetes');

    // watch: add, update, delete
    server.store.create(SERVICE_RESOURCE, 'default', svc('a'));
    server.store.create(SERVICE_RESOURCE, 'default', svc('gone'));
    await waitFor(
      'watch ADDED',
      () => informer?.get('default/a') !== undefined && informer.get('default/gone') !== undefined,
    );
    const a = server.store.get(SERVICE_RESOURCE, 'default', 'a');
    server.store.update(SERVICE_RESOURCE, 'default', 'a', {
      ...a,
      metadata: { ...a.metadata, labels: { v: '2' } },
    });
    server.store.delete(SERVICE_RESOURCE, 'default', 'gone');
    await waitFor(
      'watch MODIFIED and DELETED',
      () =>
        informer?.get('default/a')?.metadata?.labels?.v === '2' &&
        informer.get('default/gone') === undefined,
    );
    const clusterIP = informer.get('default/a')?.spec?.clusterIP;

    // restart on the same data dir and port: nothing is lost, the watch resumes
    await server.close();
    server = await startApiServer({ listen: `127.0.0.1:${port}`, dataDir, historySize: 50 });
    assert.equal(
      (server.store.get(SERVICE_RESOURCE, 'default', 'a') as Service).spec?.clusterIP,
      clusterIP,
      'objects survive the restart',
    );
    server.store.create(SERVICE_RESOURCE, 'default', svc('after-restart'));
    await waitFor(
      'events after the restart',
      () => informer?.get('default/after-restart') !== undefined,
    );

    // changes made while the informer could not watch, beyond the watch history: 410, relist
    await server.close();
    const offline = await startApiServer({ listen: '127.0.0.1:0', dataDir, historySize: 50 });
    offline.store.delete(SERVICE_RESOURCE, 'default', 'a');
    offline.store.create(SERVICE_RESOURCE, 'default', svc('while-away'));
    await offline.close();
    server = await startApiServer({ listen: `127.0.0.1:${port}`, dataDir, historySize: 50 });
    await waitFor(
      'relist after 410',
      () =>
        informer?.get('default/while-away') !== undefined &&
        informer.get('default/a') === undefined,
    );
    assert.ok(events.includes('delete a'), events.join(', '));
    assert.deepEqual(
      informer
        .list()
        .map((s) => s.metadata?.name)
        .sort(),
      ['after-restart', 'kubernetes', 'while-away'],
    );
  });
});
