// The proxy's own health (kube-proxy's healthz server, default 0.0.0.0:10256): `/livez` is
// unhealthy when some IP family has had an update queued for longer than healthTimeout
// (2 × syncPeriod) without a sync applying it; `/healthz` is additionally unhealthy when the
// Node is being deleted or carries the cluster-autoscaler's ToBeDeleted taint (KEP-3836), so
// load balancers drain the node. ProxyHealth is the state (clock injected); the HTTP side
// is `healthzHandler`.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Node } from '../kube/types.js';
import type { IPFamily } from '../util/ip.js';
import type { Clock } from '../util/clock.js';
import { writeJson } from './listen.js';

/** Taint the cluster autoscaler puts on nodes it is about to delete. */
export const TAINT_TO_BE_DELETED = 'ToBeDeletedByClusterAutoscaler';

interface FamilyState {
  lastUpdated: number | undefined;
  oldestPendingQueued: number | undefined;
}

export interface HealthStatus {
  readonly healthy: boolean;
  readonly nodeEligible: boolean;
  /** Newest successful sync over all families (ms), if any. */
  readonly lastUpdated: number | undefined;
  readonly currentTime: number;
  readonly families: Readonly<
    Record<string, { healthy: boolean; lastUpdated: number | undefined }>
  >;
}

/** Whether the Node may receive load-balancer traffic (not being deleted, not tainted). */
export function isNodeEligible(node: Node | undefined): boolean {
  if (node === undefined) return true;
  if (node.metadata?.deletionTimestamp !== undefined) return false;
  const taints = (node.spec?.taints ?? []) as { key?: unknown }[];
  return !taints.some((t) => t.key === TAINT_TO_BE_DELETED);
}

/** Health bookkeeping per IP family, as kube-proxy's ProxyHealthServer keeps it. */
export class ProxyHealth {
  private readonly clock: Clock;
  private readonly healthTimeoutMs: number;
  private readonly families = new Map<IPFamily, FamilyState>();
  private nodeEligible = true;

  constructor(clock: Clock, healthTimeoutMs: number, families: readonly IPFamily[]) {
    this.clock = clock;
    this.healthTimeoutMs = healthTimeoutMs;
    for (const f of families)
      this.families.set(f, { lastUpdated: undefined, oldestPendingQueued: undefined });
  }

  /** A change is waiting to be programmed for `family` (keeps the oldest such time). */
  queuedUpdate(family: IPFamily): void {
    const s = this.families.get(family);
    if (s !== undefined) s.oldestPendingQueued ??= this.clock.now();
  }

  /** A sync for `family` succeeded: nothing is pending any more. */
  updated(family: IPFamily): void {
    const s = this.families.get(family);
    if (s === undefined) return;
    s.lastUpdated = this.clock.now();
    s.oldestPendingQueued = undefined;
  }

  /** Follows the Node object (eligibility for LB traffic). */
  syncNode(node: Node | undefined): void {
    this.nodeEligible = isNodeEligible(node);
  }

  status(): HealthStatus {
    const now = this.clock.now();
    const families: Record<string, { healthy: boolean; lastUpdated: number | undefined }> = {};
    let healthy = true;
    let lastUpdated: number | undefined;
    for (const [f, s] of this.families) {
      const h =
        s.oldestPendingQueued === undefined || now - s.oldestPendingQueued <= this.healthTimeoutMs;
      families[f] = { healthy: h, lastUpdated: s.lastUpdated };
      healthy &&= h;
      if (s.lastUpdated !== undefined && (lastUpdated === undefined || s.lastUpdated > lastUpdated))
        lastUpdated = s.lastUpdated;
    }
    return { healthy, nodeEligible: this.nodeEligible, lastUpdated, currentTime: now, families };
  }
}

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

/** A time the way kube-proxy prints it (Go's time.String in UTC): `2026-01-02 15:04:05.123 +0000 UTC`. */
export function formatGoTime(ms: number | undefined): string {
  if (ms === undefined) return '0001-01-01 00:00:00 +0000 UTC';
  const d = new Date(ms);
  const frac = d.getUTCMilliseconds();
  const fracText = frac === 0 ? '' : `.${pad(frac, 3).replace(/0+$/, '')}`;
  return (
    `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${fracText} +0000 UTC`
  );
}

/** The JSON body kube-proxy serves on /healthz and /livez. */
export function healthBody(st: HealthStatus, healthy: boolean): string {
  // Like kube-proxy: a healthy answer reports lastUpdated = now (older clients read it as
  // "the sync loop is alive"); an unhealthy one reports the real last update.
  const lastUpdated = healthy ? st.currentTime : st.lastUpdated;
  const status: Record<string, { lastUpdated: string; healthy: boolean }> = {};
  for (const [f, s] of Object.entries(st.families))
    status[f] = { lastUpdated: formatGoTime(s.lastUpdated), healthy: s.healthy };
  return JSON.stringify({
    lastUpdated: formatGoTime(lastUpdated),
    currentTime: formatGoTime(st.currentTime),
    nodeEligible: st.nodeEligible,
    healthy,
    status,
  });
}

export interface HealthzCounters {
  onHealthz?(code: number): void;
  onLivez?(code: number): void;
}

/** HTTP handler for `/healthz` and `/livez` (anything else is 404). */
export function healthzHandler(
  health: ProxyHealth,
  counters: HealthzCounters = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/healthz' && path !== '/livez') {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('404 page not found\n');
      return;
    }
    const st = health.status();
    const healthy = path === '/healthz' ? st.healthy && st.nodeEligible : st.healthy;
    const code = healthy ? 200 : 503;
    if (path === '/healthz') counters.onHealthz?.(code);
    else counters.onLivez?.(code);
    writeJson(res, code, healthBody(st, healthy));
  };
}
