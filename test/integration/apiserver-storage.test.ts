// `svcnet apiserver --data-dir` as a real process (the lab's esbuild bundle, so the native
// better-sqlite3 module is proven to load from it), killed with SIGKILL and restarted: a
// 900 KiB ConfigMap patched 600 times stays in a bounded directory and comes back with its
// last value; every create acknowledged before a kill -9 in the middle of a concurrent burst
// is there after the restart, and a watch from a resourceVersion before the kill resumes;
// writes past --quota-backend-bytes get 507 while reads work; an old-format data directory
// with a torn last log record is migrated with a warning naming the record. Loopback only;
// needs no root.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ensureLabBinaries } from '../../src/lab/binaries.js';
import { freePort } from '../../src/util/free-port.js';

const TOKEN = 'storage-test-token';

interface Proc {
  readonly child: ChildProcess;
  readonly url: string;
  stderr: string;
  /** Spawn to first healthy answer, in ms. */
  readonly readyMs: number;
}

function dirBytes(d: string): number {
  let n = 0;
  for (const e of readdirSync(d, { withFileTypes: true, recursive: true }))
    if (e.isFile()) n += statSync(join(e.parentPath, e.name)).size;
  return n;
}

describe('apiserver storage survives kill -9', () => {
  let root: string;
  let self: readonly string[];
  const procs: Proc[] = [];

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'svcnet-apiserver-storage-'));
    self = (await ensureLabBinaries()).self;
  });

  after(() => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });

  async function startServer(dataDir: string, port: number, extra: string[] = []): Promise<Proc> {
    const started = performance.now();
    const child = spawn(
      self[0] ?? process.execPath,
      [
        ...self.slice(1),
        'apiserver',
        '--listen',
        `127.0.0.1:${port}`,
        '--insecure-http',
        '--token',
        TOKEN,
        '--data-dir',
        dataDir,
        ...extra,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const proc: Proc = { child, url: `http://127.0.0.1:${port}`, stderr: '', readyMs: 0 };
    child.stderr.on('data', (b: Buffer) => {
      proc.stderr += b.toString();
    });
    procs.push(proc);
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null)
        assert.fail(`apiserver exited ${String(child.exitCode)}: ${proc.stderr}`);
      try {
        const r = await fetch(`${proc.url}/readyz`);
        if (r.ok) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) assert.fail(`apiserver not ready: ${proc.stderr}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    return { ...proc, readyMs: performance.now() - started };
  }

  async function kill9(p: Proc): Promise<void> {
    const exited = new Promise((r) => p.child.once('exit', r));
    p.child.kill('SIGKILL');
    await exited;
  }

  async function call(
    p: Proc,
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
  ): Promise<{ status: number; json: Record<string, unknown> }> {
    const r = await fetch(p.url + path, {
      method,
      headers: {
        Authorization: `Bearer ${TOKEN}`,
        ...(body !== undefined ? { 'Content-Type': contentType } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await r.text();
    return {
      status: r.status,
      json: (text === '' ? {} : JSON.parse(text)) as Record<string, unknown>,
    };
  }

  it('a 900 KiB ConfigMap patched 600 times: bounded data dir, last value after kill -9', async () => {
    const dataDir = join(root, 'big');
    const port = await freePort();
    const a = await startServer(dataDir, port);
    const base = 'v'.repeat(900 * 1024 - 8);
    const created = await call(a, 'POST', '/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'huge' },
      data: { v: `${base}0` },
    });
    assert.equal(created.status, 201, JSON.stringify(created.json).slice(0, 300));
    const t0 = performance.now();
    for (let i = 1; i <= 600; i++) {
      const r = await call(
        a,
        'PATCH',
        '/api/v1/namespaces/default/configmaps/huge',
        { data: { v: `${base}${i}` } },
        'application/merge-patch+json',
      );
      assert.equal(r.status, 200, `patch ${i}: ${JSON.stringify(r.json).slice(0, 300)}`);
    }
    const patchS = (performance.now() - t0) / 1000;
    await kill9(a);
    const bytes = dirBytes(dataDir);
    const b = await startServer(dataDir, port);
    const got = await call(b, 'GET', '/api/v1/namespaces/default/configmaps/huge');
    assert.equal(got.status, 200);
    assert.equal((got.json.data as { v: string }).v, `${base}600`);
    process.stdout.write(
      `# 600 patches of a 900 KiB ConfigMap in ${patchS.toFixed(1)} s; data dir after kill -9: ${(bytes / 1024 / 1024).toFixed(1)} MiB; restart to ready: ${(b.readyMs / 1000).toFixed(2)} s\n`,
    );
    assert.ok(bytes <= 256 * 1024 * 1024, `data dir ${bytes} bytes`);
    assert.ok(b.readyMs < 10_000, `restart took ${b.readyMs} ms`);
    await kill9(b);
  });

  it('every create acknowledged before a kill -9 mid-burst is there after restart; watches resume', async () => {
    const dataDir = join(root, 'burst');
    const port = await freePort();
    const a = await startServer(dataDir, port);
    const listed = await call(a, 'GET', '/api/v1/namespaces/default/configmaps');
    const rvBefore = (listed.json.metadata as { resourceVersion: string }).resourceVersion;
    const acked = new Set<string>();
    let failed = 0;
    let stop = false;
    let n = 0;
    const worker = async (): Promise<void> => {
      while (!stop) {
        const name = `cm-${n++}`;
        try {
          const r = await call(a, 'POST', '/api/v1/namespaces/default/configmaps', {
            metadata: { name },
            data: { n: name },
          });
          if (r.status === 201) acked.add(name);
        } catch {
          failed++; // the connection died with the server: not acknowledged
        }
      }
    };
    const workers = Array.from({ length: 32 }, () => worker());
    await new Promise((r) => setTimeout(r, 1500));
    await kill9(a);
    stop = true;
    await Promise.all(workers);
    assert.ok(acked.size > 100, `only ${acked.size} creates acknowledged`);

    const b = await startServer(dataDir, port);
    const after = await call(b, 'GET', '/api/v1/namespaces/default/configmaps');
    const present = new Set(
      (after.json.items as { metadata: { name: string } }[]).map((o) => o.metadata.name),
    );
    const lost = [...acked].filter((x) => !present.has(x));
    process.stdout.write(
      `# kill -9 mid-burst: ${acked.size} acknowledged, ${lost.length} lost, ${present.size - acked.size} unacknowledged but stored, ${failed} cut off; restart ${(b.readyMs / 1000).toFixed(2)} s\n`,
    );
    assert.deepEqual(lost, []);

    // a watch from before the kill replays what was committed since
    const ctrl = new AbortController();
    const res = await fetch(
      `${b.url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${rvBefore}`,
      { headers: { Authorization: `Bearer ${TOKEN}` }, signal: ctrl.signal },
    );
    assert.equal(res.status, 200);
    const reader = res.body?.getReader();
    assert.ok(reader);
    let text = '';
    const seen = new Set<string>();
    while (seen.size < present.size) {
      const chunk = (await reader.read()) as { done: boolean; value?: Uint8Array };
      if (chunk.done || !chunk.value) break;
      text += Buffer.from(chunk.value).toString();
      let nl: number;
      while ((nl = text.indexOf('\n')) >= 0) {
        const line = text.slice(0, nl);
        text = text.slice(nl + 1);
        if (line.trim() === '') continue;
        const e = JSON.parse(line) as { type: string; object: { metadata: { name: string } } };
        assert.equal(e.type, 'ADDED', line.slice(0, 300));
        seen.add(e.object.metadata.name);
      }
    }
    ctrl.abort();
    assert.equal(seen.size, present.size);

    // a resourceVersion from the future: 504 in the stream, as kube-apiserver
    const future = await fetch(
      `${b.url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=99999999`,
      { headers: { Authorization: `Bearer ${TOKEN}` } },
    );
    const ev = JSON.parse((await future.text()).trim()) as {
      type: string;
      object: { code: number; message: string };
    };
    assert.equal(ev.type, 'ERROR');
    assert.equal(ev.object.code, 504);
    assert.match(ev.object.message, /^Too large resource version: 99999999, current: \d+$/);
    await kill9(b);
  });

  it('past --quota-backend-bytes writes get 507, reads and deletes work, restart keeps it so', async () => {
    const dataDir = join(root, 'quota');
    const port = await freePort();
    const a = await startServer(dataDir, port, ['--quota-backend-bytes', '2Mi']);
    const chunk = 'q'.repeat(400 * 1024);
    let refused: { status: number; json: Record<string, unknown> } | undefined;
    const made: string[] = [];
    for (let i = 0; i < 10 && !refused; i++) {
      const r = await call(a, 'POST', '/api/v1/namespaces/default/configmaps', {
        metadata: { name: `q${i}` },
        data: { v: chunk },
      });
      if (r.status === 201) made.push(`q${i}`);
      else refused = r;
    }
    assert.ok(refused, 'the quota was never reached');
    assert.equal(refused.status, 507);
    assert.match(String(refused.json.message), /database space exceeded/);
    const list = await call(a, 'GET', '/api/v1/namespaces/default/configmaps');
    assert.equal(list.status, 200);
    assert.equal((list.json.items as unknown[]).length, made.length);
    const del = await call(a, 'DELETE', `/api/v1/namespaces/default/configmaps/${made[0] ?? ''}`);
    assert.equal(del.status, 200);
    await kill9(a);
    const b = await startServer(dataDir, port, ['--quota-backend-bytes', '2Mi']);
    const again = await call(b, 'GET', '/api/v1/namespaces/default/configmaps');
    assert.equal((again.json.items as unknown[]).length, made.length - 1);
    await kill9(b);
  });

  it('migrates an old-format data dir, dropping a torn last WAL record with a warning', async () => {
    const dataDir = join(root, 'legacy');
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });
    const obj = (name: string, rv: number) => ({
      kind: 'ConfigMap',
      apiVersion: 'v1',
      metadata: { name, namespace: 'default', uid: `uid-${name}`, resourceVersion: String(rv) },
      data: { name },
    });
    writeFileSync(
      join(dataDir, 'snapshot.json'),
      JSON.stringify({
        rv: 10,
        objects: [
          {
            resource: 'namespaces',
            object: {
              kind: 'Namespace',
              apiVersion: 'v1',
              metadata: { name: 'default', uid: 'ns', resourceVersion: '1' },
            },
          },
          { resource: 'configmaps', object: obj('from-snapshot', 10) },
        ],
      }),
    );
    const line = (rv: number, name: string) =>
      JSON.stringify({ rv, op: 'put', r: 'configmaps', k: `default/${name}`, o: obj(name, rv) });
    writeFileSync(
      join(dataDir, 'wal.jsonl'),
      `${line(11, 'from-wal')}\n${line(12, 'torn').slice(0, 33)}`,
    );
    const port = await freePort();
    const a = await startServer(dataDir, port);
    assert.match(a.stderr, /wal\.jsonl:2: torn last record \(33 bytes\) dropped/);
    const list = await call(a, 'GET', '/api/v1/namespaces/default/configmaps');
    const names = (list.json.items as { metadata: { name: string } }[])
      .map((o) => o.metadata.name)
      .sort();
    assert.deepEqual(names, ['from-snapshot', 'from-wal']);
    await kill9(a);
  });
});
