// The conformance harness: each suite file in this folder (`*.suite.ts`) exports `suite`,
// which runs upstream test vectors from ../shared/fixtures (read in place, never copied) and
// reports passes, failures and skips. scripts/conformance.ts prints one line per suite:
// `SUITE: N passed, M failed[, K skipped]`.

import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface CaseResult {
  readonly name: string;
  readonly status: 'passed' | 'failed' | 'skipped';
  /** Why it failed or was skipped. */
  readonly detail?: string;
}

export interface ConformanceSuite {
  readonly name: string;
  /** Returns the results, or a reason when the whole suite is skipped (fixtures absent). */
  run(fixturesDir: string): Promise<readonly CaseResult[] | { skipped: string }>;
}

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** ../shared/fixtures beside the checkout, or $SVCNET_FIXTURES. */
export function fixturesDir(): string {
  return process.env.SVCNET_FIXTURES ?? join(repoRoot, '..', 'shared', 'fixtures');
}

export function fixturesPresent(sub: string): string | undefined {
  const dir = join(fixturesDir(), sub);
  return existsSync(dir) ? dir : undefined;
}
