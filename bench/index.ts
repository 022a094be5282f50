// `npm run bench`: runs every bench/*.bench.ts (each exports `run(): Promise<void>` that
// prints its own figures). Optional arguments filter by file name. Speed and memory targets
// live here, never in unit tests.

import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const dir = dirname(fileURLToPath(import.meta.url));
const json = process.argv.includes('--json');
const filters = process.argv.slice(2).filter((a) => !a.startsWith('--'));
for (const file of readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .sort()) {
  if (filters.length > 0 && !filters.some((f) => file.includes(f))) continue;
  if (!json) process.stdout.write(`\n## ${file}\n`);
  const mod = (await import(pathToFileURL(join(dir, file)).href)) as { run: () => Promise<void> };
  await mod.run();
}
