import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  mkdirSync,
  mkdtempSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock, realClock } from '../util/clock.js';
import { directoriesToWatch, watchConfigFile } from './config-watch.js';
import type { ConfigCheck, ConfigFileChange, ConfigWatch } from './config-watch.js';

const root = mkdtempSync(join(tmpdir(), 'svcnet-config-watch-'));
after(() => {
  rmSync(root, { recursive: true, force: true });
});

const V1 = 'mode: iptables\n';
const V2 = 'mode: nftables\n';
let n = 0;

/** A fresh directory under the test root. */
function dir(): string {
  const d = join(root, `case-${String(n++)}`);
  mkdirSync(d);
  return d;
}

/** The validation the CLI does, reduced to what the tests need: YAML-ish `key: value` lines. */
function validate(text: string): void {
  if (!/^(\w+: \w+\n)+$/.test(text)) throw new Error(`bad config: ${JSON.stringify(text)}`);
}

/** A watcher on real files (the wall clock unless given), with each of its looks queued. */
function start(
  path: string,
  loaded = V1,
  extra: Partial<Parameters<typeof watchConfigFile>[0]> = {},
): {
  w: ConfigWatch;
  nextCheck: () => Promise<ConfigCheck>;
  outcome: () => Promise<ConfigFileChange>;
} {
  const checks: ConfigCheck[] = [];
  const waiters: ((c: ConfigCheck) => void)[] = [];
  const w = watchConfigFile({
    path,
    loaded,
    validate,
    clock: realClock,
    debounceMs: 20,
    pollMs: 0,
    ...extra,
    onCheck: (c) => {
      const waiter = waiters.shift();
      if (waiter) waiter(c);
      else checks.push(c);
    },
  });
  after(() => {
    w.close();
  });
  const timeout = <T>(p: Promise<T>, what: string): Promise<T> => {
    let t: NodeJS.Timeout | undefined;
    return Promise.race([
      p,
      new Promise<T>((_, reject) => {
        t = setTimeout(() => {
          reject(new Error(`no ${what} within 5 s`));
        }, 5000);
      }),
    ]).finally(() => {
      clearTimeout(t);
    });
  };
  return {
    w,
    nextCheck: () => {
      const c = checks.shift();
      if (c !== undefined) return Promise.resolve(c);
      return timeout(new Promise<ConfigCheck>((r) => waiters.push(r)), 'check');
    },
    outcome: () => timeout(w.changed, 'report'),
  };
}

/** Whether `p` has settled (looked at after the event loop turned). */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise<void>((r) => setImmediate(r));
  return done;
}

/** The kubelet's ConfigMap volume layout: config.conf -> ..data/config.conf, ..data -> ..TS. */
function configMap(d: string, stamp: string, text: string): void {
  mkdirSync(join(d, stamp));
  writeFileSync(join(d, stamp, 'config.conf'), text);
  symlinkSync(stamp, join(d, '..data_tmp'));
  // What the kubelet's atomic writer does: a new directory, a new ..data renamed over the old.
  renameSync(join(d, '..data_tmp'), join(d, '..data'));
}

/** V1 in a plain file `d/config.conf`. */
function plainFile(d: string): string {
  writeFileSync(join(d, 'config.conf'), V1);
  return join(d, 'config.conf');
}

const changes: {
  name: string;
  /** Lays out the loaded V1 in `d`; returns the path given to the watcher. */
  layout: (d: string) => string;
  /** Puts V2 in place. */
  change: (d: string) => void;
}[] = [
  {
    name: 'an in-place write',
    layout: plainFile,
    change: (d) => {
      writeFileSync(join(d, 'config.conf'), V2);
    },
  },
  {
    name: 'a new file renamed over the old one (an editor save)',
    layout: plainFile,
    change: (d) => {
      writeFileSync(join(d, '.config.conf.swp'), V2);
      renameSync(join(d, '.config.conf.swp'), join(d, 'config.conf'));
    },
  },
  {
    name: 'a ConfigMap volume update (new ..timestamp directory, ..data renamed over)',
    layout: (d) => {
      configMap(d, '..2026_11_25_05_00_00.1', V1);
      symlinkSync('..data/config.conf', join(d, 'config.conf'));
      return join(d, 'config.conf');
    },
    change: (d) => {
      configMap(d, '..2026_11_25_05_01_00.2', V2);
      rmSync(join(d, '..2026_11_25_05_00_00.1'), { recursive: true });
    },
  },
  {
    name: 'an in-place write to the target of a symlink in another directory',
    layout: (d) => {
      mkdirSync(join(d, 'elsewhere'));
      writeFileSync(join(d, 'elsewhere', 'real.conf'), V1);
      mkdirSync(join(d, 'here'));
      symlinkSync(join(d, 'elsewhere', 'real.conf'), join(d, 'here', 'config.conf'));
      return join(d, 'here', 'config.conf');
    },
    change: (d) => {
      writeFileSync(join(d, 'elsewhere', 'real.conf'), V2);
    },
  },
];

for (const { name, layout, change } of changes)
  test(`${name} with new content is reported as changed`, async () => {
    const d = dir();
    const file = layout(d);
    const { nextCheck, outcome } = start(file);
    assert.equal(await nextCheck(), 'unchanged');
    change(d);
    assert.deepEqual(await outcome(), { kind: 'changed', file });
  });

test('the directories watched for a ConfigMap file: the mount and where ..data points', async () => {
  const d = dir();
  configMap(d, '..2026_11_25_05_00_00.1', V1);
  symlinkSync('..data/config.conf', join(d, 'config.conf'));
  assert.deepEqual(await directoriesToWatch(join(d, 'config.conf')), [
    realpathSync(d),
    realpathSync(join(d, '..2026_11_25_05_00_00.1')),
  ]);
});

test('a touch, or a rewrite with the same bytes, changes nothing', async () => {
  const d = dir();
  const file = join(d, 'config.conf');
  writeFileSync(file, V1);
  const { w, nextCheck } = start(file);
  assert.equal(await nextCheck(), 'unchanged');
  const later = new Date(Date.now() + 60_000);
  utimesSync(file, later, later);
  assert.equal(await nextCheck(), 'unchanged');
  writeFileSync(file, V1);
  assert.equal(await nextCheck(), 'unchanged');
  // Renamed over with the same bytes (a ConfigMap re-sync without a change): still nothing.
  writeFileSync(join(d, 'tmp'), V1);
  renameSync(join(d, 'tmp'), file);
  assert.equal(await nextCheck(), 'unchanged');
  assert.equal(await settled(w.changed), false);
});

test('content that fails validation is reported as invalid with the error', async () => {
  const file = join(dir(), 'config.conf');
  writeFileSync(file, V1);
  const { nextCheck, outcome } = start(file);
  assert.equal(await nextCheck(), 'unchanged');
  writeFileSync(file, 'mode: [unclosed\n');
  const got = await outcome();
  assert.equal(got.kind, 'invalid');
  assert.equal(got.file, file);
  assert.match(got.kind === 'invalid' ? got.error.message : '', /^bad config: "mode: \[unclosed/);
});

test('a removed file is reported as invalid with the read error', async () => {
  const file = join(dir(), 'config.conf');
  writeFileSync(file, V1);
  const { nextCheck, outcome } = start(file);
  assert.equal(await nextCheck(), 'unchanged');
  rmSync(file);
  const got = await outcome();
  assert.equal(got.kind, 'invalid');
  assert.match(got.kind === 'invalid' ? got.error.message : '', /ENOENT/);
});

test('a change made before the watch started is seen by its first look', async () => {
  const file = join(dir(), 'config.conf');
  writeFileSync(file, V2);
  const { outcome } = start(file, V1);
  assert.deepEqual(await outcome(), { kind: 'changed', file });
});

test('debounce: content counts only once it reads the same twice; half a write is never validated', async () => {
  const clock = new FakeClock();
  const reads = ['mode: nft', V2, V2];
  const validated: string[] = [];
  const { w, nextCheck } = start(join(dir(), 'config.conf'), V1, {
    clock,
    read: () => Promise.resolve(reads.shift() ?? V2),
    validate: (t) => validated.push(t),
    debounceMs: 100,
  });
  assert.equal(await nextCheck(), 'settling');
  await clock.advance(100);
  assert.equal(await nextCheck(), 'settling');
  assert.equal(await settled(w.changed), false);
  await clock.advance(100);
  assert.equal(await nextCheck(), 'changed');
  assert.deepEqual(validated, [V2]);
  assert.equal((await w.changed).kind, 'changed');
  assert.equal(clock.pendingTimers(), 0, 'nothing left running after the report');
});

test('the safety poll looks at the file without any event', async () => {
  const clock = new FakeClock();
  let text = V1;
  const file = join(dir(), 'config.conf');
  const { w, nextCheck } = start(file, V1, {
    clock,
    read: () => Promise.resolve(text),
    debounceMs: 10,
    pollMs: 1000,
  });
  assert.equal(await nextCheck(), 'unchanged');
  text = V2;
  await clock.advance(1010);
  assert.equal(await nextCheck(), 'settling');
  await clock.advance(10);
  assert.equal(await nextCheck(), 'changed');
  assert.deepEqual(await w.changed, { kind: 'changed', file });
});

test('a directory that never goes quiet still gets the file looked at', async () => {
  const d = dir();
  const file = plainFile(d);
  const { nextCheck, outcome } = start(file, V1, { debounceMs: 200 });
  assert.equal(await nextCheck(), 'unchanged');
  // Another file in the directory written every 10 ms for 6 s: events never stop for 200 ms.
  let churning = true;
  let reported = false;
  const churn = (async () => {
    for (const t0 = Date.now(); !reported && Date.now() - t0 < 6000;) {
      writeFileSync(join(d, 'busy.log'), String(Date.now()));
      await new Promise((r) => setTimeout(r, 10));
    }
    churning = false;
  })();
  writeFileSync(file, V2);
  try {
    assert.deepEqual(await outcome(), { kind: 'changed', file });
    assert.ok(churning, 'reported while the directory was still busy');
  } finally {
    reported = true;
    await churn;
  }
});
