import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { certCovers, createServingCert } from './x509.js';

const HOSTS = ['127.0.0.1', '172.18.0.2', 'kubernetes.default.svc'];

// The serial is 16 random bytes. One lab start in a few hundred drew a serial whose first byte
// was 0x00 and second below 0x80; encoded with the redundant zero, OpenSSL refused the
// certificate and the API server exited ("PEM routines::no start line").
test('every serial, whatever its leading bytes, gives a certificate OpenSSL accepts', () => {
  const serials = [
    '00017f0000000000000000000000abcd',
    '0000000000000000000000000000002a',
    '00000000000000000000000000000000',
    '80000000000000000000000000000001',
    '7fffffffffffffffffffffffffffffff',
  ];
  for (const hex of serials) {
    const pair = createServingCert(HOSTS, new Date(), Buffer.from(hex, 'hex'));
    const x = new X509Certificate(pair.cert);
    assert.equal(BigInt(`0x${x.serialNumber}`), BigInt(`0x${hex}`), `serial ${hex}`);
    assert.ok(certCovers(pair, HOSTS), `serial ${hex}: the pair does not cover its hosts`);
  }
});

test('a certificate covers the hosts it was made for and no other', () => {
  const pair = createServingCert(HOSTS);
  assert.ok(certCovers(pair, HOSTS));
  assert.ok(!certCovers(pair, ['10.0.0.1']));
  assert.ok(!certCovers(pair, ['other.example']));
});
