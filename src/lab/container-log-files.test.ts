import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  beginRunLog,
  CriLogWriter,
  findPodLogDir,
  podLogDir,
  readRunLog,
  rotatedPath,
  runsOf,
} from './container-log-files.js';
import { parseCriText } from './cri-log.js';

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'svcnet-logfiles-'));
}

test('a run log rotates past its size, keeping one rotated file; reading joins them in order', () => {
  const dir = tmp();
  try {
    const path = beginRunLog(dir);
    let t = 0;
    const w = new CriLogWriter(path, () => ++t, 200);
    for (let i = 0; i < 20; i++) w.write(i % 2 === 0 ? 'stdout' : 'stderr', `line ${i}\n`);
    w.write('stdout', 'unfinished');
    w.close();
    assert.deepEqual(readdirSync(dir).sort(), ['0.log', '0.log.1']);
    assert.ok(readFileSync(path).length <= 200);
    assert.ok(readFileSync(rotatedPath(path)).length <= 200);
    const lines = parseCriText(readRunLog(path));
    assert.equal(lines.at(-1)?.content, 'unfinished');
    assert.equal(lines.at(-2)?.content, 'line 19');
    assert.equal(lines.at(-2)?.stream, 'stderr');
    // Older lines were dropped with the file before the rotated one; what is kept is in order.
    const kept = lines.slice(0, -1).map((l) => Number(l.content.split(' ')[1]));
    assert.deepEqual(
      kept,
      [...kept].sort((a, b) => a - b),
    );
    assert.ok(kept.length < 20);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('runs count up at each restart; only the run before the current one is kept', () => {
  const dir = tmp();
  try {
    assert.deepEqual(runsOf(dir), []);
    assert.equal(beginRunLog(dir), join(dir, '0.log'));
    assert.equal(beginRunLog(dir), join(dir, '1.log'));
    assert.equal(beginRunLog(dir), join(dir, '2.log'));
    assert.deepEqual(runsOf(dir), [1, 2]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a Pod log directory is NS_NAME_UID, found by namespace and name', () => {
  const root = tmp();
  try {
    const pod = {
      metadata: { namespace: 'team', name: 'web', uid: 'u1' },
      spec: { containers: [] },
    };
    const dir = podLogDir(root, pod);
    assert.equal(dir, join(root, 'team_web_u1'));
    mkdirSync(dir);
    mkdirSync(join(root, 'team_web-2_u2'));
    assert.equal(findPodLogDir(root, 'team', 'web'), dir);
    assert.equal(findPodLogDir(root, 'team', 'we'), undefined);
    assert.equal(findPodLogDir(join(root, 'none'), 'team', 'web'), undefined);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
