// Watches the proxy's `--config` file the way kube-proxy does, so that a changed
// KubeProxyConfiguration restarts the proxy (its DaemonSet, or the lab's supervisor, starts it
// again with the new file) instead of leaving it running on the old one. kube-proxy reacts to
// any write or rename of the file; this watcher reacts to a change of its content: a `touch`
// or a rewrite with the same bytes changes nothing and is ignored.
//
// What it sees: inotify watches (fs.watch) on the directory of every link on the way from the
// path to the file and on the directory that finally holds it, re-resolved after every check.
// So an in-place write, an editor's rename over the file and a ConfigMap volume's update (the
// kubelet writes a new `..<timestamp>` directory and renames a new `..data` symlink over the
// old one; the file is a symlink to `..data/<key>`) are all noticed. A slow poll (default
// 30 s) covers what inotify cannot see (a symlinked parent directory swapped, NFS).
//
// Debounce: every event restarts a quiet timer (up to 5 debounces after the first event, so a
// busy directory cannot starve it); when it fires the file is read, and a content
// that differs from the loaded one must read the same twice in a row (one debounce apart)
// before it counts, so an editor's truncate-then-write is seen as the finished file.
//
// It reports once and stops: `changed` for new, valid content; `invalid` when the new content
// fails `validate` (bad YAML, a bad field) or the file can no longer be read (removed). It does
// not exit: the caller (src/cli/proxy.ts) logs with `configChangeExit`, stops the daemon the
// normal way (the rules stay in the kernel, as over any proxy restart) and exits non-zero.

import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { lstat, readFile, readlink, realpath } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Logger } from 'pino';
import { SvcnetError } from '../errors.js';
import type { Clock, TimerHandle } from '../util/clock.js';

/** What happened to the file; reported once. */
export type ConfigFileChange =
  | { readonly kind: 'changed'; readonly file: string }
  | { readonly kind: 'invalid'; readonly file: string; readonly error: Error };

/** The outcome of one look at the file (tests and debug logs follow the watcher with it). */
export type ConfigCheck = 'unchanged' | 'settling' | 'changed' | 'invalid';

export interface ConfigWatchOptions {
  /** The path as given on the command line (relative to the working directory, or absolute). */
  readonly path: string;
  /** The text the running configuration was parsed from. */
  readonly loaded: string;
  /** Throws (naming the file and the field) when new content is not a usable configuration. */
  readonly validate: (text: string) => void;
  readonly clock: Clock;
  /** Reads the file (default: fs readFile as UTF-8); its error is what `invalid` reports. */
  readonly read?: (path: string) => Promise<string>;
  /** Quiet time after the last event before the file is read (default 200 ms). */
  readonly debounceMs?: number;
  /** Safety poll for changes inotify cannot see; 0 disables (default 30 s). */
  readonly pollMs?: number;
  /** Called after every look at the file. */
  readonly onCheck?: (check: ConfigCheck) => void;
}

export interface ConfigWatch {
  /** Resolves on the first content change (never rejects); pending until then. */
  readonly changed: Promise<ConfigFileChange>;
  /** Stops watching (idempotent); `changed` then stays pending. */
  close(): void;
}

const DEFAULT_DEBOUNCE_MS = 200;
const DEFAULT_POLL_MS = 30_000;
/** Events keep putting the look off by one debounce, but for no longer than this many in all. */
const MAX_WAIT_DEBOUNCES = 5;
/** Symlink hops followed before giving up (the kernel's limit is 40). */
const MAX_LINKS = 40;

/** A read that failed stands for itself: the same error twice is a stable state too. */
type Content = { readonly text: string } | { readonly error: Error };

function sameContent(a: Content, b: Content): boolean {
  if ('text' in a) return 'text' in b && a.text === b.text;
  return 'error' in b && a.error.message === b.error.message;
}

/**
 * The directories to watch for `path`: the one holding each link on the way to the file and
 * the one holding the file itself, each by its canonical path (a symlinked directory such as
 * `..data` is watched where it points now). Links that cannot be read end the walk.
 */
export async function directoriesToWatch(path: string): Promise<string[]> {
  const dirs = new Set<string>();
  let at = resolve(path);
  for (let hop = 0; hop < MAX_LINKS; hop++) {
    dirs.add(dirname(at));
    let target: string;
    try {
      if (!(await lstat(at)).isSymbolicLink()) break;
      target = await readlink(at);
    } catch {
      break;
    }
    at = resolve(dirname(at), target);
  }
  try {
    dirs.add(dirname(await realpath(path)));
  } catch {
    // gone: the directories above still see it come back
  }
  // One watch per directory, named canonically (`..data` is the `..<timestamp>` it points to).
  const canonical = new Set<string>();
  for (const d of dirs) canonical.add(await realpath(d).catch(() => d));
  return [...canonical].sort();
}

/** Starts watching `opts.path` (see the file header). Throws nothing; a watch that fails is skipped. */
export function watchConfigFile(opts: ConfigWatchOptions): ConfigWatch {
  const { clock, validate } = opts;
  const file = opts.path;
  const read = opts.read ?? ((p: string) => readFile(p, 'utf8'));
  const debounceMs = opts.debounceMs ?? DEFAULT_DEBOUNCE_MS;
  const pollMs = opts.pollMs ?? DEFAULT_POLL_MS;
  const watchers = new Map<string, FSWatcher>();
  let closed = false;
  let timer: TimerHandle | undefined;
  let poll: TimerHandle | undefined;
  let checking = false;
  let again = false;
  /** A differing content seen once, waiting to be read the same a second time. */
  let candidate: Content | undefined;
  let report: (c: ConfigFileChange) => void = () => undefined;
  const changed = new Promise<ConfigFileChange>((r) => (report = r));

  const close = (): void => {
    if (closed) return;
    closed = true;
    clock.clearTimeout(timer);
    clock.clearInterval(poll);
    for (const w of watchers.values()) w.close();
    watchers.clear();
  };

  /** First event of the current quiet wait: a busy directory must not put the check off forever. */
  let waitingSince: number | undefined;
  const schedule = (): void => {
    if (closed) return;
    const now = clock.now();
    waitingSince ??= now;
    const wait = Math.min(debounceMs, waitingSince + MAX_WAIT_DEBOUNCES * debounceMs - now);
    clock.clearTimeout(timer);
    timer = clock.setTimeout(() => {
      waitingSince = undefined;
      void check();
    }, wait);
  };

  /** Watches exactly `dirs`: new ones are added, the ones no longer on the way closed. */
  const rewatch = (dirs: readonly string[]): void => {
    for (const [dir, w] of watchers)
      if (!dirs.includes(dir)) {
        w.close();
        watchers.delete(dir);
      }
    for (const dir of dirs) {
      if (closed || watchers.has(dir)) continue;
      try {
        const w = watch(dir, { persistent: false }, schedule);
        // The directory was removed (a replaced `..<timestamp>` one): look again.
        w.on('error', () => {
          w.close();
          if (watchers.get(dir) === w) watchers.delete(dir);
          schedule();
        });
        watchers.set(dir, w);
      } catch {
        // gone already; the next check resolves the path again
      }
    }
  };

  const look = async (): Promise<Content> => {
    try {
      return { text: await read(file) };
    } catch (e) {
      return { error: e instanceof Error ? e : new Error(String(e)) };
    }
  };

  const decide = (content: Content): ConfigCheck => {
    if ('text' in content && content.text === opts.loaded) {
      candidate = undefined;
      return 'unchanged';
    }
    if (candidate === undefined || !sameContent(candidate, content)) {
      candidate = content;
      schedule();
      return 'settling';
    }
    if ('error' in content) {
      close();
      report({ kind: 'invalid', file, error: content.error });
      return 'invalid';
    }
    try {
      validate(content.text);
    } catch (e) {
      close();
      report({ kind: 'invalid', file, error: e instanceof Error ? e : new Error(String(e)) });
      return 'invalid';
    }
    close();
    report({ kind: 'changed', file });
    return 'changed';
  };

  const check = async (): Promise<void> => {
    if (closed) return;
    if (checking) {
      again = true;
      return;
    }
    checking = true;
    try {
      rewatch(await directoriesToWatch(file));
      if (closed) return;
      const outcome = decide(await look());
      opts.onCheck?.(outcome);
    } finally {
      checking = false;
      if (again && !closed) {
        again = false;
        schedule();
      }
    }
  };

  if (pollMs > 0) poll = clock.setInterval(schedule, pollMs);
  // The first look catches a change made between the caller's read and this watch.
  void check();
  return { changed, close };
}

/**
 * Logs a reported change (one line naming the file and what happened) and returns the error
 * the daemon exits with after its normal shutdown: CONFIG_CHANGED (exit 1) for new content,
 * INVALID_INPUT (exit 2, as a start with that file would) for content that is not usable.
 */
export function configChangeExit(change: ConfigFileChange, log: Logger): SvcnetError {
  const { file } = change;
  if (change.kind === 'changed') {
    log.warn({ file }, 'Configuration file changed; exiting so the proxy restarts with it');
    return new SvcnetError(
      'CONFIG_CHANGED',
      `${file}: content changed; exiting so that the proxy restarts with the new configuration`,
    );
  }
  const err = change.error.message;
  log.error({ file, err }, 'Configuration file is no longer valid; exiting');
  return new SvcnetError(
    'INVALID_INPUT',
    `${file}: changed and is no longer a valid configuration: ${err}`,
    { cause: change.error },
  );
}
