// Go duration syntax both ways.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatDuration, parseDuration } from './duration.js';

test('parseDuration reads Go durations and refuses bare numbers', () => {
  const cases: [string, number | undefined][] = [
    ['1h2m3.5s', 3_723_500],
    ['250ms', 250],
    ['5s', 5000],
    ['0', 0],
    ['0s', 0],
    ['-1s', -1000],
    ['15m', 900_000],
    ['10', undefined],
    ['', undefined],
    ['5 s', undefined],
  ];
  for (const [text, want] of cases) assert.equal(parseDuration(text), want, text);
});

test('formatDuration prints what Go prints, and round-trips', () => {
  const cases: [number, string][] = [
    [0, '0s'],
    [250, '250ms'],
    [5000, '5s'],
    [1500, '1.5s'],
    [90_000, '1m30s'],
    [3_600_000, '1h0m0s'],
    [-2000, '-2s'],
  ];
  for (const [ms, want] of cases) {
    assert.equal(formatDuration(ms), want, String(ms));
    assert.equal(parseDuration(want), ms, want);
  }
});
