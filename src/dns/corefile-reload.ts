// The Corefile's `reload` plugin for `svcnet dns`: the file is watched with the proxy's config
// watcher (src/proxy/config-watch.ts: inotify on every directory on the way to the file, so
// in-place writes, an editor's rename over it and a ConfigMap volume's `..data` symlink swap
// are all seen, plus a poll at the reload interval), and each new content is handed to
// `apply` while the old configuration keeps serving until then. As CoreDNS: content that is
// not a valid Corefile is logged and the running configuration stays; what `apply` cannot
// change live it reports, and that is logged too. It keeps watching until closed.

import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { watchConfigFile, type ConfigWatch } from '../proxy/config-watch.js';
import type { Clock, TimerHandle } from '../util/clock.js';

export interface CorefileReloadOptions<T> {
  readonly path: string;
  /** The text the running configuration came from. */
  readonly loaded: string;
  /** Throws (naming the file and line) when the text is not a usable Corefile. */
  readonly parse: (text: string) => T;
  /** Applies a parsed configuration; returns the settings that need a restart to change. */
  readonly apply: (parsed: T) => Promise<readonly string[]>;
  /** The reload plugin's interval: a poll besides inotify. */
  readonly intervalMs: number;
  readonly clock: Clock;
  readonly log: Logger;
  /** Quiet time before the file is read after an event (the watcher's default when unset). */
  readonly debounceMs?: number;
}

export interface CorefileReload {
  close(): void;
}

/** Starts watching (see the file header). */
export function reloadCorefile<T>(opts: CorefileReloadOptions<T>): CorefileReload {
  const { path, log, clock } = opts;
  let current = opts.loaded;
  let watch: ConfigWatch | undefined;
  let retry: TimerHandle | undefined;
  let closed = false;

  const arm = (): void => {
    if (closed) return;
    const w = watchConfigFile({
      path,
      loaded: current,
      validate: (text) => {
        opts.parse(text);
      },
      clock,
      pollMs: opts.intervalMs,
      ...(opts.debounceMs !== undefined ? { debounceMs: opts.debounceMs } : {}),
    });
    watch = w;
    void w.changed.then(async (change) => {
      if (closed) return;
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch (e) {
        // Gone (a ConfigMap volume mid-swap, or removed): keep serving, look again later.
        log.error(
          { file: path, err: e instanceof Error ? e.message : String(e) },
          'Corefile cannot be read; keeping the running configuration',
        );
        retry = clock.setTimeout(arm, opts.intervalMs);
        return;
      }
      current = text;
      if (change.kind === 'invalid') {
        log.error(
          { file: path, err: change.error.message },
          'Corefile is not valid; keeping the running configuration',
        );
      } else {
        try {
          const needsRestart = await opts.apply(opts.parse(text));
          log.info({ file: path }, 'Reloaded Corefile');
          if (needsRestart.length > 0)
            log.warn(
              { file: path, settings: needsRestart },
              'Corefile changes that need a restart were not applied',
            );
        } catch (e) {
          log.error(
            { file: path, err: e instanceof Error ? e.message : String(e) },
            'Corefile reload failed; keeping the running configuration',
          );
        }
      }
      arm();
    });
  };
  arm();
  return {
    close: () => {
      closed = true;
      clock.clearTimeout(retry);
      watch?.close();
    },
  };
}
