// Prints the benches' synthetic cluster (workload.ts) as one manifest, a v1 List of N
// Services and their EndpointSlices of E endpoints, for `svcnet render` / `svcnet trace -f`
// and for measuring a kernel backend by hand:
//   node --import tsx bench/workload-manifest.ts 1000 10 > /tmp/w.json

import { benchService, benchSlice } from './workload.js';

const services = Number(process.argv[2] ?? 1000);
const endpoints = Number(process.argv[3] ?? 10);
if (!Number.isInteger(services) || services < 1 || !Number.isInteger(endpoints) || endpoints < 0) {
  process.stderr.write('usage: workload-manifest.ts [SERVICES] [ENDPOINTS]\n');
  process.exit(2);
}
const items: unknown[] = [];
for (let i = 0; i < services; i++)
  items.push(
    { apiVersion: 'v1', kind: 'Service', ...benchService(i) },
    { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', ...benchSlice(i, endpoints) },
  );
process.stdout.write(`${JSON.stringify({ apiVersion: 'v1', kind: 'List', items })}\n`);
