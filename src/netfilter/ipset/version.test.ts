import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixturesDir } from '../../../test/conformance/harness.js';
import { isValidIpsetVersion, parseIpsetVersionOutput } from './version.js';

const PATH = join(fixturesDir(), 'kube-proxy', 'ipvs', 'ipset-vectors.json');

test('TestCheckIPSetVersion vectors', (t) => {
  if (!existsSync(PATH)) {
    t.skip('fixtures absent');
    return;
  }
  const file = JSON.parse(readFileSync(PATH, 'utf8')) as {
    groups: { test: string; vectors: { subtest: string; version: string; valid: boolean }[] }[];
  };
  const group = file.groups.find((g) => g.test === 'TestCheckIPSetVersion');
  assert.ok(group);
  for (const v of group.vectors) assert.equal(isValidIpsetVersion(v.version), v.valid, v.subtest);
});

test('the version is read from ipset --version output', () => {
  assert.equal(parseIpsetVersionOutput('ipset v7.17, protocol version: 7\n'), '7.17');
  assert.equal(parseIpsetVersionOutput('garbage'), undefined);
});
