import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SvcnetError } from '../errors.js';
import {
  expandPaths,
  formatCommandError,
  formatUsageError,
  readInput,
  verbosityFromArgv,
} from './run.js';

const dir = mkdtempSync(join(tmpdir(), 'svcnet-run-'));

test("commander's errors become one line naming the command, with its suggestion", () => {
  assert.equal(
    formatUsageError('svcnet trace', "error: unknown option '--source'\n(Did you mean --src?)"),
    "svcnet trace: unknown option '--source' (did you mean --src?)\n",
  );
  assert.equal(
    formatUsageError('svcnet render', "error: unknown option '--zzz'"),
    "svcnet render: unknown option '--zzz' (see svcnet render --help)\n",
  );
});

test('stack traces only from --v=5', () => {
  const e = new SvcnetError('INTERNAL', 'broke', { cause: new Error('root') });
  assert.equal(formatCommandError('dns', e, 0), 'svcnet dns: broke\n');
  const loud = formatCommandError('dns', e, 5);
  assert.match(loud, /^svcnet dns: broke\nSvcnetError: broke\n\s+at /);
  assert.match(loud, /\nError: root\n\s+at /);
  assert.equal(verbosityFromArgv(['node', 'main', 'dns', '--v=5']), 5);
  assert.equal(verbosityFromArgv(['node', 'main', 'dns', '--v', '6']), 6);
  assert.equal(verbosityFromArgv(['node', 'main', 'dns']), 0);
});

test('-f takes files and directories (their .yaml/.yml/.json, in name order)', async () => {
  const d = join(dir, 'm');
  mkdirSync(d);
  writeFileSync(join(d, 'b.yaml'), 'b');
  writeFileSync(join(d, 'a.json'), 'a');
  writeFileSync(join(d, 'notes.txt'), 'x');
  assert.deepEqual(await expandPaths([d, '-']), [join(d, 'a.json'), join(d, 'b.yaml'), '-']);
  await assert.rejects(
    expandPaths([join(dir, 'absent')]),
    /absent: cannot read file \(no such file or directory\)/,
  );
  mkdirSync(join(dir, 'empty'));
  await assert.rejects(expandPaths([join(dir, 'empty')]), /empty: directory has no \.yaml/);
});

test('a file over the limit is refused before it is read', async () => {
  const big = join(dir, 'big.yaml');
  writeFileSync(big, 'x'.repeat(2048));
  assert.equal((await readInput(big, 4096)).length, 2048);
  await assert.rejects(
    readInput(big, 1024),
    (e: unknown) =>
      e instanceof SvcnetError &&
      e.code === 'INVALID_INPUT' &&
      e.message === `${big}: file too large (2048 bytes; the limit is 1024 bytes)`,
  );
});
