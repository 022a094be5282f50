import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MAX_NESTING_DEPTH,
  base64Length,
  checkJsonDepth,
  checkValueDepth,
  readLimitedBody,
} from './limits.js';
import { CONFIGMAPS } from './resources.js';
import { createApiServer } from './server.js';
import { ApiError } from './status.js';
import { newTestApi } from './testing.js';

const TOKEN = 't';
type Json = Record<string, unknown>;

function setup(maxRequestBytes?: number) {
  const api = newTestApi();
  const app = createApiServer({
    store: api.store,
    token: TOKEN,
    now: () => api.clock.now,
    ...(maxRequestBytes !== undefined ? { maxRequestBytes } : {}),
  });
  const send = async (
    method: string,
    path: string,
    body: string | Uint8Array | ReadableStream<Uint8Array>,
    headers: Record<string, string> = {},
  ) => {
    const res = await app.request(path, {
      method,
      body,
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', ...headers },
      ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
    });
    return { status: res.status, body: (await res.json()) as Json, headers: res.headers };
  };
  return { api, send };
}

/** A body stream of `chunks` chunks of `size` bytes that counts what was pulled. */
function countingStream(chunks: number, size: number) {
  const state = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (state.pulled >= chunks) {
        c.close();
        return;
      }
      state.pulled++;
      c.enqueue(new Uint8Array(size).fill(0x20));
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { stream, state };
}

const configMap = (name: string, data: Record<string, string>, extra: Json = {}) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...extra }, data });

describe('readLimitedBody', () => {
  it('refuses from Content-Length without reading', async () => {
    const { stream, state } = countingStream(100, 1024);
    await assert.rejects(readLimitedBody(stream, '5000000', 1024 * 1024), (e: unknown) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.status, 413);
      assert.equal(e.reason, 'RequestEntityTooLarge');
      return true;
    });
    assert.equal(state.pulled, 0);
    assert.equal(state.cancelled, true);
  });

  it('stops reading a chunked body one chunk past the limit', async () => {
    const { stream, state } = countingStream(1000, 64 * 1024);
    await assert.rejects(readLimitedBody(stream, undefined, 1024 * 1024), /limit is 1048576/);
    assert.ok(state.pulled <= 18, `pulled ${state.pulled} chunks of 64 KiB`);
    assert.equal(state.cancelled, true);
  });

  it('returns a body at the limit whole', async () => {
    const { stream } = countingStream(16, 64 * 1024);
    const body = await readLimitedBody(stream, undefined, 1024 * 1024);
    assert.equal(body.byteLength, 1024 * 1024);
  });
});

describe('nesting depth', () => {
  it('counts brackets outside strings only', () => {
    checkJsonDepth(`{"a":"${'['.repeat(10_000)}"}`);
    checkJsonDepth('['.repeat(MAX_NESTING_DEPTH) + ']'.repeat(MAX_NESTING_DEPTH));
    assert.throws(
      () => {
        checkJsonDepth('['.repeat(MAX_NESTING_DEPTH + 1));
      },
      (e: unknown) => e instanceof ApiError && e.status === 400,
    );
    assert.throws(() => {
      checkJsonDepth(`{"a\\"":${'{"b":'.repeat(600)}1`);
    }, /max depth/);
  });

  it('measures decoded values without recursion', () => {
    let v: unknown = 1;
    for (let i = 0; i < 100_000; i++) v = [v];
    assert.throws(() => {
      checkValueDepth(v);
    }, /max depth/);
    checkValueDepth({ a: [{ b: { c: [] } }] });
  });

  it('sizes base64 without decoding', () => {
    for (const s of ['', 'a', 'ab', 'abc', 'abcd', 'abcde'])
      assert.equal(base64Length(Buffer.from(s).toString('base64')), s.length);
  });
});

describe('API server limits over HTTP', () => {
  it('answers 413 RequestEntityTooLarge for a body over --max-request-bytes', async () => {
    const { send, api } = setup(64 * 1024);
    const big = configMap('big', { a: 'x'.repeat(100_000) });
    const res = await send('POST', '/api/v1/namespaces/default/configmaps', big);
    assert.equal(res.status, 413);
    assert.equal(res.body.reason, 'RequestEntityTooLarge');
    assert.equal(res.body.code, 413);
    assert.equal(api.store.tryGet(CONFIGMAPS, 'default', 'big'), undefined);
  });

  it('refuses a chunked 10 MB body after reading about 3 MiB', async () => {
    const { send } = setup();
    const { stream, state } = countingStream(160, 64 * 1024);
    const res = await send('PUT', '/api/v1/namespaces/default/configmaps/x', stream, {});
    assert.equal(res.status, 413);
    assert.ok(state.pulled <= 50, `pulled ${state.pulled} chunks of 64 KiB`);
  });

  it('answers 422 naming data for ConfigMap data over 1 MiB', async () => {
    const { send } = setup();
    const res = await send(
      'POST',
      '/api/v1/namespaces/default/configmaps',
      configMap('cm', { a: 'x'.repeat(1.1 * 1024 * 1024) }),
    );
    assert.equal(res.status, 422);
    const causes = (res.body.details as { causes: { field: string; message: string }[] }).causes;
    assert.deepEqual(
      causes.map((c) => c.field),
      ['data'],
    );
    assert.match(String(res.body.message), /data: Too long: must have at most 1048576 bytes/);
    const bin = await send(
      'POST',
      '/api/v1/namespaces/default/configmaps',
      JSON.stringify({
        metadata: { name: 'bin' },
        data: { a: 'x'.repeat(600_000) },
        binaryData: { b: Buffer.alloc(600_000).toString('base64') },
      }),
    );
    assert.equal(bin.status, 422);
    const ok = await send(
      'POST',
      '/api/v1/namespaces/default/configmaps',
      configMap('ok', { a: 'x'.repeat(1024 * 1024 - 10) }),
    );
    assert.equal(ok.status, 201);
  });

  it('answers 413 for an object over 1.5 MiB that no field limit caught', async () => {
    const { send } = setup();
    const event = {
      metadata: { name: 'e' },
      involvedObject: { kind: 'Pod', name: 'p', namespace: 'default' },
      message: 'm'.repeat(1.6 * 1024 * 1024),
    };
    const res = await send('POST', '/api/v1/namespaces/default/events', JSON.stringify(event));
    assert.equal(res.status, 413);
    assert.match(String(res.body.message), /storage accepts at most 1572864/);
  });

  it('answers 422 for annotations over 256 KiB', async () => {
    const { send } = setup();
    const res = await send(
      'POST',
      '/api/v1/namespaces/default/configmaps',
      configMap('ann', {}, { annotations: { a: 'x'.repeat(300_000) } }),
    );
    assert.equal(res.status, 422);
    assert.match(String(res.body.message), /metadata.annotations: Too long/);
  });

  it('answers 400, not 500, for 50,000-deep JSON and deep YAML', async () => {
    const { send } = setup();
    const deep = `{"metadata":{"name":"d"},"data":${'['.repeat(50_000)}${']'.repeat(50_000)}}`;
    const res = await send('POST', '/api/v1/namespaces/default/configmaps', deep);
    assert.equal(res.status, 400);
    assert.equal(res.body.reason, 'BadRequest');
    assert.match(String(res.body.message), /max depth/);
    let yaml = 'metadata:\n  name: y\ndata:\n';
    for (let i = 1; i < 1200; i++) yaml += `${' '.repeat(i)}a:\n`;
    const y = await send('POST', '/api/v1/namespaces/default/configmaps', yaml, {
      'Content-Type': 'application/yaml',
    });
    assert.equal(y.status, 400);
    const flow = await send(
      'POST',
      '/api/v1/namespaces/default/configmaps',
      `data: ${'['.repeat(600)}${']'.repeat(600)}`,
      { 'Content-Type': 'application/yaml' },
    );
    assert.equal(flow.status, 400);
    assert.match(String(flow.body.message), /max depth/);
  });

  it('keeps the size limits on protobuf bodies', async () => {
    const { send } = setup(1024);
    const res = await send('POST', '/api/v1/namespaces/default/configmaps', new Uint8Array(4096), {
      'Content-Type': 'application/vnd.kubernetes.protobuf',
    });
    assert.equal(res.status, 413);
  });
});
