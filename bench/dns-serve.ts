// The DNS bench's server child: `node --import tsx bench/dns-serve.ts PORT WORKERS SERVICES`
// runs the DnsDaemon of `svcnet dns --workers WORKERS` (the same code: primary, cluster
// workers, index shipping) over FakeInformers holding bench/dns-objects.ts's cluster instead
// of an API server, on 127.0.0.1:PORT with no HTTP endpoints and no upstreams. Prints
// `listening PORT` once it serves; SIGTERM stops it. Its cluster workers run this file too
// and go straight to the worker loop.

import { pino } from 'pino';
import { Registry } from 'prom-client';
import { buildDnsConfig } from '../src/dns/config.js';
import { DnsDaemon } from '../src/dns/daemon.js';
import { isDnsWorker, runDnsWorker } from '../src/dns/workers.js';
import { FakeInformer } from '../src/kube/informer.js';
import type { EndpointSlice, Service } from '../src/kube/types.js';
import { benchCluster } from './dns-objects.js';

const log = pino({ level: 'warn' }, pino.destination(2));
if (isDnsWorker()) {
  await runDnsWorker(log);
  process.exit(0);
}
const [port = '0', workers = '1', services = '1000'] = process.argv.slice(2);
const { services: svcs, slices } = benchCluster(Number(services));
const daemon = new DnsDaemon({
  config: buildDnsConfig(undefined, {
    listen: `127.0.0.1:${port}`,
    healthListen: 'off',
    readyListen: 'off',
    metricsListen: 'off',
  }),
  services: new FakeInformer<Service>(svcs),
  endpointSlices: new FakeInformer<EndpointSlice>(slices),
  upstreams: [],
  registry: new Registry(),
  log,
  workers: Number(workers),
});
const ports = await daemon.start();
process.stdout.write(`listening ${ports.dns}\n`);
process.once('SIGTERM', () => {
  void daemon.stop().then(() => process.exit(0));
});
