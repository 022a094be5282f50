import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ByteBudget,
  criLinesOf,
  criTime,
  formatCriLine,
  MAX_CRI_LINE_BYTES,
  parseCriLine,
  parseCriText,
  parseLogOptions,
  renderCriLine,
  selectCriLines,
  type LogOptions,
} from './cri-log.js';

const T0 = Date.parse('2026-11-27T16:00:00.123Z');

test('a CRI line: RFC3339 with nanoseconds, stream, F or P, content; and back', () => {
  assert.equal(criTime(T0), '2026-11-27T16:00:00.123000000Z');
  const line = formatCriLine(T0, 'stderr', true, 'GET /hostname');
  assert.equal(line, '2026-11-27T16:00:00.123000000Z stderr F GET /hostname\n');
  assert.deepEqual(parseCriLine(line.slice(0, -1)), {
    time: '2026-11-27T16:00:00.123000000Z',
    ms: T0,
    stream: 'stderr',
    full: true,
    content: 'GET /hostname',
  });
  assert.equal(parseCriLine('2026-11-27T16:00:00Z stdout P ')?.content, '');
  assert.equal(parseCriLine('not a log line'), undefined);
  assert.equal(parseCriLine('yesterday stdout F x'), undefined);
});

test('output chunks become whole lines; an unfinished one waits, a long one goes in P pieces', () => {
  const a = criLinesOf(T0, 'stdout', '', 'one\ntw');
  assert.equal(a.text, formatCriLine(T0, 'stdout', true, 'one'));
  assert.equal(a.pending, 'tw');
  const b = criLinesOf(T0, 'stdout', a.pending, 'o\n');
  assert.equal(b.text, formatCriLine(T0, 'stdout', true, 'two'));
  assert.equal(b.pending, '');
  const long = 'x'.repeat(MAX_CRI_LINE_BYTES + 5);
  const c = parseCriText(criLinesOf(T0, 'stdout', '', `${long}\n`).text);
  assert.deepEqual(
    c.map((l) => [l.full, l.content.length]),
    [
      [false, MAX_CRI_LINE_BYTES],
      [true, 5],
    ],
  );
  assert.equal(c.map((l) => renderCriLine(l, false)).join(''), `${long}\n`);
});

test('PodLogOptions from the query; bad numbers and times are named', () => {
  const now = T0 + 60_000;
  assert.deepEqual(parseLogOptions(new URLSearchParams(''), now), {
    follow: false,
    previous: false,
    timestamps: false,
  });
  assert.deepEqual(
    parseLogOptions(
      new URLSearchParams('follow=true&previous=true&timestamps=true&tailLines=3&limitBytes=10'),
      now,
    ),
    { follow: true, previous: true, timestamps: true, tailLines: 3, limitBytes: 10 },
  );
  assert.equal(parseLogOptions(new URLSearchParams('sinceSeconds=60'), now).sinceMs, T0);
  assert.equal(
    parseLogOptions(new URLSearchParams('sinceTime=2026-11-27T16:00:00Z'), now).sinceMs,
    Date.parse('2026-11-27T16:00:00Z'),
  );
  assert.equal(parseLogOptions(new URLSearchParams('tailLines=-1'), now).tailLines, undefined);
  assert.throws(() => parseLogOptions(new URLSearchParams('tailLines=x'), now), /tailLines/);
  assert.throws(() => parseLogOptions(new URLSearchParams('sinceTime=never'), now), /sinceTime/);
  assert.throws(() => parseLogOptions(new URLSearchParams('sinceSeconds=0'), now), /sinceSec/);
  assert.throws(() => parseLogOptions(new URLSearchParams('limitBytes=0'), now), /limitBytes/);
});

function logOf(n: number): string {
  let text = '';
  for (let i = 0; i < n; i++) text += formatCriLine(T0 + i * 1000, 'stdout', true, `line ${i}`);
  return text;
}

const none: LogOptions = { follow: false, previous: false, timestamps: false };

test('tailLines and since choose the lines, over files read oldest first', () => {
  const lines = parseCriText(logOf(5));
  const content = (o: Partial<LogOptions>): string[] =>
    selectCriLines(lines, { ...none, ...o }).map((l) => l.content);
  assert.deepEqual(content({}), ['line 0', 'line 1', 'line 2', 'line 3', 'line 4']);
  assert.deepEqual(content({ tailLines: 2 }), ['line 3', 'line 4']);
  assert.deepEqual(content({ tailLines: 0 }), []);
  assert.deepEqual(content({ tailLines: 9 }).length, 5);
  assert.deepEqual(content({ sinceMs: T0 + 3000 }), ['line 3', 'line 4']);
  assert.deepEqual(content({ sinceMs: T0 + 1000, tailLines: 1 }), ['line 4']);
  // A P piece belongs to the line its F ends.
  const split = parseCriText(
    formatCriLine(T0, 'stdout', true, 'a') +
      formatCriLine(T0, 'stdout', false, 'b1') +
      formatCriLine(T0, 'stdout', true, 'b2'),
  );
  assert.deepEqual(
    selectCriLines(split, { ...none, tailLines: 1 }).map((l) => renderCriLine(l, true)),
    [`${criTime(T0)} b1`, `${criTime(T0)} b2\n`],
  );
});

test('limitBytes: the output stops after that many bytes', () => {
  const b = new ByteBudget(5);
  assert.equal(b.take('abc'), 'abc');
  assert.equal(b.spent, false);
  assert.equal(b.take('defg'), 'de');
  assert.equal(b.spent, true);
  assert.equal(b.take('h'), '');
  assert.equal(new ByteBudget(undefined).take('all of it'), 'all of it');
});
