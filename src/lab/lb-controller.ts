// The lab's load balancer (`svcnet lab lb`, the lab component `lb-controller`, run in the hub
// namespace): the effectful edge around lb-reconcile.ts and lb-announce.ts. On every Service or
// Node event, and every PROBE_PERIOD_MS for the health checks, one sync: assign pool addresses
// and write status.loadBalancer, probe the healthCheckNodePorts of externalTrafficPolicy Local
// Services, and make the hub's /32 routes send each LB IP to its nodes. Syncs never overlap;
// events during a sync cause one more. A failed write or probe is logged and the next sync
// tries again; nothing here stops the loop. At start it takes over the pool's /32 routes a
// previous run left, so a restart neither keeps stale routes nor drops live traffic.

import { get as httpGet } from 'node:http';
import type { KubeClient } from '../kube/api-client.js';
import type { Informer } from '../kube/informer.js';
import type { Node, Service } from '../kube/types.js';
import { objectKey } from '../kube/types.js';
import type { Ip } from '../os/ip.js';
import { parseCIDR } from '../util/ip.js';
import type { Clock, TimerHandle } from '../util/clock.js';
import {
  announcementOps,
  healthProbes,
  lbNodeIPs,
  planAnnouncements,
  probeKey,
  type HealthProbe,
} from './lb-announce.js';
import { inLbPool, type LbPool } from './lb-pool.js';
import { reconcileLoadBalancers } from './lb-reconcile.js';

/** How often the health checks run (cloud load balancers probe every few seconds). */
export const PROBE_PERIOD_MS = 2000;
const PROBE_TIMEOUT_MS = 1000;

export interface LbLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface LabLoadBalancerOptions {
  readonly services: Informer<Service>;
  readonly nodes: Informer<Node>;
  readonly client: Pick<KubeClient, 'updateStatus'>;
  /** The hub namespace's routes (the process runs in it: netns undefined). */
  readonly ip: Ip;
  /** The bridge the nodes are on. */
  readonly dev: string;
  readonly pool: LbPool;
  /** True when the health check answers 200 (defaults to an HTTP GET of /healthz). */
  readonly probe?: (p: HealthProbe) => Promise<boolean>;
  readonly clock: Clock;
  readonly log: LbLog;
}

/** GET http://nodeIP:port/healthz; true on 200 within PROBE_TIMEOUT_MS. */
export function probeHealthCheckNodePort(p: HealthProbe): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpGet(
      { host: p.nodeIP, port: p.port, path: '/healthz', timeout: PROBE_TIMEOUT_MS },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => {
      resolve(false);
    });
  });
}

export class LabLoadBalancer {
  private readonly opts: LabLoadBalancerOptions;
  /** LB IP → the node IPs the hub's route sends it to (as last applied). */
  private applied = new Map<string, string[]>();
  private running: Promise<void> | undefined;
  private busy = false;
  private again = false;
  private timer: TimerHandle | undefined;
  private stopped = false;
  /** No sync before both caches have synced: a partial list could hand out a held address. */
  private synced = false;
  private readonly warned = new Set<string>();

  constructor(opts: LabLoadBalancerOptions) {
    this.opts = opts;
    const kick = (): void => {
      this.kick();
    };
    for (const i of [opts.services, opts.nodes] as Informer<Service | Node>[])
      i.addHandlers({ onAdd: kick, onUpdate: kick, onDelete: kick });
  }

  /** Takes over the pool's routes, starts the informers, syncs, and re-syncs every period. */
  async start(): Promise<void> {
    await this.readApplied();
    await Promise.all([this.opts.services.start(), this.opts.nodes.start()]);
    this.synced = true;
    this.timer = this.opts.clock.setInterval(() => {
      this.kick();
    }, PROBE_PERIOD_MS);
    await this.syncNow();
  }

  /**
   * What the hub routes now, from the kernel: every /32 in the pool, its nodes unknown, so the
   * next sync replaces the route if it is wanted and deletes it if not.
   */
  private async readApplied(): Promise<void> {
    const applied = new Map<string, string[]>();
    for (const r of await this.opts.ip.routes(undefined, 'IPv4')) {
      const ip = r.dst.slice(0, -3);
      if (parseCIDR(r.dst)?.prefix === 32 && inLbPool(this.opts.pool, ip)) applied.set(ip, ['?']);
    }
    this.applied = applied;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.opts.clock.clearInterval(this.timer);
    await this.running;
    await Promise.all([this.opts.services.stop(), this.opts.nodes.stop()]);
  }

  /** Asks for a sync; one runs at a time, and a request during one runs another after it. */
  kick(): void {
    if (this.stopped || !this.synced) return;
    if (this.busy) {
      this.again = true;
      return;
    }
    // Set before the loop starts: its first steps run now and may kick again synchronously.
    this.busy = true;
    this.running = this.loop().finally(() => {
      this.busy = false;
      this.running = undefined;
    });
  }

  /** Runs a sync now (after the one under way) and resolves when it is done. */
  async syncNow(): Promise<void> {
    this.kick();
    while (this.running) await this.running;
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.sync();
      } catch (e) {
        this.opts.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'Sync failed');
      }
    } while (this.pending());
  }

  /** A sync was asked for while one ran (a method: the flag changes across the await). */
  private pending(): boolean {
    return this.again && !this.stopped;
  }

  private async sync(): Promise<void> {
    const { log } = this.opts;
    const services = this.opts.services.list();
    const r = reconcileLoadBalancers(services, this.opts.pool);
    for (const w of r.warnings) {
      if (this.warned.has(w)) continue;
      this.warned.add(w);
      log.warn({}, w);
    }
    for (const u of r.updates) {
      const svc = u.service;
      try {
        await this.opts.client.updateStatus('Service', {
          ...svc,
          status: { ...svc.status, loadBalancer: { ingress: [...u.ingress] } },
        });
        log.info(
          { service: objectKey(svc), ingress: u.ingress.map((i) => i.ip) },
          'Load balancer status updated',
        );
      } catch (e) {
        // A stale cache (409) or a Service deleted meanwhile: the watch event brings a new sync.
        log.warn(
          { service: objectKey(svc), err: e instanceof Error ? e.message : String(e) },
          'Cannot update load balancer status',
        );
      }
    }
    const nodeIPs = lbNodeIPs(this.opts.nodes.list());
    const probes = healthProbes(services, r.assigned, nodeIPs);
    const probe = this.opts.probe ?? probeHealthCheckNodePort;
    const results = await Promise.all(probes.map(async (p) => ((await probe(p)) ? p : undefined)));
    const healthy = new Set(results.filter((p) => p !== undefined).map(probeKey));
    const desired = planAnnouncements(services, r.assigned, nodeIPs, healthy);
    const ops = announcementOps(desired, this.applied, this.opts.dev);
    if (ops.length === 0) return;
    try {
      await this.opts.ip.batch(undefined, ops);
    } catch (e) {
      // Part of the batch may have run: start the next sync from what the kernel has.
      await this.readApplied();
      throw e;
    }
    const next = new Map<string, string[]>();
    for (const [ip, nodes] of desired) if (nodes.length > 0) next.set(ip, nodes);
    this.applied = next;
    log.info(
      { routes: Object.fromEntries([...desired].map(([ip, n]) => [ip, n.join(',') || 'none'])) },
      'Load balancer routes updated',
    );
  }
}
