// The `workers` key of `svcnet dns --config`: absent means one per CPU (left to the CLI), an
// integer 1..64 is kept, anything else is an error naming the file and the field.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildDnsConfig, MAX_WORKERS } from './config.js';

test('workers: absent, valid, and invalid values', () => {
  assert.equal(buildDnsConfig(undefined, {}).workers, undefined);
  assert.equal(buildDnsConfig('workers: 1\n', {}).workers, 1);
  assert.equal(buildDnsConfig(`workers: ${MAX_WORKERS}\n`, {}).workers, MAX_WORKERS);
  for (const bad of ['0', '2.5', '"2"', String(MAX_WORKERS + 1)])
    assert.throws(
      () => buildDnsConfig(`workers: ${bad}\n`, {}, 'dns.yaml'),
      (e: Error) =>
        /dns\.yaml/.test(e.message) && /workers: must be an integer 1-64/.test(e.message),
      bad,
    );
});
