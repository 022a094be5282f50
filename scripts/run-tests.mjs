#!/usr/bin/env node
// Test launcher. Node 20's `node --test` neither expands globs nor picks up .ts files, so this
// lists the test files of a tier and hands them to node:test under tsx.
//   unit         src/**/*.test.ts           no root, no network
//   integration  test/integration/**/*.test.ts   root + private network namespaces
//   e2e          test/e2e/**/*.test.ts       the lab, browser
// Extra arguments are substrings that filter the file list.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';

const tiers = { unit: ['src'], integration: ['test/integration'], e2e: ['test/e2e'] };
const [tier = 'unit', ...filters] = process.argv.slice(2);
const roots = tiers[tier];
if (!roots) {
  console.error(
    `run-tests: unknown tier ${tier}; expected one of ${Object.keys(tiers).join(', ')}`,
  );
  process.exit(2);
}
const files = [];
for (const root of roots) {
  try {
    statSync(root);
  } catch {
    continue;
  }
  for (const entry of readdirSync(root, { recursive: true })) {
    const path = join(root, String(entry));
    if (!path.endsWith('.test.ts') || path.includes('node_modules')) continue;
    if (filters.length > 0 && !filters.some((f) => path.includes(f))) continue;
    files.push(relative('.', path));
  }
}
files.sort();
if (files.length === 0) {
  console.error(`run-tests: no ${tier} test files found`);
  process.exit(1);
}
const args = ['--import', 'tsx', '--test', '--test-reporter=spec'];
// Root tiers run one file at a time; a handle a test leaks must not hang CI, and no single test
// may run away with CI's 90 minutes.
if (tier !== 'unit')
  args.push('--test-concurrency=1', '--test-force-exit', '--test-timeout=600000');
let cmd = process.execPath;
let argv = [...args, ...files];
// Integration and e2e tests run inside a private network namespace that dies with the run, so no
// rule, route or address can reach the machine's root namespace even if a test misbehaves.
// Tests that need several hosts still create `ip netns` namespaces of their own in there.
if (tier !== 'unit' && process.getuid?.() === 0) {
  const probe = spawnSync('unshare', ['--net', 'true']);
  if (probe.status === 0) {
    argv = [
      '--net',
      '--',
      'sh',
      '-c',
      'ip link set lo up 2>/dev/null; exec "$@"',
      'sh',
      cmd,
      ...argv,
    ];
    cmd = 'unshare';
    process.env.SVCNET_PRIVATE_NETNS = '1';
  }
}
const result = spawnSync(cmd, argv, { stdio: 'inherit', env: process.env });
process.exit(result.status ?? 1);
