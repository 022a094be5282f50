// The page's side of the API (docs/ui.md): typed fetches of the snapshot, a node's rules and
// a trace, and the SSE subscription. Errors come back as ApiFailure with the server's message
// and the query field at fault, so views can say what to fix.

import type {
  ApiError,
  ChangeEvent,
  ClusterSnapshot,
  RulesView,
  TraceQuery,
  TraceResponse,
} from '../api-types.js';

export class ApiFailure extends Error {
  readonly status: number;
  readonly field: string | undefined;
  constructor(status: number, message: string, field?: string) {
    super(message);
    this.status = status;
    this.field = field;
  }
}

async function getJSON<T>(path: string): Promise<T> {
  const res = await fetch(path, { headers: { accept: 'application/json' } });
  if (!res.ok) {
    let body: ApiError | undefined;
    try {
      body = (await res.json()) as ApiError;
    } catch {
      body = undefined;
    }
    throw new ApiFailure(
      res.status,
      body?.error.message ?? `${res.status} ${res.statusText}`,
      body?.error.field,
    );
  }
  return (await res.json()) as T;
}

export const fetchSnapshot = (): Promise<ClusterSnapshot> => getJSON('/api/snapshot');

export const fetchRules = (node: string): Promise<RulesView> =>
  getJSON(`/api/nodes/${encodeURIComponent(node)}/rules`);

export function fetchTrace(q: TraceQuery): Promise<TraceResponse> {
  const p = new URLSearchParams({ src: q.src, dst: q.dst });
  if (q.proto !== undefined) p.set('proto', q.proto);
  if (q.node !== undefined && q.node !== '') p.set('node', q.node);
  return getJSON(`/api/trace?${p.toString()}`);
}

/** Calls `onChange` for every change event; `onState` with whether the stream is open. */
export function subscribe(
  onChange: (e: ChangeEvent) => void,
  onState: (open: boolean) => void,
): () => void {
  const es = new EventSource('/api/events');
  es.addEventListener('open', () => {
    onState(true);
  });
  es.addEventListener('error', () => {
    onState(false);
  });
  es.addEventListener('change', (ev) => {
    onChange(JSON.parse((ev as MessageEvent<string>).data) as ChangeEvent);
  });
  return () => {
    es.close();
  };
}
