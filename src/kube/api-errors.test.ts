import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hintFor, InformerError, summarizeApiError } from './api-errors.js';
import { KubeApiError } from './rest.js';

const origin = { source: '--kubeconfig /tmp/kc', server: 'https://127.0.0.1:6443', user: 'admin' };

test('request failures become one line and a reason', () => {
  const unauthorized = new KubeApiError(401, 'Unauthorized', 'Unauthorized');
  assert.deepEqual(summarizeApiError(unauthorized), {
    reason: 'Unauthorized',
    text: 'HTTP 401 Unauthorized: Unauthorized',
  });
  const watch403 = Object.assign(new Error('Forbidden'), { statusCode: 403 });
  assert.deepEqual(summarizeApiError(watch403), {
    reason: 'Forbidden',
    text: 'HTTP 403 Forbidden',
  });
  const refused = new KubeApiError(0, 'ConnectionError', 'GET /api/v1/pods: connect ECONNREFUSED', {
    cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
  });
  assert.deepEqual(summarizeApiError(refused), {
    reason: 'Unreachable',
    text: 'connection refused (ECONNREFUSED)',
  });
  assert.equal(
    summarizeApiError(Object.assign(new Error('x'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }))
      .reason,
    'TLS',
  );
});

test('the hints name the token, the server address or the kubeconfig to check', () => {
  assert.match(hintFor('Unauthorized', origin), /token .* user admin in --kubeconfig \/tmp\/kc/);
  assert.match(
    hintFor('Unreachable', origin),
    /https:\/\/127\.0\.0\.1:6443 .*--kubeconfig \/tmp\/kc/,
  );
  assert.match(hintFor('Forbidden', origin), /RBAC/);
});

test('an informer failure is one line with the count and the next retry', () => {
  const e = new InformerError(
    'services',
    { reason: 'Unreachable', text: 'connection refused (ECONNREFUSED)' },
    3,
    2000,
    undefined,
    undefined,
  );
  assert.equal(e.code, 'API_FAILED');
  assert.equal(
    e.message,
    'list/watch services: connection refused (ECONNREFUSED) (failure 3, retrying in 2s)',
  );
  assert.doesNotMatch(e.message, /\n/);
});
