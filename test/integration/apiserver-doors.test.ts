// The API server's doors stay shut (issue 23): `svcnet apiserver` as its own process on
// loopback, driven with curl and raw HTTPS. 10 MB and 150 MB ConfigMaps are refused with 413
// while the server's RSS stays flat and nothing reaches the data dir; 1.1 MiB of ConfigMap
// data is a 422 naming `data`; 50,000-deep JSON is a 400; every verb wants the token; six
// concurrent PUTs from one resourceVersion give one 200 and five 409. Figures are printed.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { startApiServerChild, type ApiServerChild } from './lib/apiserver-child.js';

const run = promisify(execFile);
const MiB = 1024 * 1024;

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** One HTTPS request to the child server; `token` null sends no Authorization. */
function call(
  srv: ApiServerChild,
  method: string,
  path: string,
  body?: string,
  token: string | null = srv.token,
  contentType = 'application/json',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: srv.port,
        method,
        path,
        ca: readFileSync(srv.caFile),
        headers: {
          ...(token !== null ? { Authorization: `Bearer ${token}` } : {}),
          ...(body !== undefined ? { 'Content-Type': contentType } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
          // A watch answers with a stream; its first line is enough.
          if (path.includes('watch=true') && text.includes('\n')) res.destroy();
        });
        const done = (): void => {
          let parsed: Record<string, unknown>;
          try {
            parsed = JSON.parse(text.split('\n')[0] ?? '') as Record<string, unknown>;
          } catch {
            parsed = { raw: text };
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        };
        res.on('end', done);
        res.on('close', done);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Writes a ConfigMap JSON of about `bytes` bytes to `path` without holding it in memory. */
async function writeBigConfigMap(path: string, name: string, bytes: number): Promise<void> {
  const out = createWriteStream(path);
  const write = (s: string): Promise<void> =>
    new Promise((resolve) => {
      if (out.write(s)) resolve();
      else out.once('drain', resolve);
    });
  await write(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${name}"},"data":{"a":"`);
  const block = 'x'.repeat(MiB);
  for (let n = 0; n < bytes; n += MiB) await write(block);
  await write('"}}');
  await new Promise<void>((resolve) => out.end(resolve));
}

type Upload = 'Expect: 100-continue' | 'no Expect, streamed' | 'chunked, no Content-Length';

async function curl(srv: ApiServerChild, file: string, how: Upload): Promise<string> {
  const { stdout } = await run('curl', [
    '-sS',
    '--max-time',
    '60',
    '--cacert',
    srv.caFile,
    '-H',
    `Authorization: Bearer ${srv.token}`,
    '-H',
    'Content-Type: application/json',
    ...(how === 'no Expect, streamed' ? ['-H', 'Expect:'] : []),
    ...(how === 'chunked, no Content-Length' ? ['-H', 'Transfer-Encoding: chunked'] : []),
    '--data-binary',
    `@${file}`,
    '-w',
    '\n%{http_code}',
    `${srv.url}/api/v1/namespaces/default/configmaps`,
  ]).catch((e: unknown) => {
    // curl may see the connection closed while it is still sending: the answer came first.
    const err = e as { stdout?: string; stderr?: string };
    return { stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
  });
  return stdout;
}

describe('API server limits, auth and concurrency over real sockets', () => {
  let srv: ApiServerChild;

  before(async () => {
    srv = await startApiServerChild();
  });
  after(async () => {
    await srv.stop();
  });

  it('refuses 10 MB and 150 MB ConfigMaps with 413, RSS flat, nothing stored', async () => {
    // Warm up the paths a create takes, so the baseline includes them.
    const warm = await call(
      srv,
      'POST',
      '/api/v1/namespaces/default/configmaps',
      JSON.stringify({ metadata: { name: 'warm' }, data: { a: 'x'.repeat(100_000) } }),
    );
    assert.equal(warm.status, 201);
    const rss0 = srv.rssMiB();
    const disk0 = srv.dataDirBytes();
    for (const [label, bytes] of [
      ['10MB', 10_000_000],
      ['150MB', 150_000_000],
    ] as const) {
      const file = join(srv.dir, `${label}.json`);
      await writeBigConfigMap(file, `big-${label.toLowerCase()}`, bytes);
      for (const how of [
        'Expect: 100-continue',
        'no Expect, streamed',
        'chunked, no Content-Length',
      ] as const) {
        const t0 = performance.now();
        const out = await curl(srv, file, how);
        const ms = performance.now() - t0;
        const code = out.trim().split('\n').pop();
        const rss = srv.rssMiB();
        console.log(
          `figure: curl ${label} ConfigMap (${how}) -> ${code} in ${ms.toFixed(0)} ms; server RSS ${rss0.toFixed(1)} -> ${rss.toFixed(1)} MiB`,
        );
        assert.equal(code, '413', out.slice(0, 300));
        assert.match(out, /RequestEntityTooLarge/);
        assert.ok(Math.abs(rss - rss0) <= 20, `RSS moved ${(rss - rss0).toFixed(1)} MiB`);
      }
    }
    const disk = srv.dataDirBytes();
    console.log(`figure: data dir ${disk0} -> ${disk} bytes after the refused bodies`);
    assert.ok(disk - disk0 < 64 * 1024, `data dir grew ${disk - disk0} bytes`);
    const listed = await call(srv, 'GET', '/api/v1/namespaces/default/configmaps');
    const names = (listed.body.items as { metadata: { name: string } }[]).map(
      (i) => i.metadata.name,
    );
    assert.deepEqual(
      names.filter((n) => n.startsWith('big-')),
      [],
    );
  });

  it('answers 422 naming data for a 1.1 MiB ConfigMap and 400 for 50k-deep JSON', async () => {
    const cm = await call(
      srv,
      'POST',
      '/api/v1/namespaces/default/configmaps',
      JSON.stringify({ metadata: { name: 'mid' }, data: { a: 'x'.repeat(1.1 * MiB) } }),
    );
    console.log(`figure: 1.1 MiB ConfigMap -> ${cm.status} ${String(cm.body.message)}`);
    assert.equal(cm.status, 422);
    assert.deepEqual(
      (cm.body.details as { causes: { field: string }[] }).causes.map((c) => c.field),
      ['data'],
    );
    const deep = `{"metadata":{"name":"deep"},"data":${'['.repeat(50_000)}${']'.repeat(50_000)}}`;
    const d = await call(srv, 'POST', '/api/v1/namespaces/default/configmaps', deep);
    console.log(`figure: 50,000-deep JSON -> ${d.status} ${String(d.body.message)}`);
    assert.equal(d.status, 400);
    const health = await call(srv, 'GET', '/api/v1/namespaces/default/configmaps/warm');
    assert.equal(health.status, 200);
  });

  it('answers 401 on every verb without the token or with a wrong one', async () => {
    const cm = JSON.stringify({ metadata: { name: 'auth' }, data: { a: '1' } });
    const verbs: [string, string, string?, string?][] = [
      ['GET', '/api/v1/namespaces/default/configmaps'],
      ['GET', '/api/v1/configmaps?watch=true'],
      ['GET', '/api/v1/namespaces/default/configmaps/warm'],
      ['POST', '/api/v1/namespaces/default/configmaps', cm],
      ['PUT', '/api/v1/namespaces/default/configmaps/warm', cm],
      [
        'PATCH',
        '/api/v1/namespaces/default/configmaps/warm',
        '{"data":{"b":"2"}}',
        'application/merge-patch+json',
      ],
      ['DELETE', '/api/v1/namespaces/default/configmaps/warm'],
      ['DELETE', '/api/v1/namespaces/default/configmaps'],
      ['GET', '/apis/apps/v1/namespaces/default/deployments/x/scale'],
      ['PUT', '/api/v1/namespaces/default/services/kubernetes/status', '{}'],
      ['GET', '/api'],
      ['GET', '/apis'],
      ['GET', '/openapi/v3'],
    ];
    let refused = 0;
    for (const [method, path, body, ct] of verbs)
      for (const token of [null, 'wrong-token', `${srv.token}x`]) {
        const res = await call(srv, method, path, body, token, ct);
        assert.equal(res.status, 401, `${method} ${path} with token ${String(token)}`);
        assert.equal(res.body.reason, 'Unauthorized');
        refused++;
      }
    console.log(`figure: ${refused} unauthenticated requests over ${verbs.length} verbs -> 401`);
    const still = await call(srv, 'GET', '/api/v1/namespaces/default/configmaps/warm');
    assert.equal(still.status, 200, 'nothing was changed by the refused writes');
  });

  it('lets one of six concurrent PUTs from one resourceVersion win; the rest get 409', async () => {
    const created = await call(
      srv,
      'POST',
      '/api/v1/namespaces/default/configmaps',
      JSON.stringify({ metadata: { name: 'occ' }, data: { v: '0' } }),
    );
    assert.equal(created.status, 201);
    const rv = (created.body.metadata as { resourceVersion: string }).resourceVersion;
    const results = await Promise.all(
      [1, 2, 3, 4, 5, 6].map((i) =>
        call(
          srv,
          'PUT',
          '/api/v1/namespaces/default/configmaps/occ',
          JSON.stringify({
            metadata: { name: 'occ', resourceVersion: rv },
            data: { v: String(i) },
          }),
        ),
      ),
    );
    const codes = results.map((r) => r.status).sort();
    console.log(`figure: six concurrent PUTs at resourceVersion ${rv} -> ${codes.join(' ')}`);
    assert.deepEqual(codes, [200, 409, 409, 409, 409, 409]);
    for (const r of results.filter((x) => x.status === 409))
      assert.equal(r.body.reason, 'Conflict');
  });
});
