import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServingCert } from '../apiserver/x509.js';
import {
  certFingerprint,
  identify,
  isRunning,
  newRunId,
  parseRunRecord,
  processStartTime,
  readRunRecord,
  runAlive,
  RUN_FILE,
  statStartTime,
  writeRunRecord,
} from './run.js';

const STAT =
  '4242 (node) S 1 4242 4242 0 -1 4194560 9 0 0 0 3 1 0 0 20 0 11 0 987654 1000 20 1 2 3';

test('the start time is field 22 of /proc/PID/stat, even when the name holds ") ("', () => {
  assert.equal(statStartTime(STAT), '987654');
  assert.equal(statStartTime(STAT.replace('(node)', '(a) (b c)')), '987654');
});

test('a zombie or a torn stat line has no start time: the process counts as gone', () => {
  assert.equal(statStartTime(STAT.replace(') S ', ') Z ')), undefined);
  assert.equal(statStartTime(STAT.replace(') S ', ') X ')), undefined);
  assert.equal(statStartTime('4242 (node'), undefined);
  assert.equal(statStartTime('4242 (node) S 1 2'), undefined);
});

test('this process is running; the same pid with another start time is not', () => {
  const me = identify(process.pid);
  assert.ok(me);
  assert.equal(me.startTime, processStartTime(process.pid));
  assert.ok(isRunning(me));
  assert.ok(!isRunning({ pid: process.pid, startTime: String(Number(me.startTime) + 1) }));
});

test('a process that has exited is not running', () => {
  const r = spawnSync('true');
  assert.ok(r.pid > 0);
  assert.equal(processStartTime(r.pid), undefined);
});

test('a run is alive by its supervisor once it has one, by its starter before', () => {
  const me = identify(process.pid);
  assert.ok(me);
  const dead = { pid: me.pid, startTime: '1' };
  const runId = newRunId();
  assert.ok(runAlive({ runId, starter: me }));
  assert.ok(!runAlive({ runId, starter: dead }));
  // A dead supervisor ends the run even while the `lab up` that started it still runs.
  assert.ok(!runAlive({ runId, starter: me, supervisor: dead }));
  assert.ok(runAlive({ runId, starter: dead, supervisor: me }));
});

test('run ids do not repeat', () => {
  const ids = new Set(Array.from({ length: 100 }, newRunId));
  assert.equal(ids.size, 100);
  for (const id of ids) assert.match(id, /^[0-9a-f]{24}$/);
});

test('run.json round-trips; a torn or foreign file reads as no run', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-run-'));
  try {
    assert.equal(readRunRecord(dir), undefined);
    const run = { runId: newRunId(), starter: { pid: 7, startTime: '100' } };
    writeRunRecord(dir, run);
    assert.deepEqual(readRunRecord(dir), run);
    writeFileSync(join(dir, RUN_FILE), '{"runId": "ab');
    assert.equal(readRunRecord(dir), undefined);
    writeFileSync(join(dir, RUN_FILE), '{"pid": 7}');
    assert.equal(readRunRecord(dir), undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a bad run record is named by file and field', () => {
  assert.throws(
    () =>
      parseRunRecord(
        JSON.stringify({ runId: 'XYZ', starter: { pid: 0 }, supervisor: 3 }),
        '/x/run.json',
      ),
    {
      code: 'INVALID_INPUT',
      message:
        '/x/run.json: runId: must be hex; starter: must be {pid, startTime}; supervisor: must be {pid, startTime}',
    },
  );
  assert.throws(() => parseRunRecord('nope', '/x/run.json'), /\/x\/run\.json: not JSON/);
});

test('two certificates have different fingerprints, one has the same every time', () => {
  const a = createServingCert(['127.0.0.1']).cert;
  const b = createServingCert(['127.0.0.1']).cert;
  assert.match(certFingerprint(a), /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
  assert.equal(certFingerprint(a), certFingerprint(a));
  assert.notEqual(certFingerprint(a), certFingerprint(b));
});
