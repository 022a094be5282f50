// The page load of `svcnet ui` for a 300-Service, 1000-Pod cluster (the issue's figure, 1 s
// target): a plain `svcnet apiserver` child holding those objects (no controllers), `svcnet
// ui` against it, and Debian's chromium loading the map five times. The figure is the best
// time from navigation until the cluster's data is on screen (the page's `svcnet-data`
// mark); first contentful paint and the snapshot's arrival are printed beside it.

import { readFileSync } from 'node:fs';
import { startApiServerChild } from '../test/integration/lib/apiserver-child.js';
import { hasTool } from '../test/integration/lib/prereq.js';
import { apiOf, createLargeCluster } from '../test/integration/lib/ui-cluster.js';
import {
  CHROMIUM,
  ensurePageBuilt,
  firstPaintRuns,
  launchChromium,
  startUiChild,
  stopChild,
  type UiChild,
} from '../test/integration/lib/ui-page.js';

const JSON_OUT = process.argv.includes('--json');
const SERVICES = 300;
const PODS = 1000;
const TARGET_MS = 1000;

function figure(name: string, value: number, unit: string, target?: number): void {
  const line = { bench: 'ui', figure: name, value: Math.round(value), unit };
  process.stdout.write(
    JSON_OUT
      ? `${JSON.stringify(target === undefined ? line : { ...line, target })}\n`
      : `${name}: ${Math.round(value)} ${unit}${target === undefined ? '' : ` (target ${target})`}\n`,
  );
}

export async function run(): Promise<void> {
  if (!hasTool(CHROMIUM)) {
    process.stdout.write('ui: skipped, needs chromium (bash scripts/install-deps.sh)\n');
    return;
  }
  ensurePageBuilt();
  const server = await startApiServerChild();
  let ui: UiChild | undefined;
  const browser = await launchChromium();
  try {
    const api = apiOf(server, readFileSync(server.caFile, 'utf8'));
    await createLargeCluster(api, 'big', SERVICES, PODS);
    ui = await startUiChild(['ui', '--kubeconfig', server.kubeconfig, '--listen', '127.0.0.1:0']);
    // The UI's informers first catch up with the writes: the figure is the page's load.
    for (;;) {
      const snap = (await (await fetch(`${ui.url}api/snapshot`)).json()) as {
        services: unknown[];
        pods: unknown[];
      };
      if (snap.services.length >= SERVICES && snap.pods.length >= PODS) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const runs = await firstPaintRuns(page, ui.url, 5);
    const best = runs.reduce((a, b) => (b.data < a.data ? b : a));
    figure('page_load_300svc_1000pod', best.data, 'ms', TARGET_MS);
    figure('first_contentful_paint_300svc_1000pod', best.fcp, 'ms');
    figure('snapshot_received_300svc_1000pod', best.snapshotMs, 'ms');
  } finally {
    await browser.close();
    await stopChild(ui?.child);
    await server.stop();
  }
}
