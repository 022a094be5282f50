// Runs every conformance suite (test/conformance/*.suite.ts) and prints one line per suite,
// `SUITE: N passed, M failed[, K skipped]`, after the details of each failure. Exits 1 if any
// case failed. Optional arguments filter suites by name.

import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { fixturesDir, type ConformanceSuite } from '../test/conformance/harness.js';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'test', 'conformance');
const filters = process.argv.slice(2);
const verbose = process.env.VERBOSE === '1';
let anyFailed = false;
let anySkipped = false;
const summary: string[] = [];
for (const file of readdirSync(dir)
  .filter((f) => f.endsWith('.suite.ts'))
  .sort()) {
  const mod = (await import(pathToFileURL(join(dir, file)).href)) as { suite: ConformanceSuite };
  const suite = mod.suite;
  if (filters.length > 0 && !filters.some((f) => suite.name.includes(f))) continue;
  const results = await suite.run(fixturesDir());
  if ('skipped' in results) {
    process.stdout.write(`${suite.name}: skipped: ${results.skipped}\n`);
    anySkipped = true;
    summary.push(`${suite.name}: 0 passed, 0 failed, 1 skipped`);
    continue;
  }
  const count = (s: string) => results.filter((r) => r.status === s).length;
  for (const r of results) {
    if (r.status === 'failed' || (verbose && r.status === 'skipped'))
      process.stdout.write(
        `  ${r.status.toUpperCase()} ${suite.name} ${r.name}${r.detail ? `\n${r.detail.replace(/^/gm, '    ')}` : ''}\n`,
      );
  }
  const skipped = count('skipped');
  if (count('failed') > 0) anyFailed = true;
  summary.push(
    `${suite.name}: ${count('passed')} passed, ${count('failed')} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`,
  );
}
if (anySkipped)
  process.stdout.write(
    `conformance: fixtures not found in ${fixturesDir()}. They are not part of this repository: ` +
      "get the svcnet project's shared fixtures folder (fixtures/kube-proxy and fixtures/dns, " +
      'test vectors transcribed from the upstream kube-proxy and CoreDNS tests) and run ' +
      '`SVCNET_FIXTURES=/path/to/fixtures npm run conformance` (docs/testing.md#conformance)\n',
  );
for (const line of summary) process.stdout.write(`${line}\n`);
process.exitCode = anyFailed ? 1 : 0;
