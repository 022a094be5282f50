// The browser side of the UI tests: `svcnet ui`/`svcnet lab ui` started as a child process
// (resolving to the URL it prints), Debian's chromium driven headless by playwright-core, axe's
// serious and critical violations, screenshots under test-results/ui/, and the page's own
// timings of a load (first paint with data). Shared by the browser tests and the ui bench; it starts nothing in the machine's network namespace beyond a
// loopback listener.

import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

// What the callbacks evaluated in the page use (this tsconfig has no DOM types).
declare const window: Record<string, unknown>;

export const REPO = new URL('../../../', import.meta.url).pathname;
export const CHROMIUM = '/usr/bin/chromium';
export const ARTEFACTS = join(REPO, 'test-results/ui');

export interface UiChild {
  readonly url: string;
  readonly child: ChildProcess;
}

/** The newest modification time of the files under `dir` (0 when there are none). */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (e.isFile()) newest = Math.max(newest, statSync(join(e.parentPath, e.name)).mtimeMs);
  return newest;
}

/**
 * Builds dist/ui when it is missing (a fresh checkout before `npm run build`) or older than
 * the page's sources (a checkout that moved on since the last build), so a test never drives a
 * stale page.
 */
export function ensurePageBuilt(): void {
  mkdirSync(ARTEFACTS, { recursive: true });
  const built = join(REPO, 'dist/ui/index.html');
  if (existsSync(built) && statSync(built).mtimeMs >= newestMtime(join(REPO, 'src/ui'))) return;
  const r = spawnSync('npm', ['run', 'build:ui'], { cwd: REPO, stdio: 'inherit' });
  assert.equal(r.status, 0, 'npm run build:ui failed');
}

/**
 * Runs `svcnet ARGS…` (e.g. `['lab', 'ui', '--name', lab]`) and resolves with the URL it prints
 * on stdout; rejects with its stderr when it exits or prints nothing within `timeoutMs`.
 */
export async function startUiChild(args: readonly string[], timeoutMs = 180_000): Promise<UiChild> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(REPO, 'src/cli/main.ts'), ...args],
    {
      cwd: REPO,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let err = '';
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svcnet ${args.join(' ')} did not start in ${timeoutMs} ms: ${err}`));
    }, timeoutMs);
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
      reject(new Error(`svcnet ${args.join(' ')} exited ${String(code)}: ${err}`));
    });
  });
  return { url, child };
}

/** SIGTERM, then SIGKILL after 5 s; resolves once the child is gone. */
export async function stopChild(c: ChildProcess | undefined): Promise<void> {
  if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
  const exited = new Promise((r) => c.once('exit', r));
  c.kill('SIGTERM');
  const t = setTimeout(() => c.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(t);
}

/** Headless chromium (Debian's binary; --no-sandbox since the tests run as root). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}

/** axe-core's serious and critical violations on the page as it is now. */
export async function axeViolations(page: Page): Promise<string[]> {
  const source = readFileSync(join(REPO, 'node_modules/axe-core/axe.min.js'), 'utf8');
  await page.addScriptTag({ content: source });
  const found = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: {
          run(): Promise<{
            violations: { id: string; impact: string | null; nodes: { target: unknown }[] }[];
          }>;
        };
      }
    ).axe;
    const r = await axe.run();
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      targets: v.nodes.map((n) => JSON.stringify(n.target)).slice(0, 3),
    }));
  });
  return found
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.targets.join(' ')}`);
}

/** A full-page screenshot to test-results/ui/NAME.png. */
export async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTEFACTS, `${name}.png`), fullPage: true });
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
