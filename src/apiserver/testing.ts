// Test and bench helper: a Store wired with the real strategies, a fixed clock and
// deterministic uids and randomness, bootstrapped like a fresh API server. Production code
// (dry runs, the UI demo) may use it too; it does no I/O.

import { bootstrap } from './bootstrap.js';
import { createApiServer } from './server.js';
import { ServiceRegistry } from './services.js';
import { Store, type StoreOptions } from './store.js';
import { buildStrategies } from './strategies.js';

export interface TestApi {
  readonly store: Store;
  readonly services: ServiceRegistry;
  /** Current fake time in ms; advance it by assigning. */
  clock: { now: number };
  /** The store's clock: `clock.now`, or the `now` option when given. */
  readonly now: () => number;
}

/** Seeded xorshift PRNG in [0,1). */
export function seededRandom(seed = 1): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x100000000;
  };
}

/** A bootstrapped in-memory API (namespaces and the kubernetes Service exist). */
export function newTestApi(
  opts: {
    serviceCIDRs?: string[];
    nodePortRange?: string;
    historySize?: number;
    history?: StoreOptions['history'];
    backend?: StoreOptions['backend'];
    /** Fills the store (from storage) before the bootstrap objects are reconciled. */
    load?: (store: Store) => void;
    /** The store's clock instead of `clock` (e.g. a FakeClock's `now`). */
    now?: () => number;
  } = {},
): TestApi {
  const clock = { now: Date.parse('2026-01-01T00:00:00Z') };
  const random = seededRandom(42);
  const services = new ServiceRegistry({
    serviceCIDRs: opts.serviceCIDRs ?? ['10.96.0.0/12'],
    nodePortRange: opts.nodePortRange ?? '30000-32767',
    random,
  });
  const now = opts.now ?? (() => clock.now);
  let n = 0;
  const store = new Store({
    now,
    uid: () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`,
    random,
    strategies: buildStrategies(services),
    ...(opts.historySize !== undefined ? { historySize: opts.historySize } : {}),
    ...(opts.history !== undefined ? { history: opts.history } : {}),
    ...(opts.backend !== undefined ? { backend: opts.backend } : {}),
  });
  opts.load?.(store);
  bootstrap(store, {
    advertiseAddress: '172.18.0.2',
    port: 6443,
    serviceIP: services.kubernetesServiceIP,
    serviceCIDRs: services.serviceCIDRs,
  });
  return { store, services, clock, now };
}

/** The HTTP app over a test API, as tests call it (`app.request`): bearer `token`, no heartbeats. */
export function newTestApp(api: TestApi, token: string): ReturnType<typeof createApiServer> {
  return createApiServer({
    store: api.store,
    token,
    now: () => api.clock.now,
    heartbeatMs: 3_600_000,
  });
}
