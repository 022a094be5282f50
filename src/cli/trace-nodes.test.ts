// One node model for render and trace: a NodePort traced on every node of a three-node
// manifest (examples/nodes.yaml, kind-like) gives the outcomes of that node's own rules —
// the same as tracing the output of `svcnet render --node` for it — and both commands print
// the same resolved node line.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runRender } from './render.js';
import { runTrace, type TraceFlags } from './trace.js';

// examples/nodeport-local.yaml has externalTrafficPolicy Local: each node forwards its NodePort
// only to its own endpoints, so a trace with the wrong node (or node IP) answers differently.
const dir = mkdtempSync(join(tmpdir(), 'svcnet-trace-nodes-'));
const FILES = ['examples/nodes.yaml', 'examples/nodeport.yaml', 'examples/nodeport-local.yaml'];
const NODES = [
  { name: 'svcnet-control-plane', ip: '172.18.0.2', local: [] as string[] },
  { name: 'svcnet-worker', ip: '172.18.0.3', local: ['10.244.1.21:8080'] },
  { name: 'svcnet-worker2', ip: '172.18.0.4', local: ['10.244.2.21:8080', '10.244.2.22:8080'] },
];

interface Outcome {
  probability: number;
  verdict: string;
  dnat?: string;
  masquerade?: boolean;
}

function flags(extra: Partial<TraceFlags>, dst: string): TraceFlags {
  return {
    src: '203.0.113.7',
    dst,
    ctState: 'NEW',
    mode: 'kernel',
    assumeHooks: true,
    json: true,
    ...extra,
  };
}

function outcomes(json: string): Outcome[] {
  const parsed = JSON.parse(json) as { outcomes: Outcome[] };
  return parsed.outcomes
    .map((o) => ({
      probability: Math.round(o.probability * 1000) / 1000,
      verdict: o.verdict,
      ...(o.dnat !== undefined ? { dnat: o.dnat } : {}),
      ...(o.masquerade !== undefined ? { masquerade: o.masquerade } : {}),
    }))
    .sort((a, b) => (a.dnat ?? '').localeCompare(b.dnat ?? ''));
}

for (const node of NODES)
  test(`NodePort traced on ${node.name} agrees with render --node ${node.name}`, async () => {
    const rendered = await runRender({ file: FILES, node: node.name }, []);
    const rulesFile = join(dir, `${node.name}.rules`);
    writeFileSync(rulesFile, rendered);
    const nodeLine = `node ${node.name} (Node from the manifests): IP ${node.ip} (InternalIP of the Node)`;
    assert.ok(rendered.includes(`# ${nodeLine}`), 'render names the resolved node');

    // The Local-policy NodePort: only this node's endpoints, or dropped without any.
    const fromManifests = await runTrace(
      flags({ filename: FILES, node: node.name }, `${node.ip}:30777`),
    );
    const viaRender = await runTrace(
      flags({ rules: rulesFile, nodeIp: [node.ip] }, `${node.ip}:30777`),
    );
    assert.deepEqual(outcomes(fromManifests), outcomes(viaRender));
    const dnats = outcomes(fromManifests)
      .map((o) => o.dnat)
      .filter((d) => d !== undefined);
    assert.deepEqual(dnats, node.local);
    if (node.local.length === 0)
      assert.ok(
        outcomes(fromManifests).every((o) => o.verdict === 'drop'),
        'no local endpoint',
      );
    assert.ok(
      (JSON.parse(fromManifests) as { notes: string[] }).notes.some((n) => n.startsWith(nodeLine)),
      'trace prints the same node line',
    );

    // The Cluster-policy NodePort of examples/nodeport.yaml: both endpoints on every node.
    const cluster = outcomes(
      await runTrace(flags({ filename: FILES, node: node.name }, `${node.ip}:30080`)),
    );
    assert.deepEqual(
      cluster.map((o) => [o.dnat, o.masquerade]),
      [
        ['10.244.1.12:5678', true],
        ['10.244.2.9:5678', true],
      ],
    );
    assert.deepEqual(
      outcomes(await runTrace(flags({ rules: rulesFile, nodeIp: [node.ip] }, `${node.ip}:30080`))),
      cluster,
    );
  });

test('trace on svcnet-worker to its InternalIP gives the DNAT outcomes without --node-ip', async () => {
  const text = await runTrace({
    ...flags(
      { filename: ['examples/nodes.yaml', 'examples/nodeport.yaml'], node: 'svcnet-worker' },
      '172.18.0.3:30080',
    ),
    json: false,
    brief: true,
  });
  assert.match(text, /2 possible outcomes/);
  assert.match(text, /DNAT to 10\.244\.1\.12:5678/);
  assert.match(text, /DNAT to 10\.244\.2\.9:5678/);
});

test('--from outside: the lab outside host is the source, an external client keeping its address on Local', async () => {
  const noSrc = flags({}, '');
  delete noSrc.src;
  const trace = (node: string, ip: string): Promise<string> =>
    runTrace({ ...noSrc, filename: FILES, node, from: 'outside', dst: `${ip}:30777` });
  const worker2 = JSON.parse(await trace('svcnet-worker2', '172.18.0.4')) as {
    packet: { src: string };
    notes: string[];
  };
  assert.match(JSON.stringify(worker2.packet), /172\.18\.254\.1/);
  assert.ok(worker2.notes.some((n) => n.startsWith("from the lab's outside host (172.18.254.1")));
  assert.deepEqual(
    outcomes(await trace('svcnet-worker2', '172.18.0.4')).map((o) => [o.dnat, o.masquerade]),
    [
      ['10.244.2.21:8080', false],
      ['10.244.2.22:8080', false],
    ],
  );
  assert.ok(
    outcomes(await trace('svcnet-control-plane', '172.18.0.2')).every((o) => o.verdict === 'drop'),
  );
  await assert.rejects(
    runTrace({ ...noSrc, filename: FILES, dst: '172.18.0.4:30777' }),
    /--src: required/,
  );
});
