// The Pod subresources the kubelet serves, proxied as kube-apiserver proxies them: `log`
// (a GET whose answer may stream for as long as `follow` lasts) and `exec`, `attach` and
// `portforward` (upgrade requests: WebSocket or SPDY, spoken end to end between the client
// and the node; the API server only checks the caller and the Pod, rewrites the path to the
// kubelet's and pipes bytes both ways). The node is the Pod's spec.nodeName; how its kubelet
// is reached is a KubeletDialer: a lab node's agent listens on a Unix socket in the lab's
// state directory. Without a dialer the subresources answer 400 naming why.

import { request, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { Readable } from 'node:stream';
import type { StoredObject } from './object.js';
import { PODS } from './resources.js';
import { ApiError } from './status.js';
import type { Store } from './store.js';

/** Opens a connection to node `node`'s kubelet API. */
export interface KubeletDialer {
  dial(node: string): Socket;
}

/** Where the kubelet API of lab node `node` listens, under the lab's state directory. */
export function kubeletSocketPath(stateDir: string, node: string): string {
  return join(stateDir, 'nodes', node, 'kubelet.sock');
}

/** Dials lab nodes: node N's kubelet API is the Unix socket kubeletSocketPath(dir, N). */
export function unixKubeletDialer(stateDir: string): KubeletDialer {
  return { dial: (node) => connect(kubeletSocketPath(stateDir, node)) };
}

/** The Pod subresources that belong to the kubelet. */
export const KUBELET_SUBRESOURCES = ['log', 'exec', 'attach', 'portforward'] as const;
export type KubeletSubresource = (typeof KUBELET_SUBRESOURCES)[number];

interface PodShape {
  spec?: {
    nodeName?: string;
    containers?: { name?: string }[];
    initContainers?: { name?: string }[];
    ephemeralContainers?: { name?: string }[];
  };
  metadata: StoredObject['metadata'];
}

/**
 * The container a request names, or the Pod's only one, or the one its
 * `kubectl.kubernetes.io/default-container` annotation names; 400 as kube-apiserver words it.
 */
export function containerOf(pod: PodShape, requested: string | null): string {
  const name = pod.metadata.name;
  const all = [
    ...(pod.spec?.containers ?? []),
    ...(pod.spec?.initContainers ?? []),
    ...(pod.spec?.ephemeralContainers ?? []),
  ].map((c) => c.name ?? '');
  if (requested !== null && requested !== '') {
    if (!all.includes(requested))
      throw ApiError.badRequest(`container ${requested} is not valid for pod ${name}`);
    return requested;
  }
  const main = (pod.spec?.containers ?? []).map((c) => c.name ?? '');
  const annotated = pod.metadata.annotations?.['kubectl.kubernetes.io/default-container'];
  if (annotated !== undefined && main.includes(annotated)) return annotated;
  if (main.length === 1 && main[0] !== undefined) return main[0];
  throw ApiError.badRequest(
    `a container name must be specified for pod ${name}, choose one of: [${main.join(' ')}]`,
  );
}

/** The kubelet's path for a subresource request on a Pod (query passed through). */
export function kubeletPath(
  sub: KubeletSubresource,
  ns: string,
  pod: string,
  container: string | undefined,
  query: URLSearchParams,
): string {
  const q = new URLSearchParams(query);
  q.delete('container');
  const qs = q.toString();
  const e = encodeURIComponent;
  const base =
    sub === 'portforward'
      ? `/portForward/${e(ns)}/${e(pod)}`
      : `/${sub === 'log' ? 'containerLogs' : sub}/${e(ns)}/${e(pod)}/${e(container ?? '')}`;
  return qs === '' ? base : `${base}?${qs}`;
}

/** The Pod and its node, or the API error to answer. */
function placedPod(store: Store, ns: string, name: string): { pod: PodShape; node: string } {
  const pod = store.get(PODS, ns, name) as unknown as PodShape;
  const node = pod.spec?.nodeName ?? '';
  if (node === '') throw ApiError.badRequest(`pod ${name} does not have a host assigned`);
  return { pod, node };
}

function noDialer(sub: string, name: string): ApiError {
  return ApiError.badRequest(
    `${sub} of pod "${name}" is not available: this API server has no route to the kubelets ` +
      '(svcnet apiserver --kubelet-socket-dir)',
  );
}

/** GET pods/NAME/log: the kubelet's answer, streamed. */
export async function podLogResponse(
  store: Store,
  dialer: KubeletDialer | undefined,
  ns: string,
  name: string,
  query: URLSearchParams,
  signal: AbortSignal,
): Promise<Response> {
  if (dialer === undefined) throw noDialer('logs', name);
  const { pod, node } = placedPod(store, ns, name);
  const container = containerOf(pod, query.get('container'));
  const path = kubeletPath('log', ns, name, container, query);
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request({ createConnection: () => dialer.dial(node), path, method: 'GET' });
    req.once('response', resolve);
    req.once('error', (e) => {
      reject(ApiError.internal(`node ${node}: kubelet not reachable: ${e.message}`));
    });
    signal.addEventListener('abort', () => req.destroy(), { once: true });
    req.end();
  });
  const status = res.statusCode ?? 500;
  if (status >= 400) {
    let text = '';
    for await (const chunk of res) text += String(chunk);
    throw new ApiError(
      status === 404 ? 404 : 400,
      status === 404 ? 'NotFound' : 'BadRequest',
      text.trim() || `kubelet answered ${String(status)}`,
    );
  }
  signal.addEventListener('abort', () => res.destroy(), { once: true });
  return new Response(Readable.toWeb(res) as ReadableStream<Uint8Array>, {
    status: 200,
    headers: { 'Content-Type': 'text/plain' },
  });
}

/** Parses `/api/v1/namespaces/NS/pods/NAME/SUB`; undefined for any other path. */
export function parseStreamPath(
  url: string,
): { ns: string; name: string; sub: KubeletSubresource; query: URLSearchParams } | undefined {
  const u = new URL(url, 'http://apiserver');
  const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/(exec|attach|portforward)$/.exec(
    u.pathname,
  );
  if (m?.[1] === undefined || m[2] === undefined || m[3] === undefined) return undefined;
  return {
    ns: decodeURIComponent(m[1]),
    name: decodeURIComponent(m[2]),
    sub: m[3] as KubeletSubresource,
    query: u.searchParams,
  };
}

function writeStatus(socket: Duplex, err: ApiError): void {
  const body = JSON.stringify(err.toStatus());
  socket.end(
    `HTTP/1.1 ${String(err.status)} ${err.reason}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${String(Buffer.byteLength(body))}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * An upgrade request (exec, attach, portforward): checks the caller and the Pod, then opens
 * the node's kubelet API, replays the request with the kubelet's path and pipes both ways,
 * the upgrade handshake included. Anything else gets an HTTP error on the socket.
 */
export function proxyUpgrade(
  store: Store,
  dialer: KubeletDialer | undefined,
  authorized: boolean,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): void {
  const fail = (e: unknown): void => {
    writeStatus(socket, e instanceof ApiError ? e : ApiError.internal(String(e)));
  };
  try {
    if (!authorized) throw new ApiError(401, 'Unauthorized', 'Unauthorized');
    const parsed = parseStreamPath(req.url ?? '/');
    if (parsed === undefined)
      throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    const { ns, name, sub, query } = parsed;
    if (dialer === undefined) throw noDialer(sub, name);
    const { pod, node } = placedPod(store, ns, name);
    const container = sub === 'portforward' ? undefined : containerOf(pod, query.get('container'));
    const upstream = dialer.dial(node);
    upstream.once('error', (e) => {
      if (upstream.bytesRead === 0)
        fail(ApiError.internal(`node ${node}: kubelet not reachable: ${e.message}`));
      else socket.destroy();
    });
    upstream.once('connect', () => {
      const lines = [
        `${req.method ?? 'GET'} ${kubeletPath(sub, ns, name, container, query)} HTTP/1.1`,
      ];
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const k = req.rawHeaders[i] ?? '';
        if (k.toLowerCase() === 'authorization') continue;
        lines.push(`${k}: ${req.rawHeaders[i + 1] ?? ''}`);
      }
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length > 0) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    socket.once('error', () => upstream.destroy());
    socket.once('close', () => upstream.destroy());
    upstream.once('close', () => socket.destroy());
  } catch (e) {
    fail(e);
  }
}
