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
