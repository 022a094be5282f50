// `svcnet lab lb`: wires the lab's load balancer (lb-controller.ts) to the API server (informers
// for Services and Nodes, the client for status writes) and to the kernel of the namespace it
// runs in (the hub: RealIp), and runs it until SIGTERM/SIGINT.

import type { Logger } from 'pino';
import { HttpKubeClient } from '../kube/api-client.js';
import { createInformer, loadKubeConfig, NODES, SERVICES } from '../kube/client.js';
import type { Node, Service } from '../kube/types.js';
import { RealExecer } from '../os/exec.js';
import { RealIp } from '../os/ip.js';
import { waitForTermination } from '../os/process.js';
import { realClock } from '../util/clock.js';
import { LabLoadBalancer } from './lb-controller.js';
import { parseLbPool } from './lb-pool.js';

export interface LabLoadBalancerMainOptions {
  readonly kubeconfig: string;
  readonly pool: string;
  readonly dev: string;
  readonly log: Logger;
}

export async function runLabLoadBalancer(opts: LabLoadBalancerMainOptions): Promise<void> {
  const pool = parseLbPool(opts.pool);
  const kc = loadKubeConfig(opts.kubeconfig);
  const lb = new LabLoadBalancer({
    services: createInformer<Service>(kc, SERVICES),
    nodes: createInformer<Node>(kc, NODES),
    client: new HttpKubeClient(kc),
    ip: new RealIp(new RealExecer()),
    dev: opts.dev,
    pool,
    clock: realClock,
    log: opts.log,
  });
  opts.log.info({ pool: opts.pool, dev: opts.dev }, 'Starting the lab load balancer');
  await lb.start();
  await waitForTermination();
  await lb.stop();
}
