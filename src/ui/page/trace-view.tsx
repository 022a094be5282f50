// Packet traces: pick a source (Pod, node or outside address), a destination (Service port,
// NodePort, address:port) and a protocol; the page shows every outcome with its probability
// and the path step by step (hook, table, chain, rule, DNAT/masquerade, verdict), then the
// node-to-node hop to the endpoint Pod as the cluster objects place it (and, in the lab, the
// route the walked node takes to it, from its live routing state).
// The query lives in the URL, so a trace is shareable; it re-runs on every cluster change and
// says when its result changed.

import { useEffect, useRef, useState } from 'preact/hooks';
import type {
  ClusterSnapshot,
  TraceHopInfo,
  TraceOutcomeInfo,
  TraceResponse,
} from '../api-types.js';
import { ApiFailure, fetchTrace } from './api.js';
import { fraction } from './url.js';

export interface TraceParams {
  readonly src: string;
  readonly dst: string;
  readonly proto: string;
  readonly node: string;
}

export interface TraceViewProps {
  readonly snap: ClusterSnapshot;
  readonly params: TraceParams;
  readonly onRun: (p: TraceParams) => void;
}

/**
 * The hop after the walked node's rules: where the objects place the Pod and, with source
 * `routes` (the lab's live routes), the route the walked node takes to it.
 */
function Hop({ hop }: { hop: TraceHopInfo }) {
  const cidr = hop.podCIDR !== undefined ? `, whose podCIDR ${hop.podCIDR} holds` : ', to';
  return (
    <p class="hop" data-testid="hop">
      {hop.fromNode === hop.toNode ? (
        <>
          <strong>No node-to-node hop:</strong> the Pod IP <code>{hop.podIP}</code> is on{' '}
          {hop.fromNode} itself, delivered to the Pod's interface there.
        </>
      ) : (
        <>
          <strong>Node-to-node hop:</strong> {hop.fromNode} routes the packet to node{' '}
          <strong>{hop.toNode}</strong>
          {hop.toNodeIP !== '' && (
            <>
              {' '}
              (<code>{hop.toNodeIP}</code>)
            </>
          )}
          {cidr} the Pod IP <code>{hop.podIP}</code>; {hop.toNode} delivers it to the Pod.
        </>
      )}{' '}
      {hop.route && (
        <span data-testid="hop-route">
          Route on {hop.fromNode}: <code>{hop.route.summary}</code>
          {hop.route.route !== undefined && (
            <>
              {' '}
              (<code>{hop.route.route}</code>)
            </>
          )}
          {hop.route.notes.map((n) => ` ${n}.`).join('')}{' '}
        </span>
      )}
      <span class="meta">
        {hop.source === 'routes'
          ? `(The Pod's node from the cluster objects; the route from ${hop.fromNode}'s routing table, neighbours and FDB, read live.)`
          : "(From the cluster objects — the Pod's node and the nodes' addresses and podCIDRs — not from the nodes' routing tables.)"}
      </span>
    </p>
  );
}

function Outcome({ o, n }: { o: TraceOutcomeInfo; n: number }) {
  return (
    <li class={`outcome ${o.verdict}`} data-testid="outcome">
      <h3>
        <span class="prob" data-testid="probability">
          {fraction(o.probability)}
        </span>{' '}
        <span class="pct">({(o.probability * 100).toFixed(1)}%)</span> {o.verdict.toUpperCase()}{' '}
        {o.dnat !== undefined && <>→ {o.dnat}</>}{' '}
        {o.endpointObject !== undefined && <span class="tag">{o.endpointObject}</span>}
        {o.nextNode !== undefined && <span class="tag">next node {o.nextNode}</span>}
      </h3>
      <p class="summary">{o.summary}</p>
      {o.hop && <Hop hop={o.hop} />}
      <details open={n < 3}>
        <summary>Path: {o.path.length} steps</summary>
        <ol class="path">
          {o.path.map((s, i) => (
            <li key={i} style={{ marginLeft: `${s.depth * 0.8}em` }} class={`step ${s.effect}`}>
              <span class="where">
                {s.hook} › {s.table} › <code>{s.chain}</code>
                {s.rule !== undefined ? ` #${s.rule}` : ''}
              </span>{' '}
              <span class="detail">{s.detail}</span>
              {s.servicePort !== undefined && <span class="tag svc">Service {s.servicePort}</span>}
              {s.endpoint !== undefined && <span class="tag ep">endpoint {s.endpoint}</span>}
              {s.text !== undefined && (
                <code class="rule-text" title="rule">
                  {s.text}
                </code>
              )}
            </li>
          ))}
        </ol>
      </details>
    </li>
  );
}

export function TraceView(props: TraceViewProps) {
  const { snap, params } = props;
  const [form, setForm] = useState<TraceParams>(params);
  const [result, setResult] = useState<TraceResponse | undefined>(undefined);
  const [error, setError] = useState<{ message: string; field?: string } | undefined>(undefined);
  const [changed, setChanged] = useState(false);
  const [busy, setBusy] = useState(false);
  const last = useRef('');
  useEffect(() => {
    setForm(params);
  }, [params]);
  useEffect(() => {
    if (params.src === '' || params.dst === '') return;
    let live = true;
    setBusy(true);
    fetchTrace({ src: params.src, dst: params.dst, proto: params.proto, node: params.node }).then(
      (r) => {
        if (!live) return;
        const key = `${params.src} ${params.dst} ${params.proto} ${params.node}`;
        const sig = JSON.stringify([
          r.rulesHash,
          r.outcomes.map((o) => [o.probability, o.dnat, o.verdict]),
        ]);
        setChanged(last.current.startsWith(`${key}|`) && last.current !== `${key}|${sig}`);
        last.current = `${key}|${sig}`;
        setResult(r);
        setError(undefined);
        setBusy(false);
      },
      (e: unknown) => {
        if (!live) return;
        setResult(undefined);
        setBusy(false);
        setError(
          e instanceof ApiFailure
            ? { message: e.message, ...(e.field !== undefined ? { field: e.field } : {}) }
            : { message: String(e) },
        );
      },
    );
    return () => {
      live = false;
    };
  }, [params, snap.revision]);
  const srcKind = form.src.split('/')[0] ?? 'pod';
  const dstKind = form.dst.split('/')[0] ?? 'service';
  const set = (patch: Partial<TraceParams>): void => {
    setForm({ ...form, ...patch });
  };
  return (
    <div class="trace-view">
      <form
        class="trace-form"
        onSubmit={(e) => {
          e.preventDefault();
          props.onRun(form);
        }}
      >
        <label class="field">
          Source
          <select
            value={srcKind === 'ip' ? 'ip/' : form.src}
            onChange={(e) => {
              set({ src: e.currentTarget.value });
            }}
          >
            <option value="">Choose…</option>
            <optgroup label="Pods">
              {snap.pods
                .filter((p) => p.ips.length > 0)
                .map((p) => (
                  <option key={`${p.namespace}/${p.name}`} value={`pod/${p.namespace}/${p.name}`}>
                    Pod {p.namespace}/{p.name} ({p.ips[0]})
                  </option>
                ))}
            </optgroup>
            <optgroup label="Nodes">
              {snap.nodes.map((n) => (
                <option key={n.name} value={`node/${n.name}`}>
                  Node {n.name} ({n.addresses[0] ?? '?'})
                </option>
              ))}
            </optgroup>
            <option value="ip/">Outside address…</option>
          </select>
        </label>
        {srcKind === 'ip' && (
          <label class="field">
            Source address
            <input
              value={form.src.slice(3)}
              placeholder="203.0.113.7"
              onInput={(e) => {
                set({ src: `ip/${e.currentTarget.value}` });
              }}
            />
          </label>
        )}
        <label class="field">
          Destination
          <select
            value={dstKind === 'addr' ? 'addr/' : form.dst}
            onChange={(e) => {
              set({ dst: e.currentTarget.value });
            }}
          >
            <option value="">Choose…</option>
            <optgroup label="Service ports">
              {snap.services.flatMap((s) =>
                s.clusterIPs.length === 0
                  ? []
                  : s.ports.map((p) => (
                      <option
                        key={`${s.namespace}/${s.name}/${p.port}/${p.protocol}`}
                        value={`service/${s.namespace}/${s.name}/${p.port}`}
                      >
                        {s.namespace}/{s.name}:{p.port}/{p.protocol} ({s.clusterIPs[0]})
                      </option>
                    )),
              )}
            </optgroup>
            <optgroup label="NodePorts">
              {snap.nodes.flatMap((n) =>
                snap.services.flatMap((s) =>
                  s.ports.flatMap((p) =>
                    p.nodePort === undefined
                      ? []
                      : [
                          <option
                            key={`${n.name}/${s.namespace}/${s.name}/${p.port}`}
                            value={`nodeport/${n.name}/${s.namespace}/${s.name}/${p.port}`}
                          >
                            {n.name}:{p.nodePort} → {s.namespace}/{s.name}:{p.port}
                          </option>,
                        ],
                  ),
                ),
              )}
            </optgroup>
            <option value="addr/">Address:port…</option>
          </select>
        </label>
        {dstKind === 'addr' && (
          <label class="field">
            Destination address:port
            <input
              value={form.dst.slice(5)}
              placeholder="10.96.0.10:53"
              onInput={(e) => {
                set({ dst: `addr/${e.currentTarget.value}` });
              }}
            />
          </label>
        )}
        <label class="field">
          Protocol
          <select
            value={form.proto}
            onChange={(e) => {
              set({ proto: e.currentTarget.value });
            }}
          >
            <option value="tcp">TCP</option>
            <option value="udp">UDP</option>
            <option value="sctp">SCTP</option>
          </select>
        </label>
        <label class="field">
          Rules of node
          <select
            value={form.node}
            onChange={(e) => {
              set({ node: e.currentTarget.value });
            }}
          >
            <option value="">automatic (the source's node)</option>
            {snap.rules.map((r) => (
              <option key={r.node} value={r.node}>
                {r.node}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" class="primary">
          Trace
        </button>
      </form>
      <div aria-live="polite">
        {busy && <p class="hint">Tracing…</p>}
        {error && (
          <div role="alert" class="error" data-testid="trace-error">
            <strong>Cannot trace{error.field !== undefined ? ` (${error.field})` : ''}:</strong>{' '}
            {error.message}
          </div>
        )}
        {result && (
          <section aria-label="Trace result" data-testid="trace-result">
            <p class="packet">
              {result.packet.protocol.toUpperCase()} {result.packet.src} → {result.packet.dst} from
              a{' '}
              {result.packet.origin === 'external'
                ? 'client outside the cluster'
                : result.packet.origin}
              , through the {result.rulesOrigin} rules of node <strong>{result.node}</strong>:{' '}
              <strong data-testid="outcome-count">{result.outcomes.length}</strong> outcome
              {result.outcomes.length === 1 ? '' : 's'}
              {changed && (
                <span class="tag changed" data-testid="trace-changed">
                  changed since the last run
                </span>
              )}
            </p>
            <ol class="outcomes">
              {result.outcomes.map((o, i) => (
                <Outcome key={`${o.dnat ?? ''}${i}`} o={o} n={i} />
              ))}
            </ol>
            {result.notes.length > 0 && (
              <ul class="notes">
                {result.notes.map((n) => (
                  <li key={n}>{n}</li>
                ))}
              </ul>
            )}
          </section>
        )}
        {!result && !error && !busy && (
          <p class="hint">Choose a source and a destination, then Trace.</p>
        )}
      </div>
    </div>
  );
}
