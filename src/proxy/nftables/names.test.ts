// Chain names and comment truncation of the nftables mode (values from the reference's
// TestOverallNFTablesRules example; the full vector files run in the conformance suite).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  endpointNames,
  isServiceChainName,
  servicePortChainNameBase,
  servicePortChainNames,
  servicePortName,
  truncateComment,
} from './names.js';

test('service port chains: prefix + hash8 + ns/svc/proto/port', () => {
  const spn = servicePortName('ns1', 'svc1', 'TCP', 'p80');
  assert.equal(spn, 'ns1/svc1/tcp/p80');
  assert.deepEqual(servicePortChainNames(spn), {
    service: 'service-ULMVA6XW-ns1/svc1/tcp/p80',
    local: 'local-ULMVA6XW-ns1/svc1/tcp/p80',
    external: 'external-ULMVA6XW-ns1/svc1/tcp/p80',
    firewall: 'firewall-ULMVA6XW-ns1/svc1/tcp/p80',
  });
  assert.ok(isServiceChainName('service-ULMVA6XW-ns1/svc1/tcp/p80'));
  assert.ok(!isServiceChainName('service-endpoints-check'));
});

test('endpoint chain and affinity set share one base; IPv6 colons become dots; long names are capped', () => {
  const n = endpointNames('ns5/svc5/tcp/p80', '10.180.0.3', 80);
  assert.equal(n.chain, 'endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80');
  assert.equal(n.affinitySet, 'affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80');
  assert.match(endpointNames('a/b/tcp/p', 'fd00::1', 80).chain, /__fd00\.\.1\/80$/);
  const long = servicePortChainNameBase(
    `${'n'.repeat(63)}/${'s'.repeat(63)}/tcp/${'p'.repeat(120)}`,
  );
  assert.equal(long.length, 240);
  assert.ok(long.endsWith('...'));
});

test('comments are cut to 128 bytes without splitting a character', () => {
  assert.equal(truncateComment('kube-system/kube-dns:dns'), 'kube-system/kube-dns:dns');
  assert.equal(truncateComment('a'.repeat(200)), 'a'.repeat(128));
  const cut = truncateComment(`${'a'.repeat(127)}é`);
  assert.equal(cut, 'a'.repeat(127));
});
