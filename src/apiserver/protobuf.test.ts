import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { decodeProtobufObject, isProtobufContentType } from './protobuf.js';
import { DEPLOYMENTS, NAMESPACES, SERVICES } from './resources.js';
import { ApiError } from './status.js';

// Request bodies captured from `kubectl` 1.33.1 (see testdata/README.md).
const read = (name: string): Uint8Array =>
  readFileSync(new URL(`testdata/${name}`, import.meta.url));

describe('protobuf request bodies', () => {
  it('recognises the content type', () => {
    assert.ok(isProtobufContentType('application/vnd.kubernetes.protobuf'));
    assert.ok(!isProtobufContentType('application/json'));
  });

  it('decodes `kubectl create deployment web --image=nginx:1.25 --replicas=3 --port=8080`', () => {
    assert.deepEqual(decodeProtobufObject(read('kubectl-1.33-create-deployment.pb'), DEPLOYMENTS), {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', labels: { app: 'web' } },
      spec: {
        replicas: 3,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            containers: [
              {
                name: 'nginx',
                image: 'nginx:1.25',
                ports: [{ containerPort: 8080 }],
                resources: {},
              },
            ],
          },
        },
        strategy: {},
      },
      status: {},
    });
  });

  it('decodes `kubectl create service nodeport web --tcp=80:8080 --node-port=30080`', () => {
    const svc = decodeProtobufObject(read('kubectl-1.33-create-service-nodeport.pb'), SERVICES);
    assert.deepEqual(svc.spec, {
      ports: [{ name: '80-8080', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 }],
      selector: { app: 'web' },
      type: 'NodePort',
    });
  });

  it('decodes `kubectl create namespace team-a` and rejects bodies without the envelope', () => {
    assert.deepEqual(
      decodeProtobufObject(read('kubectl-1.33-create-namespace.pb'), NAMESPACES).metadata,
      { name: 'team-a' },
    );
    assert.throws(
      () => decodeProtobufObject(new Uint8Array([1, 2, 3, 4, 5]), NAMESPACES),
      ApiError,
    );
  });
});

/** Protobuf by hand: a length-delimited field (field numbers < 2048, bodies < 128 bytes). */
const ld = (field: number, body: Uint8Array | string): Uint8Array => {
  const b = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  const tag = (field << 3) | 2;
  const tagBytes = tag < 0x80 ? [tag] : [(tag & 0x7f) | 0x80, tag >> 7];
  return new Uint8Array([...tagBytes, b.length, ...b]);
};
const cat = (...parts: Uint8Array[]): Uint8Array => new Uint8Array(parts.flatMap((p) => [...p]));
/** A `k8s\0` envelope around a v1 Namespace whose ObjectMeta is `meta`. */
const namespaceBody = (meta: Uint8Array, extra: Uint8Array = new Uint8Array()): Uint8Array =>
  cat(
    new Uint8Array([0x6b, 0x38, 0x73, 0x00]),
    ld(1, cat(ld(1, 'v1'), ld(2, 'Namespace'))),
    ld(2, cat(ld(1, meta), extra)),
  );

describe('fields the schema does not list', () => {
  it('are skipped when they hold zero values, as Go writes every non-pointer field', () => {
    // An empty string (metadata #15), a zero varint (#9) and an all-zero message (#10).
    const body = namespaceBody(
      cat(ld(1, 'team-b'), ld(15, '')),
      cat(new Uint8Array([9 << 3, 0x00]), ld(10, cat(ld(1, ''), new Uint8Array([0x10, 0x00])))),
    );
    assert.deepEqual(decodeProtobufObject(body, NAMESPACES), {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'team-b' },
    });
  });

  it('are refused with 415 naming the field when they hold content, never dropped', () => {
    const body = namespaceBody(cat(ld(1, 'team-b'), ld(15, 'content')));
    assert.throws(
      () => decodeProtobufObject(body, NAMESPACES),
      (e: unknown) =>
        e instanceof ApiError &&
        e.status === 415 &&
        /Namespace field metadata\.#15 is not decoded here; send it as application\/json/.test(
          e.message,
        ),
    );
    const nested = namespaceBody(ld(1, 'x'), ld(10, cat(ld(1, 'content'))));
    assert.throws(() => decodeProtobufObject(nested, NAMESPACES), /Namespace field #10 /);
  });

  it('are skipped in status and in the server-owned selfLink and managedFields', () => {
    const body = namespaceBody(
      cat(ld(1, 'team-c'), ld(4, '/api/v1/namespaces/team-c'), ld(17, ld(1, 'kubectl'))),
      ld(3, ld(1, 'Active')),
    );
    assert.deepEqual(decodeProtobufObject(body, NAMESPACES), {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'team-c' },
      status: {},
    });
  });
});
