import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock, flushMicrotasks } from '../util/clock.js';
import type { ComponentSpec } from './components.js';
import { ComponentKeeper, restartDelay } from './keeper.js';
import type { RunningComponent } from './run-components.js';

/** A fake component process: `exit(code)` ends it; a signal ends it with 128+n. */
interface FakeProc extends RunningComponent {
  exit(code: number): void;
  signals: string[];
}

let nextPid = 100;
function fakeProc(spec: ComponentSpec): FakeProc {
  let resolve: (code: number) => void = () => undefined;
  const exited = new Promise<number>((r) => (resolve = r));
  const signals: string[] = [];
  return {
    spec,
    proc: {
      pid: nextPid++,
      exited,
      signal: (sig) => {
        signals.push(sig);
        resolve(143);
      },
    },
    exit: resolve,
    signals,
  };
}

const spec = (name: string): ComponentSpec => ({
  name,
  netns: 'n',
  args: [name],
  ready: { kind: 'none' },
});

function setup(names: string[] = ['proxy-a', 'agent-a']) {
  const clock = new FakeClock();
  const specs = names.map(spec);
  const started: FakeProc[] = [];
  const logs: string[] = [];
  let failStarts = 0;
  const start = (s: ComponentSpec): Promise<RunningComponent> => {
    if (failStarts > 0) {
      failStarts--;
      return Promise.reject(new Error(`${s.name} exited with 1 while starting`));
    }
    const p = fakeProc(s);
    started.push(p);
    return Promise.resolve(p);
  };
  const first = specs.map(fakeProc);
  const keeper = new ComponentKeeper(specs, first, {
    start,
    stop: async (running) => {
      for (const c of running) c.proc.signal('SIGTERM');
      await Promise.all(running.map((c) => c.proc.exited));
    },
    clock,
    log: (m) => logs.push(m),
  });
  return {
    clock,
    keeper,
    first,
    started,
    logs,
    failNextStarts: (n: number) => (failStarts = n),
  };
}

test("restartDelay: at once, then the kubelet's 10 s doubling up to 5 min", () => {
  assert.deepEqual(
    [0, 1, 2, 3, 5, 6, 7, 20].map(restartDelay),
    [0, 10_000, 20_000, 40_000, 160_000, 300_000, 300_000, 300_000],
  );
});

test('a proxy that exits non-zero (its config changed) is started again at once', async () => {
  const { clock, keeper, first, started, logs } = setup();
  first[0]?.exit(1);
  await clock.advance(0);
  assert.equal(started.length, 1);
  assert.equal(started[0]?.spec.name, 'proxy-a');
  assert.equal(keeper.running('proxy-a'), started[0]);
  assert.equal(keeper.restarts('proxy-a'), 1);
  assert.equal(keeper.restarts('agent-a'), 0);
  assert.deepEqual(logs, [
    'proxy-a exited with 1; restarting',
    'proxy-a started again (pid 102, restarts 1)',
  ]);
});

test('exits in a row back off (10 s, 20 s, ...); 10 min of running forgets the back-off', async () => {
  const { clock, keeper, first, started, logs } = setup(['proxy-a']);
  first[0]?.exit(1);
  await clock.advance(0);
  started[0]?.exit(1);
  await clock.advance(9999);
  assert.equal(started.length, 1, 'waits 10 s before the second restart');
  await clock.advance(1);
  assert.equal(started.length, 2);
  started[1]?.exit(2);
  await clock.advance(19_999);
  assert.equal(started.length, 2);
  await clock.advance(1);
  assert.equal(started.length, 3);
  assert.deepEqual(
    logs.filter((l) => !l.includes('started again')),
    [
      'proxy-a exited with 1; restarting',
      'proxy-a exited with 1; restarting in 10000 ms',
      'proxy-a exited with 2; restarting in 20000 ms',
    ],
  );
  // Nine minutes of running is not enough: the next exit waits 40 s.
  await clock.advance(9 * 60_000);
  started[2]?.exit(1);
  await clock.advance(39_999);
  assert.equal(started.length, 3);
  await clock.advance(1);
  assert.equal(started.length, 4);
  // Ten minutes is: the next exit restarts at once again.
  await clock.advance(10 * 60_000);
  started[3]?.exit(1);
  await clock.advance(0);
  assert.equal(started.length, 5);
  assert.equal(keeper.restarts('proxy-a'), 5);
});

test('the back-off is capped at 5 min', async () => {
  const { clock, first, started } = setup(['proxy-a']);
  first[0]?.exit(1);
  let waited = 0;
  for (let i = 0; i < 8; i++) {
    const before = started.length;
    while (started.length === before) {
      await clock.advance(1000);
      waited += 1000;
    }
    const delay = waited;
    waited = 0;
    if (i === 0) assert.equal(delay, 1000, 'first restart at once (first advance)');
    if (i >= 6) assert.equal(delay, 300_000);
    started.at(-1)?.exit(1);
  }
});

test('status: running with pid, backoff with its due time, restarting, and the restart count', async () => {
  const changes: string[] = [];
  const { clock, keeper, first, started } = setup(['apiserver', 'proxy-a']);
  const snapshot = (): string =>
    keeper
      .status()
      .map((s) => `${s.name}=${s.state}`)
      .join(',');
  assert.deepEqual(
    keeper.status().map((s) => [s.name, s.state, s.pid, s.restarts]),
    [
      ['apiserver', 'running', first[0]?.proc.pid, 0],
      ['proxy-a', 'running', first[1]?.proc.pid, 0],
    ],
  );
  first[0]?.exit(137);
  await flushMicrotasks();
  changes.push(snapshot());
  await clock.advance(0);
  changes.push(snapshot());
  started[0]?.exit(137);
  await clock.advance(0);
  const st = keeper.status()[0];
  assert.equal(st?.state, 'backoff');
  assert.equal(st.nextStartAt, clock.now() + 10_000);
  assert.equal(st.lastExit, 'exited with 137');
  assert.equal(st.pid, undefined);
  await clock.advance(10_000);
  changes.push(snapshot());
  assert.deepEqual(changes, [
    'apiserver=restarting,proxy-a=running',
    'apiserver=running,proxy-a=running',
    'apiserver=running,proxy-a=running',
  ]);
  assert.equal(keeper.status()[0]?.restarts, 2);
  assert.equal(keeper.status()[0]?.pid, started[1]?.proc.pid);
});

test('onChange is called on every change of state', async () => {
  const clock = new FakeClock();
  let calls = 0;
  const a = fakeProc(spec('apiserver'));
  const keeper = new ComponentKeeper([spec('apiserver')], [a], {
    start: (s) => Promise.resolve(fakeProc(s)),
    stop: () => Promise.resolve(),
    clock,
    log: () => undefined,
    onChange: () => calls++,
  });
  assert.equal(calls, 0, 'not while constructing');
  a.exit(1);
  await clock.advance(0);
  // exited (restart scheduled), timer fired (start under way), running again
  assert.equal(calls, 3);
  assert.equal(keeper.status()[0]?.state, 'running');
  await keeper.stop();
  assert.equal(calls, 3, 'not after stop');
});

test('a start that fails is tried again with the back-off', async () => {
  const { clock, first, started, logs, failNextStarts } = setup(['proxy-a']);
  failNextStarts(1);
  first[0]?.exit(1);
  await clock.advance(0);
  assert.equal(started.length, 0);
  assert.match(logs[1] ?? '', /^proxy-a failed to start: .*; restarting in 10000 ms$/);
  await clock.advance(10_000);
  assert.equal(started.length, 1);
});

test('lab restart stops and starts the component; its stop is not taken for a crash', async () => {
  const { clock, keeper, first, started, logs } = setup();
  const pid = await keeper.restart('proxy-a');
  await clock.advance(10_000);
  assert.deepEqual(first[0]?.signals, ['SIGTERM']);
  assert.equal(started.length, 1, 'one new process, no extra restart');
  assert.equal(pid, started[0]?.proc.pid);
  assert.equal(keeper.restarts('proxy-a'), 0);
  assert.deepEqual(logs, ['restarting proxy-a']);
  assert.equal(await keeper.restart('nope'), undefined);
});

test('stop ends every component and nothing restarts afterwards', async () => {
  const { clock, keeper, first, started } = setup();
  first[1]?.exit(1);
  first[0]?.exit(1);
  await keeper.stop();
  await clock.advance(120_000);
  assert.equal(started.length, 0);
  assert.equal(keeper.running('proxy-a'), undefined);
});

test('a restart pending its back-off is cancelled by the teardown', async () => {
  const { clock, keeper, first, started } = setup(['proxy-a']);
  first[0]?.exit(1);
  await clock.advance(0);
  started[0]?.exit(1);
  await clock.advance(0);
  await keeper.stop();
  await clock.advance(5000);
  assert.equal(started.length, 1);
  assert.equal(clock.pendingTimers(), 0);
});

test('a lab restart whose start fails is reported and then retried with the back-off', async () => {
  const { clock, keeper, started, failNextStarts } = setup(['proxy-a']);
  failNextStarts(1);
  await assert.rejects(keeper.restart('proxy-a'), /exited with 1 while starting/);
  assert.equal(started.length, 0);
  await clock.advance(0);
  assert.equal(started.length, 1, 'started again at once, as after a crash');
  assert.equal(keeper.running('proxy-a'), started[0]);
});
