import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONFIGMAPS, DEPLOYMENTS, SERVICES } from './resources.js';
import { checkSchema, parseFieldValidation, schemaOf } from './schema.js';
import { createApiServer } from './server.js';
import { newTestApi } from './testing.js';

type Json = Record<string, unknown>;

describe('checkSchema', () => {
  const cases: {
    name: string;
    rt: typeof SERVICES;
    obj: Json;
    fields?: string[];
    unknown?: string[];
  }[] = [
    {
      name: 'a number as metadata.name',
      rt: CONFIGMAPS,
      obj: { metadata: { name: 5 } },
      fields: ['metadata.name'],
    },
    {
      name: 'label values and ConfigMap data must be strings',
      rt: CONFIGMAPS,
      obj: { metadata: { name: 'a', labels: { x: 1 } }, data: { k: true } },
      fields: ['metadata.labels.x', 'data.k'],
    },
    {
      name: 'a string port and a list as selector',
      rt: SERVICES,
      obj: { metadata: { name: 's' }, spec: { ports: [{ port: '80' }], selector: ['a'] } },
      fields: ['spec.ports[0].port', 'spec.selector'],
    },
    {
      name: 'targetPort takes an integer or a name',
      rt: SERVICES,
      obj: { metadata: { name: 's' }, spec: { ports: [{ port: 80, targetPort: 'http' }] } },
    },
    {
      name: 'unknown fields of closed objects are listed; open ones pass',
      rt: DEPLOYMENTS,
      obj: {
        metadata: { name: 'd', colour: 'red' },
        spec: {
          replica: 2,
          template: { spec: { containers: [{ name: 'c', image: 'i', futureField: 1 }] } },
        },
        status: { anything: 1 },
        extra: true,
      },
      unknown: ['extra', 'metadata.colour', 'spec.replica'],
    },
    {
      name: 'null is accepted anywhere (Go decodes it to the zero value)',
      rt: DEPLOYMENTS,
      obj: { metadata: { name: 'd', creationTimestamp: null }, spec: { replicas: null } },
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const res = checkSchema(c.obj, schemaOf(c.rt));
      assert.deepEqual(
        res.causes.map((x) => x.field),
        c.fields ?? [],
      );
      assert.deepEqual(res.unknown, c.unknown ?? []);
    });

  it('parses fieldValidation, Warn by default', () => {
    assert.equal(parseFieldValidation(undefined), 'Warn');
    assert.equal(parseFieldValidation('Strict'), 'Strict');
    assert.equal(parseFieldValidation('strict'), undefined);
  });
});

describe('schema validation over HTTP', () => {
  const setup = () => {
    const api = newTestApi();
    const app = createApiServer({ store: api.store, token: 't', now: () => api.clock.now });
    const send = async (method: string, path: string, body: unknown, ct = 'application/json') => {
      const res = await app.request(path, {
        method,
        body: JSON.stringify(body),
        headers: { Authorization: 'Bearer t', 'Content-Type': ct },
      });
      return { status: res.status, body: (await res.json()) as Json, headers: res.headers };
    };
    return { api, send };
  };

  it('refuses metadata.name: 5 with 422 naming the field', async () => {
    const { send } = setup();
    const res = await send('POST', '/api/v1/namespaces/default/configmaps', {
      metadata: { name: 5 },
    });
    assert.equal(res.status, 422);
    assert.equal(res.body.reason, 'Invalid');
    assert.match(
      String(res.body.message),
      /metadata.name: Invalid value: 5: must be of type string/,
    );
  });

  it('follows fieldValidation for unknown fields: Warn (default), Strict, Ignore', async () => {
    const { send } = setup();
    const cm = (name: string) => ({ metadata: { name }, data: { a: 'b' }, extra: 1 });
    const warn = await send('POST', '/api/v1/namespaces/default/configmaps', cm('w'));
    assert.equal(warn.status, 201);
    assert.equal(warn.headers.get('warning'), '299 - "unknown field \\"extra\\""');
    const strict = await send(
      'POST',
      '/api/v1/namespaces/default/configmaps?fieldValidation=Strict',
      cm('s'),
    );
    assert.equal(strict.status, 400);
    assert.equal(strict.body.message, 'strict decoding error: unknown field "extra"');
    const ignore = await send(
      'POST',
      '/api/v1/namespaces/default/configmaps?fieldValidation=Ignore',
      cm('i'),
    );
    assert.equal(ignore.status, 201);
    assert.equal(ignore.headers.get('warning'), null);
    const bad = await send(
      'POST',
      '/api/v1/namespaces/default/configmaps?fieldValidation=Loud',
      cm('x'),
    );
    assert.equal(bad.status, 400);
  });

  it('checks the patched object, so a patch cannot sneak in a wrong type', async () => {
    const { send } = setup();
    assert.equal(
      (await send('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'p' } }))
        .status,
      201,
    );
    const res = await send(
      'PATCH',
      '/api/v1/namespaces/default/configmaps/p',
      { data: { n: 1 } },
      'application/merge-patch+json',
    );
    assert.equal(res.status, 422);
    assert.match(String(res.body.message), /data.n/);
  });
});
