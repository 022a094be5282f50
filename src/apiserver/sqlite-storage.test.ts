import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CONFIGMAPS, PODS, SERVICES } from './resources.js';
import { createApiServer } from './server.js';
import { SqliteStorage } from './sqlite-storage.js';
import { ApiError } from './status.js';
import type { HistoryLimits, WatchEvent } from './store.js';
import { newTestApi, type TestApi } from './testing.js';
import { certCovers, createServingCert } from './x509.js';

let dir = '';
const open: SqliteStorage[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'svcnet-sqlite-'));
});
afterEach(() => {
  for (const s of open.splice(0)) s.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A bootstrapped API on the data dir, as the daemon builds it (load, then bootstrap). */
async function start(
  opts: { quotaBytes?: number; history?: HistoryLimits; warn?: (m: string) => void } = {},
): Promise<TestApi & { storage: SqliteStorage }> {
  const storage = new SqliteStorage(dir, {
    ...(opts.quotaBytes !== undefined ? { quotaBytes: opts.quotaBytes } : {}),
    ...(opts.warn ? { warn: opts.warn } : {}),
  });
  open.push(storage);
  const state = storage.load();
  const api = newTestApi({
    backend: storage,
    ...(opts.history ? { history: opts.history } : {}),
    load: (store) => {
      store.load(state.objects, state.rv, { floor: state.floor, revisions: state.revisions });
    },
  });
  await api.store.durable();
  return { ...api, storage };
}

async function failure(p: Promise<void> | undefined): Promise<ApiError> {
  assert.ok(p, 'a commit is pending');
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ApiError, `want an ApiError, got ${String(e)}`);
    return e;
  }
  assert.fail('the commit succeeded');
}

function cm(name: string, data: Record<string, string>): Record<string, unknown> {
  return { metadata: { name }, data };
}

describe('SQLite storage', () => {
  it('restarts into an equal store, allocators included', async () => {
    const a = await start();
    for (let i = 0; i < 8; i++) a.store.create(CONFIGMAPS, 'default', cm(`c${i}`, { i: `${i}` }));
    a.store.delete(CONFIGMAPS, 'default', 'c3');
    const svc = a.store.create(SERVICES, 'default', {
      metadata: { name: 'web' },
      spec: { ports: [{ port: 80 }] },
    });
    await a.store.durable();
    const rv = a.store.resourceVersion;
    a.storage.close();

    const b = await start();
    assert.equal(b.store.resourceVersion, rv);
    assert.equal(b.store.tryGet(CONFIGMAPS, 'default', 'c3'), undefined);
    assert.deepEqual(b.store.get(CONFIGMAPS, 'default', 'c7').data, { i: '7' });
    assert.deepEqual(b.store.get(SERVICES, 'default', 'web'), svc);
    const ip = (svc.spec as { clusterIP: string }).clusterIP;
    assert.ok(b.services.ipAllocators[0]?.has(ip), 'the restored ClusterIP is taken');
  });

  it('commits the writes of one turn together, and shows them only once durable', async () => {
    const a = await start();
    const seen: string[] = [];
    a.store.watch(CONFIGMAPS, 'default', {}, (e) => seen.push(e.object.metadata.name ?? ''));
    a.store.create(CONFIGMAPS, 'default', cm('x', { a: '1' }));
    a.store.create(CONFIGMAPS, 'default', cm('y', { a: '1' }));
    // staged: the next write sees them, lists and watches do not yet
    assert.ok(a.store.tryGet(CONFIGMAPS, 'default', 'x'));
    assert.equal(a.store.list(CONFIGMAPS, 'default').items.length, 0);
    assert.deepEqual(seen, []);
    await a.store.durable();
    assert.deepEqual(seen, ['x', 'y']);
    assert.equal(a.store.list(CONFIGMAPS, 'default').items.length, 2);
    const rows = a.storage.db
      .prepare("SELECT count(*) AS n FROM revisions WHERE resource = 'configmaps'")
      .get() as { n: number };
    assert.equal(rows.n, 2);
  });

  it('a write that fails in SQLite leaves no trace in memory, watches or after restart', async () => {
    const a = await start();
    const events: WatchEvent[] = [];
    const rv0 = a.store.resourceVersion;
    a.store.watch(CONFIGMAPS, undefined, { resourceVersion: String(rv0) }, (e) => events.push(e));
    // SQLite itself refuses: the database may not grow past its current size.
    const pages = Number(a.storage.db.pragma('page_count', { simple: true }));
    a.storage.db.pragma(`max_page_count = ${pages}`);
    a.store.create(CONFIGMAPS, 'default', cm('big', { v: 'x'.repeat(200_000) }));
    a.store.create(SERVICES, 'default', {
      metadata: { name: 's' },
      spec: { ports: [{ port: 1 }] },
    });
    const err = await failure(a.store.durable());
    assert.equal(err.status, 507);
    assert.match(err.message, /database or disk is full/);
    assert.equal(a.store.tryGet(CONFIGMAPS, 'default', 'big'), undefined);
    assert.equal(a.store.tryGet(SERVICES, 'default', 's'), undefined);
    assert.equal(a.store.resourceVersion, rv0);
    assert.equal(events.length, 0);
    // the IP the failed Service took is free again: the same create succeeds later
    a.storage.db.pragma('max_page_count = 1073741823');
    const s = a.store.create(SERVICES, 'default', {
      metadata: { name: 's' },
      spec: { ports: [{ port: 1 }] },
    });
    await a.store.durable();
    assert.equal(s.metadata.resourceVersion, String(rv0 + 1));
    assert.equal(events.length, 0, 'no configmap event ever');

    // any other storage error answers 500 and also changes nothing
    a.store.create(CONFIGMAPS, 'default', cm('after-close', { v: '1' }));
    a.storage.db.close();
    const e2 = await failure(a.store.durable());
    assert.equal(e2.status, 500);
    assert.equal(a.store.tryGet(CONFIGMAPS, 'default', 'after-close'), undefined);

    const b = await start();
    assert.equal(b.store.tryGet(CONFIGMAPS, 'default', 'big'), undefined);
    assert.equal(b.store.tryGet(CONFIGMAPS, 'default', 'after-close'), undefined);
    assert.ok(b.store.tryGet(SERVICES, 'default', 's'));
    assert.equal(b.store.resourceVersion, rv0 + 1);
  });

  it('answers a request only once its write is durable, and 507 when the commit fails', async () => {
    const a = await start();
    const app = createApiServer({ store: a.store });
    const post = (name: string, v: string): Promise<Response> =>
      Promise.resolve(
        app.request('/api/v1/namespaces/default/configmaps', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ metadata: { name }, data: { v } }),
        }),
      );
    const ok = await post('fine', 'x');
    assert.equal(ok.status, 201);
    const rows = a.storage.db
      .prepare("SELECT count(*) AS n FROM revisions WHERE name = 'default/fine'")
      .get() as { n: number };
    assert.equal(rows.n, 1, 'on disk when answered');
    const pages = Number(a.storage.db.pragma('page_count', { simple: true }));
    a.storage.db.pragma(`max_page_count = ${pages}`);
    const [r1, r2] = await Promise.all([post('big', 'y'.repeat(300_000)), post('small', 'z')]);
    assert.equal(r1.status, 507);
    assert.equal(r2.status, 507, 'committed together, failed together');
    const body = (await r1.json()) as { reason: string; message: string };
    assert.equal(body.reason, 'InsufficientStorage');
    const list = await app.request('/api/v1/namespaces/default/configmaps');
    const items = ((await list.json()) as { items: { metadata: { name: string } }[] }).items;
    assert.deepEqual(
      items.map((o) => o.metadata.name),
      ['fine'],
    );
  });

  it('refuses writes past the quota with 507 and keeps serving reads and deletions', async () => {
    const a = await start({ quotaBytes: 400_000 });
    a.store.create(CONFIGMAPS, 'default', cm('one', { v: 'x'.repeat(300_000) }));
    await a.store.durable();
    const refused = (() => {
      try {
        a.store.create(CONFIGMAPS, 'default', cm('two', { v: 'x'.repeat(400_000) }));
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    assert.ok(refused instanceof ApiError);
    assert.equal(refused.status, 507);
    assert.match(refused.message, /database space exceeded.*--quota-backend-bytes/);
    assert.equal(a.store.tryGet(CONFIGMAPS, 'default', 'two'), undefined);
    // refused after the work was done: the Service's ClusterIP reservation is undone too
    const svc = {
      metadata: { name: 'big', annotations: { a: 'x'.repeat(200_000) } },
      spec: { clusterIP: '10.96.100.100', ports: [{ port: 80 }] },
    };
    assert.throws(
      () => a.store.create(SERVICES, 'default', svc),
      (e) => e instanceof ApiError && e.status === 507,
    );
    assert.equal(a.services.ipAllocators[0]?.has('10.96.100.100'), false);
    assert.equal(a.store.tryGet(SERVICES, 'default', 'big'), undefined);
    assert.equal(a.store.durable(), undefined, 'nothing staged');
    assert.equal(a.store.get(CONFIGMAPS, 'default', 'one').metadata.name, 'one');
    a.store.delete(CONFIGMAPS, 'default', 'one');
    await a.store.durable();
    assert.equal(a.store.tryGet(CONFIGMAPS, 'default', 'one'), undefined);
  });

  it('bounds history by bytes, compacts the rows behind it, and resumes watches after restart', async () => {
    const history = { revisions: 3, bytes: 250_000 };
    const a = await start({ history });
    const first = a.store.create(CONFIGMAPS, 'default', cm('big', { v: 'a'.repeat(100_000) }));
    await a.store.durable();
    for (const c of 'bcdefg') {
      const cur = a.store.get(CONFIGMAPS, 'default', 'big');
      a.store.update(CONFIGMAPS, 'default', 'big', { ...cur, data: { v: c.repeat(100_000) } });
      await a.store.durable();
    }
    const mid = a.store.resourceVersion;
    a.store.create(PODS, 'default', {
      metadata: { name: 'p', labels: { app: 'web' } },
      spec: { containers: [{ name: 'c', image: 'i' }] },
    });
    await a.store.durable();
    const rows = a.storage.db
      .prepare("SELECT count(*) AS n FROM revisions WHERE resource = 'configmaps'")
      .get() as { n: number };
    assert.ok(rows.n <= 3, `configmap rows after compaction: ${rows.n}`);
    a.storage.close();

    const b = await start({ history });
    assert.equal(
      (b.store.get(CONFIGMAPS, 'default', 'big').data as { v?: string }).v,
      'g'.repeat(100_000),
    );
    const old = (() => {
      try {
        b.store.watch(
          CONFIGMAPS,
          undefined,
          { resourceVersion: first.metadata.resourceVersion ?? '' },
          () => undefined,
        );
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    assert.ok(old instanceof ApiError && old.status === 410, 'a compacted rv is 410 Gone');
    const got: string[] = [];
    b.store.watch(PODS, 'default', { resourceVersion: String(mid) }, (e) =>
      got.push(`${e.type} ${e.object.metadata.name ?? ''}`),
    );
    assert.deepEqual(got, ['ADDED p'], 'the watch resumes from a retained rv after restart');
  });

  it('migrates the old snapshot + log format, dropping a torn last record with a warning', async () => {
    const api = newTestApi();
    const svc = api.store.create(SERVICES, 'default', {
      metadata: { name: 'web' },
      spec: { ports: [{ port: 80 }] },
    });
    const tricky = api.store.create(CONFIGMAPS, 'default', {
      metadata: { name: 'tricky' },
      data: { braces: '}]{["\\"', unicode: 'naïve ☃ 𝄞', big: 'z'.repeat(1000 * 1024) },
    });
    // Objects stay under the 1 MiB ConfigMap limit; together they make a multi-MiB snapshot
    // whose entries cross the reader's 1 MiB chunk boundaries.
    for (const i of [1, 2, 3])
      api.store.create(
        CONFIGMAPS,
        'default',
        cm(`fill-${String(i)}`, { v: 'f'.repeat(900_000 + i) }),
      );
    const objects = [...api.store.entries()].map(({ resource, object }) => ({ resource, object }));
    writeFileSync(
      join(dir, 'snapshot.json'),
      JSON.stringify({ rv: api.store.resourceVersion, objects }),
    );
    const rv = api.store.resourceVersion;
    const put = (n: number, name: string): string =>
      JSON.stringify({
        rv: rv + n,
        op: 'put',
        r: 'configmaps',
        k: `default/${name}`,
        o: {
          ...cm(name, { n: `${n}` }),
          metadata: { name, namespace: 'default', resourceVersion: `${rv + n}` },
        },
      });
    writeFileSync(
      join(dir, 'wal.jsonl'),
      `${put(1, 'a')}\n${put(2, 'b')}\n${JSON.stringify({ rv: rv + 3, op: 'delete', r: 'configmaps', k: 'default/a' })}\n${put(4, 'torn').slice(0, 40)}`,
    );
    const warnings: string[] = [];
    const b = await start({ warn: (m) => warnings.push(m) });
    assert.ok(
      warnings.some((w) => /wal\.jsonl:4: torn last record \(40 bytes\) dropped/.test(w)),
      warnings.join('\n'),
    );
    assert.ok(warnings.some((w) => /migrated \d+ objects/.test(w)));
    assert.equal(existsSync(join(dir, 'wal.jsonl')), false);
    assert.equal(existsSync(join(dir, 'snapshot.json')), false);
    assert.deepEqual(b.store.get(SERVICES, 'default', 'web'), svc);
    assert.deepEqual(b.store.get(CONFIGMAPS, 'default', 'tricky'), tricky);
    assert.equal(b.store.tryGet(CONFIGMAPS, 'default', 'a'), undefined);
    assert.deepEqual(b.store.get(CONFIGMAPS, 'default', 'b').data, { n: '2' });
    assert.equal(b.store.tryGet(CONFIGMAPS, 'default', 'torn'), undefined);
    assert.ok(b.store.resourceVersion >= rv + 3);
  });

  it('refuses an old-format log with a bad record before the last, naming file and line', () => {
    writeFileSync(
      join(dir, 'wal.jsonl'),
      '{"rv":1,"op":"put"\n{"rv":2,"op":"delete","r":"configmaps","k":"default/x"}\n',
    );
    assert.throws(
      () => new SqliteStorage(dir),
      (e: Error) => /wal\.jsonl:1: not a valid log record.*repair or remove/.test(e.message),
    );
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
