import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostsAddresses, searchNames } from './pod-lookup.js';

const rc = {
  nameservers: ['10.96.0.10'],
  searches: ['default.svc.cluster.local', 'svc.cluster.local', 'cluster.local'],
  options: ['ndots:5'],
};

test('a short name walks the search path first (ndots:5), then is tried as written', () => {
  assert.deepEqual(searchNames('nginx-svc', rc), [
    'nginx-svc.default.svc.cluster.local',
    'nginx-svc.svc.cluster.local',
    'nginx-svc.cluster.local',
    'nginx-svc',
  ]);
});

test('a name with ndots dots is tried as written first; a trailing dot only as written', () => {
  const one = { ...rc, options: [] };
  assert.deepEqual(searchNames('web.prod', one).slice(0, 1), ['web.prod']);
  assert.deepEqual(searchNames('web.prod.svc.cluster.local.', rc), ['web.prod.svc.cluster.local']);
});

test('hosts: every address of a name or alias, case-insensitive, comments ignored', () => {
  const hosts =
    '127.0.0.1\tlocalhost\n# 10.0.0.9 web-0\n10.244.1.5\tweb-0.web.default.svc.cluster.local web-0\nfd00::5 WEB-0\n';
  assert.deepEqual(hostsAddresses(hosts, 'web-0'), [
    { address: '10.244.1.5', family: 4 },
    { address: 'fd00::5', family: 6 },
  ]);
  assert.deepEqual(hostsAddresses(hosts, 'web-1'), []);
});
