import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import type { PipedProcess, StartPiped } from '../os/piped-process.js';
import {
  CH_CLOSE,
  CH_ERROR,
  CH_RESIZE,
  CH_STDIN,
  execArgv,
  execSession,
  execStatus,
  parseExecQuery,
  parseResize,
  shellQuote,
} from './kubelet-exec.js';

describe('exec request', () => {
  test('query: repeated command, flags; tty drops stderr', () => {
    const q = new URLSearchParams(
      'command=sh&command=-c&command=echo+hi&stdin=true&stdout=true&stderr=true&tty=true',
    );
    assert.deepEqual(parseExecQuery(q), {
      command: ['sh', '-c', 'echo hi'],
      stdin: true,
      stdout: true,
      stderr: false,
      tty: true,
    });
    assert.throws(() => parseExecQuery(new URLSearchParams('stdout=true')), /at least one command/);
    assert.throws(() => parseExecQuery(new URLSearchParams('command=ls')), /at least 1 of stdin/);
  });

  test('Status: Success, or NonZeroExitCode with the code as cause ExitCode', () => {
    assert.deepEqual(execStatus(['true'], 0), { metadata: {}, status: 'Success' });
    assert.deepEqual(execStatus(['sh', '-c', 'exit 3'], 3), {
      metadata: {},
      status: 'Failure',
      message:
        'command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
  });

  test('tty commands run under script, quoted for sh, sized by the first resize', () => {
    assert.deepEqual(execArgv(['ls', '-l'], false, undefined), ['ls', '-l']);
    assert.deepEqual(execArgv(['sh', '-c', "echo it's"], true, { width: 80, height: 24 }), [
      'script',
      '-qfec',
      `stty cols 80 rows 24 2>/dev/null; exec sh -c 'echo it'\\''s'`,
      '/dev/null',
    ]);
    assert.equal(shellQuote(['a b', '$x', 'plain/1.0']), "'a b' '$x' plain/1.0");
    assert.deepEqual(parseResize(Buffer.from('{"Width":120,"Height":40}')), {
      width: 120,
      height: 40,
    });
    assert.equal(parseResize(Buffer.from('nope')), undefined);
  });
});

/** A StartPiped whose process the test drives. */
function fakeProcess(): {
  start: StartPiped;
  started: { argv: string[]; env: Record<string, string> }[];
  exit(code: number): void;
  stdin: PassThrough;
  stdout: PassThrough;
  killed: () => boolean;
} {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let resolve: (n: number) => void = () => undefined;
  let killed = false;
  const started: { argv: string[]; env: Record<string, string> }[] = [];
  const proc: PipedProcess = {
    stdin,
    stdout,
    stderr,
    exited: new Promise((r) => (resolve = r)),
    kill: () => (killed = true),
  };
  return {
    start: (argv, env) => {
      started.push({ argv: [...argv], env: { ...env } });
      return proc;
    },
    started,
    exit: (code) => {
      stdout.end();
      resolve(code);
    },
    stdin,
    stdout,
    killed: () => killed,
  };
}

describe('execSession', () => {
  test('stdin in, stdout out on channel 1, v5 close ends stdin, Status then close', async () => {
    const fake = fakeProcess();
    const sent: Buffer[] = [];
    const closes: number[] = [];
    const s = execSession(
      { send: (b) => sent.push(b), close: (c) => closes.push(c ?? 1000) },
      'v5.channel.k8s.io',
      { command: ['cat'], stdin: true, stdout: true, stderr: true, tty: false },
      {
        wrap: (a) => ['ip', 'netns', 'exec', 'p-1', ...a],
        env: { HOSTNAME: 'pod' },
        start: fake.start,
      },
    );
    const [run] = fake.started;
    assert.ok(run);
    assert.deepEqual(run.argv, ['ip', 'netns', 'exec', 'p-1', 'cat']);
    assert.equal(run.env['HOSTNAME'], 'pod');
    let input = '';
    fake.stdin.on('data', (d: Buffer) => (input += d.toString()));
    const ended = new Promise((r) => fake.stdin.once('end', r));
    s.onMessage(Buffer.from([CH_STDIN, ...Buffer.from('hi\n')]));
    s.onMessage(Buffer.from([CH_CLOSE, CH_STDIN]));
    await ended;
    assert.equal(input, 'hi\n');
    fake.stdout.write('hi\n');
    fake.exit(2);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(sent[0], Buffer.from([1, ...Buffer.from('hi\n')]));
    const last = sent.at(1) ?? Buffer.alloc(1);
    assert.equal(last[0], CH_ERROR);
    const status = JSON.parse(String(last.subarray(1))) as {
      details: { causes: { message: string }[] };
    };
    assert.equal(status.details.causes[0]?.message, '2');
    assert.deepEqual(closes, [1000]);
  });

  test('tty waits for the first resize; the client going away kills the command', () => {
    const fake = fakeProcess();
    const s = execSession(
      { send: () => undefined, close: () => undefined },
      'v4.channel.k8s.io',
      { command: ['sh'], stdin: true, stdout: true, stderr: false, tty: true },
      { wrap: (a) => a, env: {}, start: fake.start },
    );
    assert.equal(fake.started.length, 0);
    s.onMessage(Buffer.from([CH_RESIZE, ...Buffer.from('{"Width":100,"Height":30}')]));
    assert.deepEqual(fake.started[0]?.argv, [
      'script',
      '-qfec',
      'stty cols 100 rows 30 2>/dev/null; exec sh',
      '/dev/null',
    ]);
    assert.equal(fake.started.at(0)?.env['TERM'], 'xterm');
    s.onClose();
    assert.ok(fake.killed());
  });
});
