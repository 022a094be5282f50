import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, openSync, closeSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SvcnetError } from '../errors.js';
import {
  createLogger,
  formatTextRecord,
  levelForVerbosity,
  parseVerbosity,
  resolveLogSettings,
} from './log.js';

test('--v maps onto pino levels as klog verbosities do; --log-level wins', () => {
  assert.deepEqual([0, 2, 3, 4, 5, 9].map(levelForVerbosity), [
    'info',
    'info',
    'info',
    'debug',
    'trace',
    'trace',
  ]);
  assert.equal(parseVerbosity(undefined), 0);
  assert.throws(
    () => parseVerbosity('x'),
    (e: unknown) => e instanceof SvcnetError && /--v:/.test(e.message),
  );
  assert.deepEqual(resolveLogSettings({ v: '4' }, false), {
    level: 'debug',
    verbosity: 4,
    format: 'json',
  });
  assert.equal(resolveLogSettings({ v: '4', logLevel: 'warn' }, true).level, 'warn');
  assert.equal(resolveLogSettings({}, true).format, 'text', 'a terminal gets text');
  assert.equal(resolveLogSettings({ loggingFormat: 'json' }, true).format, 'json');
  assert.throws(() => resolveLogSettings({ loggingFormat: 'yaml' }, true), /--logging-format/);
  assert.throws(
    () => resolveLogSettings({ logLevel: 'verbose' }, true),
    /--log-level: must be one of/,
  );
});

test('the text format is one line per record with the fields as key=value', () => {
  const line = formatTextRecord(
    JSON.stringify({
      level: 40,
      time: Date.UTC(2026, 0, 2, 3, 4, 5, 6),
      pid: 1,
      hostname: 'h',
      component: 'dns',
      msg: 'List/watch failed; retrying',
      kind: 'Service',
      failures: 3,
      error: 'connection refused',
    }),
  );
  assert.equal(
    line,
    '2026-01-02T03:04:05.006Z WARN  [dns] List/watch failed; retrying kind=Service failures=3 error="connection refused"\n',
  );
});

function logged(verbosity: number, format: 'text' | 'json'): string {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-log-'));
  const path = join(dir, 'log');
  const fd = openSync(path, 'w');
  const log = createLogger('t', { level: 'info', verbosity, format }, fd);
  const cause = new Error('inner');
  log.error({ err: new Error('outer', { cause }) }, 'Failed');
  log.flush();
  closeSync(fd);
  return readFileSync(path, 'utf8');
}

test('errors are logged as their message, with the stack only from --v=5', () => {
  const json = logged(0, 'json');
  assert.equal(json.trim().split('\n').length, 1);
  assert.equal((JSON.parse(json) as { err: unknown }).err, 'outer');
  assert.doesNotMatch(json, /at .*log\.test\.ts/);
  assert.match(logged(5, 'json'), /"stack":"Error: outer\\n\s+at /);
  const text = logged(0, 'text');
  assert.match(text, /^\S+ ERROR \[t\] Failed err=outer\n$/);
});
