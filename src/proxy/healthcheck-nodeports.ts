// Health-check node port servers (kube-proxy's ServiceHealthServer): for every Service with
// externalTrafficPolicy Local and a healthCheckNodePort, an HTTP server on that port answers
// load balancers with `{"service":{"namespace","name"},"localEndpoints":N,"serviceProxyHealthy":b}`
// — 200 when the node has ready local endpoints and the proxy is healthy, else 503. A port
// that cannot be opened is logged and counted, never fatal; the others keep serving.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BindAddress, Listening } from './listen.js';
import { listenHttp, writeJson } from './listen.js';

/** `namespace/name` of a Service. */
export type ServiceKey = string;

export interface ServiceHealthOptions {
  /** Addresses to listen on (node IPs from nodePortAddresses, or `0.0.0.0`/`::`). */
  readonly addresses: readonly string[];
  /** Whether the proxy itself is healthy (`/livez` semantics). */
  readonly isProxyHealthy: () => boolean;
  readonly onError?: (service: ServiceKey, port: number, err: unknown) => void;
  /** Injected for tests; defaults to listenHttp. */
  readonly listen?: (
    addr: BindAddress,
    handler: (req: IncomingMessage, res: ServerResponse) => void,
  ) => Promise<Listening>;
}

interface Entry {
  port: number;
  listeners: Listening[];
}

/** Keeps one HTTP listener set per health-check node port. */
export class ServiceHealthServers {
  private readonly opts: ServiceHealthOptions;
  private readonly services = new Map<ServiceKey, Entry>();
  private localEndpoints = new Map<ServiceKey, number>();

  constructor(opts: ServiceHealthOptions) {
    this.opts = opts;
  }

  /** Opens listeners for new ports and closes those of services that are gone or moved. */
  async syncServices(wanted: ReadonlyMap<ServiceKey, number>): Promise<void> {
    for (const [key, entry] of [...this.services]) {
      if (wanted.get(key) === entry.port) continue;
      this.services.delete(key);
      await Promise.all(entry.listeners.map((l) => l.close()));
    }
    const listen = this.opts.listen ?? listenHttp;
    for (const [key, port] of wanted) {
      if (this.services.has(key)) continue;
      const entry: Entry = { port, listeners: [] };
      this.services.set(key, entry);
      for (const host of this.opts.addresses) {
        try {
          entry.listeners.push(await listen({ host, port }, this.handler(key)));
        } catch (e) {
          this.opts.onError?.(key, port, e);
        }
      }
    }
  }

  /** Sets the ready local endpoint count per service (services not listed have 0). */
  syncEndpoints(counts: ReadonlyMap<ServiceKey, number>): void {
    this.localEndpoints = new Map(counts);
  }

  /** Ports being served, by service. */
  ports(): Map<ServiceKey, number> {
    return new Map([...this.services].map(([k, e]) => [k, e.port]));
  }

  async close(): Promise<void> {
    await this.syncServices(new Map());
  }

  private handler(key: ServiceKey): (req: IncomingMessage, res: ServerResponse) => void {
    const slash = key.indexOf('/');
    const namespace = key.slice(0, slash);
    const name = key.slice(slash + 1);
    return (_req, res) => {
      const n = this.localEndpoints.get(key) ?? 0;
      const proxyHealthy = this.opts.isProxyHealthy();
      const body = JSON.stringify({
        service: { namespace, name },
        localEndpoints: n,
        serviceProxyHealthy: proxyHealthy,
      });
      writeJson(res, n > 0 && proxyHealthy ? 200 : 503, body, {
        'X-Load-Balancing-Endpoint-Weight': String(n),
      });
    };
  }
}
