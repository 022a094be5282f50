// `svcnet lab ui` against a live lab, in a real browser: the examples/lab walkthrough is
// applied to a 3-node lab, `svcnet lab ui --name LAB` runs as a child process and reads each
// node's live ruleset through the lab, and Debian's chromium (playwright-core) checks what a
// user would: the map shows nginx-svc with its 3 endpoints; the rules view shows the client's
// node's kernel rules annotated with nginx-svc's endpoints, and their chain graph the Service
// chain's 3 branches of 1/3; a trace from the client Pod to nginx-svc:3000 walks those live
// rules to 3 outcomes of 1/3 each, with the hop to each endpoint's node and the route the
// client's node takes (its routes read live); `kubectl scale
// deploy nginx --replicas 2` updates the open map without a reload (and the scale is put
// back). Screenshots go to test-results/ui/lab-*.png. The plain-API-server twin is
// test/integration/ui-browser.test.ts.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { E2E_PROXY_MODE, E2eLab, e2eSkipReason } from './lib/lab.js';
import { kubectlOk } from './lib/kubectl.js';
import { hasTool, missingToolsReason, skipOrFail } from '../integration/lib/prereq.js';
import {
  axeViolations,
  CHROMIUM,
  ensurePageBuilt,
  launchChromium,
  shot,
  startUiChild,
  stopChild,
  type UiChild,
} from '../integration/lib/ui-page.js';

// What the callbacks evaluated in the page use (this tsconfig has no DOM types).
declare const window: Record<string, unknown>;
declare const document: {
  querySelector(selector: string): { textContent: string | null } | null;
  querySelectorAll(selector: string): { length: number };
};

const examples = join(import.meta.dirname, '..', '..', 'examples', 'lab');

const skip = skipOrFail(
  e2eSkipReason() ||
    missingToolsReason(['kubectl']) ||
    (hasTool(CHROMIUM)
      ? false
      : 'needs chromium (Debian package chromium); install: bash scripts/install-deps.sh'),
);

describe('svcnet lab ui in chromium against a live lab', { skip }, () => {
  let lab: E2eLab | undefined;
  let ui: UiChild | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let clientNode = '';
  let nginxIPs: string[] = [];

  before(async () => {
    ensurePageBuilt();
    lab = await E2eLab.up('ui');
    for (const f of readdirSync(examples).sort())
      await lab.apply(readFileSync(join(examples, f), 'utf8'));
    await lab.settled();
    await lab.waitEndpoints('default', 'nginx-svc', 3);
    nginxIPs = await lab.endpoints('default', 'nginx-svc');
    clientNode = (await lab.pod('default', 'client'))?.spec?.nodeName ?? '';
    assert.notEqual(clientNode, '', 'the client Pod is scheduled');
    ui = await startUiChild(['lab', 'ui', '--name', lab.name, '--listen', '127.0.0.1:0']);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  });

  after(async () => {
    await browser?.close();
    await stopChild(ui?.child);
    await lab?.down();
  });

  const open = async (query: string): Promise<void> => {
    await page.goto(`${ui?.url ?? ''}?${query}`);
    await page.waitForSelector('body[data-loaded="1"]');
  };

  test("every node's rules come from the lab", async () => {
    const res = await fetch(`${ui?.url ?? ''}api/snapshot`);
    const snap = (await res.json()) as { rules: { node: string; origin: string }[] };
    assert.deepEqual(
      snap.rules.map((r) => `${r.node} ${r.origin}`).sort(),
      (lab?.nodes ?? []).map((n) => `${n.name} lab`).sort(),
    );
  });

  test('the map shows nginx-svc with its 3 endpoints', async () => {
    await open('view=map&service=default/nginx-svc');
    await page.getByTestId('service-details').waitFor();
    assert.equal(await page.getByTestId('endpoint-count').textContent(), '3');
    await page.waitForSelector('svg.graph g.box.pod.hl');
    assert.equal(await page.locator('svg.graph g.box.pod.hl').count(), 3);
    assert.equal(await page.locator('svg.graph g.box.node').count(), lab?.nodes.length);
    await shot(page, 'lab-map');
    assert.deepEqual(await axeViolations(page), []);
  });

  test("the rules view shows the client's node's live rules for nginx-svc's endpoints", async () => {
    await open(`view=rules&node=${clientNode}&rq=nginx-svc`);
    // The chain graph of those live rules: the Service chain's 3 branches of 1/3, to KUBE-SEP-…
    // chains in iptables mode, to the addresses of nft's inline `dnat to numgen … map` (or
    // endpoint-… chains, with session affinity) in nftables mode.
    await page.waitForSelector('[data-testid="chain-graph"] svg');
    const hint = (await page.locator('.rules-view p.hint').first().textContent()) ?? '';
    assert.match(hint, new RegExp(`rules of ${clientNode}`));
    const branch = page.locator(
      'g.cedge[data-to^="KUBE-SEP-"], g.cedge[data-to^="endpoint-"], g.cedge[data-to^="DNAT "]',
    );
    assert.deepEqual(await branch.locator('text.elabel').allTextContents(), ['1/3', '1/3', '1/3']);
    // Each endpoint named: by the kube-proxy comments (iptables) or as the DNAT target (nft).
    const named =
      E2E_PROXY_MODE === 'nftables'
        ? await Promise.all(
            (await page.locator('g.dnatbox').all()).map(
              async (g) => (await g.getAttribute('data-chain')) ?? '',
            ),
          )
        : await page.locator('.tag.ep').allTextContents();
    for (const ip of nginxIPs)
      assert.ok(
        named.some((t) => t.includes(`${ip}:80`)),
        `${ip}: ${named.join(', ')}`,
      );
    await shot(page, 'lab-rules');
    assert.deepEqual(await axeViolations(page), []);
  });

  test('a trace from the client Pod to nginx-svc:3000 walks the live rules to 3 outcomes of 1/3', async () => {
    await open('view=trace&src=pod/default/client&dst=service/default/nginx-svc/3000&proto=tcp');
    await page.getByTestId('trace-result').waitFor();
    assert.equal(await page.getByTestId('outcome-count').textContent(), '3');
    assert.deepEqual(await page.getByTestId('probability').allTextContents(), [
      '1/3',
      '1/3',
      '1/3',
    ]);
    const text = (await page.getByTestId('trace-result').textContent()) ?? '';
    assert.match(text, new RegExp(`through the lab rules of node ${clientNode}`));
    for (const ip of nginxIPs) assert.ok(text.includes(`${ip}:80`), `${ip}: ${text}`);
    // Each outcome says where its endpoint Pod is: on the client's node, or a hop away.
    const hops = await page.getByTestId('hop').allTextContents();
    assert.equal(hops.length, 3);
    const other = new RegExp(
      `^Node-to-node hop: ${clientNode} routes the packet to node \\S+ \\(\\d+\\.\\d+\\.\\d+\\.\\d+\\)(, whose podCIDR \\S+ holds|, to) the Pod IP`,
    );
    for (const h of hops) assert.ok(h.startsWith('No node-to-node hop') || other.test(h), h);
    // And the route the client's node takes, read live from its routing state.
    const routes = await page.getByTestId('hop-route').allTextContents();
    assert.equal(routes.length, 3, hops.join(' | '));
    const taken = new RegExp(
      `^Route on ${clientNode}: (via \\S+ dev \\S+|via flannel\\.1, next hop .* UDP 8472|dev \\S+: (the local bridge|directly attached), the Pod is on this node)`,
    );
    for (const r of routes) assert.match(r, taken);
    await shot(page, 'lab-trace');
    assert.deepEqual(await axeViolations(page), []);
  });

  test('kubectl scale deploy nginx --replicas 2 updates the open map without a reload', async () => {
    assert.ok(lab);
    await open('view=map&service=default/nginx-svc');
    await page.getByTestId('service-details').waitFor();
    await page.waitForSelector('[data-testid="live"]:text("live")');
    await page.evaluate(() => {
      (window as unknown as { marker: number }).marker = 42;
    });
    try {
      await kubectlOk(lab, ['scale', 'deploy', 'nginx', '--replicas', '2']);
      await page.waitForFunction(
        () => document.querySelector('[data-testid="endpoint-count"]')?.textContent === '2',
        undefined,
        { timeout: 30_000 },
      );
      assert.equal(
        await page.evaluate(() => (window as unknown as { marker?: number }).marker),
        42,
        'the page reloaded',
      );
      await page.waitForFunction(
        () => document.querySelectorAll('svg.graph g.box.pod.hl').length === 2,
      );
      await shot(page, 'lab-map-scaled');
    } finally {
      // Back to the walkthrough's 3, as the file found it.
      await kubectlOk(lab, ['scale', 'deploy', 'nginx', '--replicas', '3']);
    }
    await lab.waitEndpoints('default', 'nginx-svc', 3);
    await page.waitForFunction(
      () => document.querySelector('[data-testid="endpoint-count"]')?.textContent === '3',
      undefined,
      { timeout: 30_000 },
    );
  });
});
