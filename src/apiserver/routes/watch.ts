// The watch verb of the API server: a chunked stream of JSON lines, one per WatchEvent (as
// Table rows when asked), batched per turn of the event loop, kept alive by `\n`
// heartbeats and BOOKMARK events, and closed after `timeoutSeconds` (30-60 min by default,
// as kube-apiserver spreads them). A resourceVersion too old is a 200 stream with one ERROR.

import type { Context } from 'hono';
import type { ResourceType } from '../resources.js';
import { ApiError } from '../status.js';
import type { WatchEvent, WatchHandle, WatchOptions } from '../store.js';
import { toTable } from '../table.js';
import type { RequestContext } from './context.js';
import {
  JSON_TYPE,
  bool,
  goDurationSeconds,
  includeObject,
  int,
  objectJson,
  wantsTable,
} from './http.js';

/** The query of a watch request; `name` narrows it to one object (the legacy `/watch/` path). */
function watchOptions(c: Context, name: string | undefined): WatchOptions {
  const q = (k: string): string | undefined => c.req.query(k);
  let fieldSelector = q('fieldSelector') ?? '';
  if (name !== undefined)
    fieldSelector =
      fieldSelector === '' ? `metadata.name=${name}` : `${fieldSelector},metadata.name=${name}`;
  return {
    labelSelector: q('labelSelector') ?? '',
    fieldSelector,
    resourceVersion: q('resourceVersion') ?? '',
    sendInitialEvents: bool(q('sendInitialEvents')),
    allowWatchBookmarks: bool(q('allowWatchBookmarks')),
  };
}

/** Encodes events as stream lines; Table rows carry their column definitions only once. */
function eventLines(ctx: RequestContext, c: Context, rt: ResourceType): (e: WatchEvent) => string {
  const table = wantsTable(c.req.header('accept'));
  const include = includeObject((k) => c.req.query(k));
  let first = true;
  return (e) => {
    if (e.type === 'BOOKMARK' || e.type === 'ERROR') return `${JSON.stringify(e)}\n`;
    if (!table) return `{"type":"${e.type}","object":${objectJson(e.object)}}\n`;
    const t = toTable(rt, [e.object], ctx.now(), {
      include,
      withColumns: first,
      metadata: { resourceVersion: e.object.metadata.resourceVersion ?? '' },
    });
    first = false;
    return `${JSON.stringify({ type: e.type, object: t })}\n`;
  };
}

/** Answers a watch on `rt` in `ns` (all namespaces when undefined), or on one object `name`. */
export function watchResponse(
  ctx: RequestContext,
  c: Context,
  rt: ResourceType,
  ns: string | undefined,
  name?: string,
): Response {
  const q = (k: string): string | undefined => c.req.query(k);
  const line = eventLines(ctx, c, rt);
  const timeoutSeconds =
    int(q('timeoutSeconds'), 'timeoutSeconds') ?? goDurationSeconds(q('timeout'));
  const options = watchOptions(c, name);
  const encoder = new TextEncoder();
  let handle: WatchHandle | undefined;
  const timers: NodeJS.Timeout[] = [];
  let closed = false;
  const cleanup = (): void => {
    closed = true;
    handle?.stop();
    for (const t of timers) clearInterval(t);
  };
  // Events are batched per turn of the event loop: one stream chunk (one TLS record) for a
  // burst of events instead of one per event.
  let pending = '';
  let scheduled = false;
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined;
  const flush = (): void => {
    scheduled = false;
    if (closed || !controllerRef || pending === '') return;
    const chunk = pending;
    pending = '';
    controllerRef.enqueue(encoder.encode(chunk));
  };
  const send = (text: string): void => {
    if (closed) return;
    pending += text;
    if (!scheduled && controllerRef) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  // Validate (and fail with a plain HTTP error) before the stream starts.
  try {
    handle = ctx.store.watch(rt, ns, options, (e) => {
      send(line(e));
    });
  } catch (e) {
    if (!(e instanceof ApiError) || (e.status !== 410 && e.status !== 504)) throw e;
    // As kube-apiserver's watch cache: a 200 stream carrying one ERROR event, then EOF.
    const body = `${JSON.stringify({ type: 'ERROR', object: e.toStatus() })}\n`;
    return new Response(body, { status: 200, headers: { 'Content-Type': JSON_TYPE } });
  }
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controllerRef = controller;
      flush();
      const close = (): void => {
        if (closed) return;
        cleanup();
        try {
          controller.close();
        } catch {
          // already closed by the client
        }
      };
      const timeoutMs =
        timeoutSeconds !== undefined && timeoutSeconds > 0
          ? timeoutSeconds * 1000
          : (1800 + Math.random() * 1800) * 1000;
      const t = setTimeout(close, timeoutMs);
      t.unref();
      timers.push(t);
      const hb = setInterval(() => {
        send('\n');
      }, ctx.heartbeatMs);
      hb.unref();
      timers.push(hb);
      if (options.allowWatchBookmarks === true) {
        const bm = setInterval(() => {
          send(line({ type: 'BOOKMARK', object: ctx.store.bookmark(rt) }));
        }, ctx.bookmarkMs);
        bm.unref();
        timers.push(bm);
      }
    },
    cancel() {
      cleanup();
    },
  });
  c.req.raw.signal.addEventListener('abort', cleanup);
  return new Response(stream, {
    status: 200,
    headers: {
      'Content-Type': JSON_TYPE,
      'Transfer-Encoding': 'chunked',
      'Cache-Control': 'no-cache, private',
    },
  });
}
