// Test support for the nftables library: where kube-proxy's nftables fixtures live (read in
// place, never copied; SVCNET_FIXTURES overrides) and every rule text they hold — the
// `expectRuleset` and `preloadRuleset` steps and any `expectChain` — with a name to report.
// Test code only: nothing at run time imports it.

import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..', '..');

/** The shared fixtures root (`../shared/fixtures` beside the checkout). */
export const fixturesRoot = process.env.SVCNET_FIXTURES ?? join(repo, '..', 'shared', 'fixtures');
export const nftFixtureDir = join(fixturesRoot, 'kube-proxy', 'nftables');

export interface FixtureText {
  /** `TestOverallNFTablesRules#3 expectRuleset`: file, step index, action. */
  readonly name: string;
  readonly action: string;
  readonly text: string;
}

const TEXT_ACTIONS = new Set(['expectRuleset', 'preloadRuleset', 'expectChain']);

function collect(file: string, v: unknown, path: string, out: FixtureText[]): void {
  if (Array.isArray(v)) {
    v.forEach((x, i) => {
      collect(file, x, `${path}[${String(i)}]`, out);
    });
    return;
  }
  if (v === null || typeof v !== 'object') return;
  const o = v as Record<string, unknown>;
  const action =
    typeof o.action === 'string' ? o.action : o.expectChain !== undefined ? 'expectChain' : '';
  if (TEXT_ACTIONS.has(action) && typeof o.text === 'string') {
    out.push({ name: `${file}#${path} ${action}`, action, text: o.text });
  }
  for (const [k, x] of Object.entries(o))
    if (typeof x === 'object') collect(file, x, `${path}.${k}`, out);
}

/** Every rule text of the nftables fixtures, in file order; [] when the fixtures are absent. */
export function fixtureTexts(): FixtureText[] {
  if (!existsSync(nftFixtureDir)) return [];
  const out: FixtureText[] = [];
  for (const f of readdirSync(nftFixtureDir)
    .filter((n) => n.endsWith('.json'))
    .sort()) {
    const json: unknown = JSON.parse(readFileSync(join(nftFixtureDir, f), 'utf8'));
    collect(f.replace(/\.json$/, ''), json, '', out);
  }
  return out;
}

/** The text of one step of one fixture file, e.g. (`TestOverallNFTablesRules`, `expectRuleset`). */
export function fixtureText(test: string, action: string, nth = 0): string | undefined {
  return fixtureTexts().filter((t) => t.name.startsWith(`${test}#`) && t.action === action)[nth]
    ?.text;
}
