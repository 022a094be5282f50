// Decode speed of the API server's protobuf request bodies: the three bodies kubectl 1.33 sent
// (src/apiserver/testdata), each decoded in a loop after a warm-up; microseconds per body,
// median of 5 runs. Target on the 2-core dev machine: under 50 µs for the Deployment, the
// largest (a create request is one body, so this is far from any request's critical path).

import { readFileSync } from 'node:fs';
import { decodeProtobufObject } from '../src/apiserver/protobuf.js';
import { DEPLOYMENTS, NAMESPACES, SERVICES } from '../src/apiserver/resources.js';

const BODIES = [
  ['deployment', 'kubectl-1.33-create-deployment.pb', DEPLOYMENTS],
  ['service', 'kubectl-1.33-create-service-nodeport.pb', SERVICES],
  ['namespace', 'kubectl-1.33-create-namespace.pb', NAMESPACES],
] as const;

const ROUNDS = 20_000;

export function run(): Promise<void> {
  for (const [label, file, rt] of BODIES) {
    const body = readFileSync(new URL(`../src/apiserver/testdata/${file}`, import.meta.url));
    for (let i = 0; i < 2000; i++) decodeProtobufObject(body, rt);
    const runs: number[] = [];
    for (let r = 0; r < 5; r++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < ROUNDS; i++) decodeProtobufObject(body, rt);
      runs.push(Number(process.hrtime.bigint() - t0) / 1000 / ROUNDS);
    }
    const us = runs.sort((a, b) => a - b)[2] ?? 0;
    process.stdout.write(
      `  decode ${label.padEnd(11)} ${String(body.length).padStart(4)} B  ${us.toFixed(2)} µs\n`,
    );
    process.stdout.write(
      `${JSON.stringify({ bench: 'protobuf', figure: `decode ${label}`, value: Number(us.toFixed(2)), unit: 'us', target: label === 'deployment' ? '< 50' : undefined })}\n`,
    );
  }
  return Promise.resolve();
}
