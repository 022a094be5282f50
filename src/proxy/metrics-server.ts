// The metrics server (kube-proxy's metricsBindAddress, default 127.0.0.1:10249): `/metrics`
// from the injected prom-client Registry, `/proxyMode` (plain mode name), `/configz` (the
// effective configuration as JSON) and `/healthz` (`ok`, the server is up).

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';

export interface MetricsServerOptions {
  readonly registry: Registry;
  readonly mode: string;
  readonly configz?: () => unknown;
}

/** HTTP handler of the metrics server. */
export function metricsHandler(
  opts: MetricsServerOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/metrics') {
      opts.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'Content-Type': opts.registry.contentType });
          res.end(text);
        },
        (e: unknown) => {
          res.writeHead(500, { 'Content-Type': 'text/plain' });
          res.end(`${e instanceof Error ? e.message : String(e)}\n`);
        },
      );
      return;
    }
    if (path === '/proxyMode') {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(opts.mode);
      return;
    }
    if (path === '/configz' && opts.configz !== undefined) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ kubeproxy: opts.configz() }));
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('ok');
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('404 page not found\n');
  };
}
