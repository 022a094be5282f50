import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DataDir } from './persist.js';
import { CONFIGMAPS, SERVICES } from './resources.js';
import { newTestApi } from './testing.js';
import { certCovers, createServingCert } from './x509.js';

describe('data dir', () => {
  it('replays snapshot + log into an equal store and ignores a torn last line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcnet-persist-'));
    try {
      const dd = new DataDir(dir, { compactEvery: 5 });
      dd.load();
      dd.open();
      const api = newTestApi({
        onCommit: (c) => {
          dd.append(c);
        },
      });
      for (let i = 0; i < 8; i++)
        api.store.create(CONFIGMAPS, 'default', {
          metadata: { name: `c${i}` },
          data: { i: String(i) },
        });
      api.store.delete(CONFIGMAPS, 'default', 'c3');
      const svc = api.store.create(SERVICES, 'default', {
        metadata: { name: 'web' },
        spec: { ports: [{ port: 80 }] },
      });
      dd.close();
      appendFileSync(
        join(dir, 'wal.jsonl'),
        '{"rv":99999,"op":"put","r":"configmaps","k":"default/x"',
      );

      const again = new DataDir(dir);
      const state = again.load();
      assert.equal(state.rv, api.store.resourceVersion);
      const fresh = newTestApi();
      fresh.store.load(state.objects, state.rv);
      assert.equal(fresh.store.tryGet(CONFIGMAPS, 'default', 'c3'), undefined);
      assert.deepEqual(fresh.store.get(CONFIGMAPS, 'default', 'c7').data, { i: '7' });
      assert.equal(fresh.store.tryGet(CONFIGMAPS, 'default', 'x'), undefined);
      assert.deepEqual(fresh.store.get(SERVICES, 'default', 'web'), svc);
      // the allocator knows the restored IP is taken
      const ip = (svc.spec as { clusterIP: string }).clusterIP;
      assert.ok(fresh.services.ipAllocators[0]?.has(ip));
      assert.equal(
        again.token(() => 'first'),
        'first',
      );
      assert.equal(
        new DataDir(dir).token(() => 'second'),
        'first',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('serving certificate', () => {
  it('covers the requested IPs and names and nothing else', () => {
    const pair = createServingCert(['127.0.0.1', '10.96.0.1', 'kubernetes.default.svc']);
    assert.ok(certCovers(pair, ['127.0.0.1', '10.96.0.1', 'kubernetes.default.svc']));
    assert.ok(!certCovers(pair, ['192.168.1.1']));
    assert.ok(!certCovers(pair, ['example.com']));
  });
});
