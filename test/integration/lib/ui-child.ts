// `svcnet ui` as a child process for the browser test and the ui bench: builds dist/ui when
// a fresh checkout lacks it, starts the CLI on a free loopback port (the URL it prints), stops
// it by PID, and measures the page's first paint with data in a real browser (the page marks
// `svcnet-data` when the cluster's snapshot is on screen).

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';

const REPO = new URL('../../../', import.meta.url).pathname;

export interface UiChild {
  readonly url: string;
  readonly child: ChildProcess;
}

/** Builds dist/ui when it is missing (a fresh checkout before `npm run build`). */
export function ensurePageBuilt(): void {
  if (existsSync(join(REPO, 'dist/ui/index.html'))) return;
  const r = spawnSync('npm', ['run', 'build:ui'], { cwd: REPO, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('npm run build:ui failed');
}

/** `svcnet ui --kubeconfig K --listen 127.0.0.1:0 [--rules NODE=FILE]`, once it prints its URL. */
export async function startUiChild(
  kubeconfig: string,
  rules: readonly string[] = [],
): Promise<UiChild> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(REPO, 'src/cli/main.ts'),
      'ui',
      '--kubeconfig',
      kubeconfig,
      '--listen',
      '127.0.0.1:0',
      ...rules.flatMap((r) => ['--rules', r]),
    ],
    { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let err = '';
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      reject(new Error(`svcnet ui did not start in 180 s: ${err}`));
    }, 180_000);
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /open (http:\/\/\S+)/.exec(out);
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`svcnet ui exited ${code}: ${err}`));
    });
  });
  return { url, child };
}

/** SIGTERM, SIGKILL after 5 s; resolves when the child has exited. */
export async function stopChild(c: ChildProcess | undefined): Promise<void> {
  if (c === undefined || c.exitCode !== null) return;
  const exited = new Promise((r) => c.once('exit', r));
  c.kill('SIGTERM');
  const t = setTimeout(() => c.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(t);
}

/** One load of the map: when the data was shown, first contentful paint, snapshot received. */
export interface PaintRun {
  readonly data: number;
  readonly fcp: number;
  readonly snapshotMs: number;
}

/** Loads `url?view=map` `times` times in `page`; the browser's own timings of each load. */
export async function firstPaintRuns(page: Page, url: string, times = 3): Promise<PaintRun[]> {
  const runs: PaintRun[] = [];
  for (let i = 0; i < times; i++) {
    await page.goto(`${url}?view=map`);
    await page.waitForSelector('body[data-loaded="1"]');
    runs.push(
      await page.evaluate(() => ({
        data: performance.getEntriesByName('svcnet-data')[0]?.startTime ?? -1,
        fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1,
        snapshotMs:
          (
            performance
              .getEntriesByType('resource')
              .find((e) => e.name.endsWith('/api/snapshot'))
              ?.toJSON() as { responseEnd: number } | undefined
          )?.responseEnd ?? -1,
      })),
    );
  }
  return runs;
}
