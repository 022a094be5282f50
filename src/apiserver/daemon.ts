// Wiring of a running API server: allocators and strategies, the store (in memory, or on
// SQLite storage in a data dir), the bootstrap objects and their reconcile loop, the hono app
// on @hono/node-server listening only where told, and the kubeconfig with the bearer token.
// Used by `svcnet apiserver`, tests and the bench.

import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { networkInterfaces } from 'node:os';
import { createAdaptorServer, type ServerType } from '@hono/node-server';
import { SvcnetError } from '../errors.js';
import { realClock, type Clock } from '../util/clock.js';
import { bootstrap, startBootstrapLoop, type BootstrapConfig } from './bootstrap.js';
import { RealExecer } from '../os/exec.js';
import { raiseNoFileLimit, readNoFileLimit } from '../os/rlimit.js';
import { writeSecretFile } from '../util/secret-file.js';
import { ConnectionTracker, defaultMaxConnections, type ConnectionStats } from './connections.js';
import { proxyUpgrade, unixKubeletDialer } from './kubelet-proxy.js';
import { DEFAULT_MAX_REQUEST_BYTES } from './limits.js';
import { HANDSHAKE_TIMEOUT_MS, serverFactory } from './listener.js';
import { createApiServer, tokenMatches } from './server.js';
import { ServiceRegistry } from './services.js';
import { SqliteStorage } from './sqlite-storage.js';
import { Store, type HistoryLimits } from './store.js';
import { buildStrategies } from './strategies.js';
import { certCovers, createServingCert, type ServingCert } from './x509.js';

export interface ApiServerConfig {
  /** `ADDR:PORT`; port 0 picks a free one. */
  readonly listen: string;
  readonly dataDir?: string;
  readonly serviceCIDRs?: readonly string[];
  readonly nodePortRange?: string;
  readonly token?: string;
  /** Address put in the `kubernetes` Endpoints; defaults to the listen address. */
  readonly advertiseAddress?: string;
  /** Revisions kept for watches at least (default 10,000); see `history`. */
  readonly historySize?: number;
  /** Bounds of the watch window / stored history (defaults: 10,000 revisions, 5 min, 128 MiB). */
  readonly history?: HistoryLimits;
  /** With dataDir: past this many bytes only deletions are accepted (default 2 GiB). */
  readonly quotaBackendBytes?: number;
  /** With dataDir: SQLite's synchronous setting (default FULL). */
  readonly synchronous?: 'FULL' | 'NORMAL' | 'OFF';
  /** Warnings of the storage (a dropped torn record, a migration) and the bootstrap loop. */
  readonly warn?: (message: string) => void;
  /**
   * Time and timers of the server: object timestamps and history age, the first-request and
   * upload-linger deadlines, the connection sweep, the certificate's expiry check and the
   * bootstrap reconcile loop (default the wall clock).
   */
  readonly clock?: Clock;
  /** How often the bootstrap objects are reconciled (default 5 s). */
  readonly bootstrapIntervalMs?: number;
  /**
   * Serve plain HTTP instead of HTTPS. kubectl never sends a bearer token over plain HTTP,
   * so this is for clients that do (client-node) and for tests.
   */
  readonly insecureHttp?: boolean;
  readonly onRequest?: (info: { method: string; path: string; status: number; ms: number }) => void;
  /** Largest request body (413 past it); 3 MiB by default, as kube-apiserver. */
  readonly maxRequestBytes?: number;
  /** Connections held at most (idle ones shed past it); default: RLIMIT_NOFILE − 1024. */
  readonly maxConnections?: number;
  /** A lab's state directory: node N's kubelet API is its Unix socket (kubelet-proxy.ts). */
  readonly kubeletSocketDir?: string;
}

export interface RunningApiServer {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly token: string;
  readonly store: Store;
  readonly services: ServiceRegistry;
  /** PEM of the self-signed serving certificate (undefined for plain HTTP). */
  readonly caCert: string | undefined;
  /** Kubeconfig YAML for this server. */
  kubeconfig(): string;
  /** Open, active, shed, refused and expired connections. */
  connectionStats(): ConnectionStats;
  close(): Promise<void>;
}

/** Parses `ADDR:PORT` / `[v6]:PORT`. */
export function parseListen(text: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(text.trim());
  const port = Number(m?.[3]);
  if (!m || port > 65535)
    throw new SvcnetError('INVALID_INPUT', `--listen: want ADDR:PORT, got ${JSON.stringify(text)}`);
  return { host: m[1] ?? m[2] ?? '', port };
}

function pickAdvertise(host: string): string {
  if (host !== '0.0.0.0' && host !== '::') return host;
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (!a.internal && a.family === 'IPv4') return a.address;
  return '127.0.0.1';
}

/**
 * Kubeconfig YAML with a bearer token: https:// servers carry their CA certificate; http://
 * servers get insecure-skip-tls-verify, without which client-node refuses them.
 */
export function renderKubeconfig(url: string, token: string, caCert?: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '  - name: svcnet',
    '    cluster:',
    `      server: ${url}`,
    caCert !== undefined
      ? `      certificate-authority-data: ${Buffer.from(caCert).toString('base64')}`
      : '      insecure-skip-tls-verify: true',
    'users:',
    '  - name: svcnet-admin',
    '    user:',
    `      token: ${token}`,
    'contexts:',
    '  - name: svcnet',
    '    context:',
    '      cluster: svcnet',
    '      user: svcnet-admin',
    '      namespace: default',
    'current-context: svcnet',
    '',
  ].join('\n');
}

/** The stored token of a data dir, or the given one written there for next time. */
function storedToken(dir: string, generate: () => string): string {
  const path = join(dir, 'token');
  try {
    const cur = readFileSync(path, 'utf8').trim();
    if (cur !== '') return cur;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const t = generate();
  writeSecretFile(path, `${t}\n`);
  return t;
}

/** Writes the kubeconfig (it holds the token) 0600 through a temp file + rename. */
export function writeKubeconfig(path: string, server: RunningApiServer): void {
  writeSecretFile(path, server.kubeconfig());
}

function readPair(dir: string): ServingCert | undefined {
  try {
    return {
      cert: readFileSync(join(dir, 'tls.crt'), 'utf8'),
      key: readFileSync(join(dir, 'tls.key'), 'utf8'),
    };
  } catch {
    return undefined;
  }
}

/** The serving certificate: reused from the data dir when it still covers every host. */
function servingCert(hosts: string[], dataDir: string | undefined, clock: Clock): ServingCert {
  const existing = dataDir !== undefined ? readPair(dataDir) : undefined;
  if (existing && certCovers(existing, hosts, clock)) return existing;
  const pair = createServingCert(hosts);
  if (dataDir !== undefined) {
    writeSecretFile(join(dataDir, 'tls.key'), pair.key);
    writeFileSync(join(dataDir, 'tls.crt'), pair.cert, { mode: 0o644 });
  }
  return pair;
}

/**
 * The default connection cap: RLIMIT_NOFILE less a reserve, after raising the soft limit to
 * the hard one as Go's runtime does (Node ≥ 20 already does so at start; prlimit is the
 * fallback when something lowered it). Unreadable limits leave a cap of 10,000.
 */
async function connectionCap(): Promise<number> {
  try {
    const { after } = await raiseNoFileLimit(new RealExecer());
    return defaultMaxConnections(after.soft);
  } catch {
    try {
      return defaultMaxConnections((await readNoFileLimit()).soft);
    } catch {
      return 10_000;
    }
  }
}

/** net.core.somaxconn (what the kernel caps a listen backlog at); Node's 511 if unreadable. */
function listenBacklog(): number {
  try {
    const n = Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8').trim());
    return Number.isInteger(n) && n > 0 ? n : 511;
  } catch {
    return 511;
  }
}

/** The Service allocators of the configured ranges; INVALID_INPUT for a bad range. */
function serviceRegistry(cfg: ApiServerConfig): ServiceRegistry {
  try {
    return new ServiceRegistry({
      serviceCIDRs: cfg.serviceCIDRs ?? ['10.96.0.0/12'],
      nodePortRange: cfg.nodePortRange ?? '30000-32767',
    });
  } catch (e) {
    throw new SvcnetError('INVALID_INPUT', e instanceof Error ? e.message : String(e), {
      cause: e,
    });
  }
}

/**
 * The store, on SQLite storage in the data dir (loaded from it) when there is one, else in
 * memory; the storage is closed again if loading fails.
 */
function openStore(
  cfg: ApiServerConfig,
  services: ServiceRegistry,
  warn: (msg: string) => void,
  clock: Clock,
): { store: Store; storage: SqliteStorage | undefined } {
  if (cfg.dataDir !== undefined) mkdirSync(cfg.dataDir, { recursive: true, mode: 0o700 });
  const storage =
    cfg.dataDir !== undefined
      ? new SqliteStorage(cfg.dataDir, {
          warn,
          clock,
          ...(cfg.quotaBackendBytes !== undefined ? { quotaBytes: cfg.quotaBackendBytes } : {}),
          ...(cfg.synchronous !== undefined ? { synchronous: cfg.synchronous } : {}),
        })
      : undefined;
  let store: Store;
  try {
    store = new Store({
      now: () => clock.now(),
      strategies: buildStrategies(services),
      ...(cfg.historySize !== undefined ? { historySize: cfg.historySize } : {}),
      // Without a data dir the history is bounded by count only (no serialised sizes).
      history: storage ? { ageMs: 5 * 60_000, ...cfg.history } : { ...cfg.history },
      ...(storage ? { backend: storage } : {}),
    });
    if (storage) {
      const state = storage.load();
      store.load(state.objects, state.rv, { floor: state.floor, revisions: state.revisions });
    }
  } catch (e) {
    storage?.close();
    throw e;
  }
  return { store, storage };
}

/** The serving certificate's hosts: the listen address, the advertised one, loopback, in-cluster names. */
function servingHosts(host: string, advertise: string, services: ServiceRegistry): string[] {
  return [
    ...(host !== '0.0.0.0' && host !== '::' ? [host] : []),
    advertise,
    '127.0.0.1',
    '::1',
    'localhost',
    services.kubernetesServiceIP,
    'kubernetes',
    'kubernetes.default',
    'kubernetes.default.svc',
    'kubernetes.default.svc.cluster.local',
  ];
}

/** Starts an API server; resolves once it listens and the bootstrap objects exist. */
export async function startApiServer(cfg: ApiServerConfig): Promise<RunningApiServer> {
  const { host, port } = parseListen(cfg.listen);
  const clock = cfg.clock ?? realClock;
  const services = serviceRegistry(cfg);
  const warn = cfg.warn ?? (() => undefined);
  const { store, storage } = openStore(cfg, services, warn, clock);
  const generate = (): string => randomBytes(24).toString('base64url');
  const token =
    cfg.token ?? (cfg.dataDir !== undefined ? storedToken(cfg.dataDir, generate) : generate());

  const advertise = cfg.advertiseAddress ?? pickAdvertise(host);
  const tls =
    cfg.insecureHttp === true
      ? undefined
      : servingCert(servingHosts(host, advertise, services), cfg.dataDir, clock);

  let server: ServerType | undefined;
  const maxRequestBytes = cfg.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
  const connections = new ConnectionTracker(
    {
      maxConnections: cfg.maxConnections ?? (await connectionCap()),
      firstRequestTimeoutMs: HANDSHAKE_TIMEOUT_MS,
    },
    clock,
  );
  const expectedToken = Buffer.from(token);
  const kubelet =
    cfg.kubeletSocketDir === undefined ? undefined : unixKubeletDialer(cfg.kubeletSocketDir);
  const sockets = new Set<Socket>();
  const bound = await new Promise<AddressInfo>((resolve, reject) => {
    const app = createApiServer({
      store,
      token,
      maxRequestBytes,
      now: () => clock.now(),
      ...(cfg.onRequest ? { onRequest: cfg.onRequest } : {}),
      ...(kubelet ? { kubelet } : {}),
    });
    const s = createAdaptorServer({
      fetch: app.fetch,
      createServer: serverFactory({
        maxRequestBytes,
        connections,
        authenticate: (h) => tokenMatches(expectedToken, h),
        clock,
        ...(tls ? { tls } : {}),
      }),
    });
    server = s;
    s.once('error', reject);
    // exec, attach and portforward: upgrade requests, piped to the node (kubelet-proxy.ts).
    s.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      proxyUpgrade(
        store,
        kubelet,
        tokenMatches(expectedToken, req.headers.authorization),
        req,
        socket,
        head,
      );
    });
    // The kernel's accept queue as large as allowed, as Go's net package does: a burst of
    // connections (an attacker's, or many clients at once) must not drop a client's SYN,
    // which costs it a 1 s retransmit.
    s.listen({ port, host, backlog: listenBacklog() }, () => {
      resolve(s.address() as AddressInfo);
    });
    // Every raw socket, including TLS handshakes not yet seen by the HTTP layer, so close()
    // can end them all: closeAllConnections() misses a socket still in its handshake, which
    // then becomes a keep-alive watch connection that close() would wait on forever.
    s.on('connection', (sock: Socket) => {
      sockets.add(sock);
      sock.once('close', () => sockets.delete(sock));
    });
  }).catch((e: unknown) => {
    // Not listening (address in use): the database is not left open.
    storage?.close();
    throw e;
  });
  const urlAddr = bound.address === '0.0.0.0' || bound.address === '::' ? advertise : bound.address;
  const urlHost = urlAddr.includes(':') ? `[${urlAddr}]` : urlAddr;
  const url = `${tls ? 'https' : 'http'}://${urlHost}:${bound.port}`;
  const boot: BootstrapConfig = {
    advertiseAddress: advertise,
    port: bound.port,
    serviceIP: services.kubernetesServiceIP,
    serviceCIDRs: services.serviceCIDRs,
  };
  bootstrap(store, boot);
  await store.durable();
  const loop = startBootstrapLoop(store, boot, {
    clock,
    ...(cfg.bootstrapIntervalMs !== undefined ? { intervalMs: cfg.bootstrapIntervalMs } : {}),
    onError: (e) => {
      warn(`bootstrap: ${e instanceof Error ? e.message : String(e)}`);
    },
  });
  return {
    url,
    host: bound.address,
    port: bound.port,
    token,
    store,
    services,
    caCert: tls?.cert,
    kubeconfig: () => renderKubeconfig(url, token, tls?.cert),
    connectionStats: () => connections.stats(),
    close: () =>
      new Promise<void>((resolve) => {
        loop.stop();
        const s = server;
        const finish = (): void => {
          // Whatever is staged is committed (or fails) before the database closes.
          store.flush();
          storage?.close();
          resolve();
        };
        if (!s) {
          finish();
          return;
        }
        s.close(finish);
        // After close() no new connection is accepted, so this ends every one there is.
        for (const sock of sockets) sock.destroy();
      }),
  };
}
