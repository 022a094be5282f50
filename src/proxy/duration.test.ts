// Tests of Go-duration parsing.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDuration } from './duration.js';

test('parseDuration reads Go durations into milliseconds', () => {
  assert.equal(parseDuration('1s'), 1000);
  assert.equal(parseDuration('0'), 0);
  assert.equal(parseDuration('0s'), 0);
  assert.equal(parseDuration('500ms'), 500);
  assert.equal(parseDuration('1h30m'), 5_400_000);
  assert.equal(parseDuration('1.5s'), 1500);
  assert.throws(() => parseDuration('10'), /not a duration/);
  assert.throws(() => parseDuration('1x'), /not a duration/);
  assert.throws(() => parseDuration(''), /not a duration/);
});
