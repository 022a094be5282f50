import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseIpsetVersionOutput } from './version.js';

// The >= 6.0 gate itself runs upstream's TestCheckIPSetVersion vectors in conformance
// (test/conformance/kube-proxy-ipvs-ipset.ts).

test('the version is read from ipset --version output', () => {
  assert.equal(parseIpsetVersionOutput('ipset v7.17, protocol version: 7\n'), '7.17');
  assert.equal(parseIpsetVersionOutput('garbage'), undefined);
});
