// The cluster map: Services (filterable list, keyboard-selectable) beside a graph of Nodes,
// their Pods and the Services' endpoint edges laid out by ELK (graph.ts). Selecting a Service
// highlights its endpoint Pods and shows its ports, endpoints and DNS names.

import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ClusterSnapshot, ServiceInfo } from '../api-types.js';
import { endpointPods, layoutCluster, serviceId, type Layout } from './graph.js';

export interface MapViewProps {
  readonly snap: ClusterSnapshot;
  readonly selected: string;
  readonly filter: string;
  readonly onSelect: (key: string) => void;
  readonly onFilter: (q: string) => void;
}

const keyOf = (s: ServiceInfo): string => `${s.namespace}/${s.name}`;

function matches(s: ServiceInfo, q: string): boolean {
  if (q === '') return true;
  const hay = `${s.namespace}/${s.name} ${s.type} ${s.clusterIPs.join(' ')} ${s.ports.map((p) => p.port).join(' ')}`;
  return hay.toLowerCase().includes(q.toLowerCase());
}

function Graph(props: {
  layout: Layout;
  highlight: ReadonlySet<string>;
  selectedId: string;
  onSelect: (key: string) => void;
}) {
  const { layout, highlight, selectedId } = props;
  const order = { node: 0, service: 1, pod: 2 } as const;
  const boxes = [...layout.boxes].sort((a, b) => order[a.kind] - order[b.kind]);
  return (
    <svg
      class="graph"
      viewBox={`0 0 ${Math.max(layout.width, 10)} ${Math.max(layout.height, 10)}`}
      width={layout.width}
      height={layout.height}
      role="group"
      aria-label="Cluster map: Nodes with their Pods, Services and endpoint edges"
    >
      {layout.edges.map((e) => (
        <polyline
          key={e.id}
          class={`edge${e.from === selectedId ? ' hl' : ''}`}
          points={e.points.map((p) => `${p.x},${p.y}`).join(' ')}
        />
      ))}
      {boxes.map((b) => {
        const cls = `box ${b.kind}${highlight.has(b.id) ? ' hl' : ''}${b.id === selectedId ? ' sel' : ''}${b.ready ? '' : ' notready'}`;
        const isSvc = b.kind === 'service';
        const select = (): void => {
          props.onSelect(b.id.slice(4));
        };
        return (
          <g
            key={b.id}
            class={cls}
            data-id={b.id}
            transform={`translate(${b.x},${b.y})`}
            {...(isSvc
              ? {
                  role: 'button',
                  tabIndex: 0,
                  onClick: select,
                  onKeyDown: (ev: KeyboardEvent) => {
                    if (ev.key === 'Enter' || ev.key === ' ') {
                      ev.preventDefault();
                      select();
                    }
                  },
                }
              : {})}
          >
            <rect width={b.w} height={b.h} rx={b.kind === 'node' ? 8 : 5} />
            {/* One text with a space between the lines: a Service button is named by it. */}
            <text>
              <tspan x={8} y={b.kind === 'node' ? 15 : 16} class="label">
                {b.label}
              </tspan>{' '}
              <tspan x={8} y={b.kind === 'node' ? 28 : 30} class="sub">
                {b.sub}
              </tspan>
            </text>
          </g>
        );
      })}
    </svg>
  );
}

function ServiceDetails({ svc }: { svc: ServiceInfo }) {
  return (
    <section class="details" aria-label={`Service ${keyOf(svc)}`} data-testid="service-details">
      <h2>
        {svc.namespace}/{svc.name}
      </h2>
      <dl class="facts">
        <dt>Type</dt>
        <dd>{svc.headless ? `${svc.type} (headless)` : svc.type}</dd>
        <dt>Cluster IP</dt>
        <dd>{svc.clusterIPs.join(', ') || 'None'}</dd>
        {svc.externalIPs.length > 0 && (
          <>
            <dt>External IPs</dt>
            <dd>{svc.externalIPs.join(', ')}</dd>
          </>
        )}
        {svc.loadBalancerIPs.length > 0 && (
          <>
            <dt>Load balancer</dt>
            <dd>{svc.loadBalancerIPs.join(', ')}</dd>
          </>
        )}
        <dt>Ports</dt>
        <dd>
          {svc.ports
            .map(
              (p) =>
                `${p.name !== '' ? `${p.name} ` : ''}${p.port}/${p.protocol} → ${p.targetPort}${p.nodePort !== undefined ? ` (NodePort ${p.nodePort})` : ''}`,
            )
            .join('; ')}
        </dd>
      </dl>
      <p>
        <a
          href={`?${new URLSearchParams({ view: 'rules', rq: keyOf(svc) }).toString()}`}
          data-testid="service-rules"
        >
          Its rules and chain graph
        </a>
      </p>
      <h3>
        Endpoints (<span data-testid="endpoint-count">{svc.endpoints.length}</span>)
      </h3>
      <ul class="endpoints">
        {svc.endpoints.map((e) => (
          <li key={e.addresses.join(',')} class={e.ready ? 'ready' : 'notready'}>
            <code>{e.addresses.join(', ')}</code> {e.pod !== undefined ? `Pod ${e.pod}` : ''}
            {e.node !== '' ? ` on ${e.node}` : ''} —{' '}
            {e.ready ? 'ready' : e.terminating ? 'terminating' : 'not ready'}
          </li>
        ))}
      </ul>
      <h3>DNS names</h3>
      <table class="dns">
        <thead>
          <tr>
            <th scope="col">Type</th>
            <th scope="col">Name</th>
            <th scope="col">Answer</th>
          </tr>
        </thead>
        <tbody>
          {svc.dns.map((d) => (
            <tr key={`${d.type} ${d.name} ${d.value}`}>
              <td>{d.type}</td>
              <td>
                <code>{d.name}</code>
              </td>
              <td>
                <code>{d.value}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function MapView(props: MapViewProps) {
  const { snap, selected, filter } = props;
  const services = useMemo(() => snap.services.filter((s) => matches(s, filter)), [snap, filter]);
  const [layout, setLayout] = useState<Layout | undefined>(undefined);
  const [layoutError, setLayoutError] = useState('');
  useEffect(() => {
    let live = true;
    // The lists paint first; the layout (a Web Worker loading ELK) starts once they have.
    const start = (): Promise<Layout> =>
      new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0))).then(() =>
        layoutCluster(snap, services),
      );
    start().then(
      (l) => {
        if (live) setLayout(l);
      },
      (e: unknown) => {
        if (live) setLayoutError(String(e));
      },
    );
    return () => {
      live = false;
    };
  }, [snap, services]);
  const svc = snap.services.find((s) => keyOf(s) === selected);
  const highlight = useMemo(() => new Set(svc ? endpointPods(snap, svc) : []), [snap, svc]);
  const readyPods = snap.pods.filter((p) => p.ready).length;
  return (
    <div class="map-view">
      <aside class="sidebar" aria-label="Services">
        <p class="counts" data-testid="counts">
          {snap.nodes.length} nodes · {snap.pods.length} pods ({readyPods} ready) ·{' '}
          {snap.services.length} services
        </p>
        <label class="field">
          Filter services
          <input
            type="search"
            value={filter}
            onInput={(e) => {
              props.onFilter(e.currentTarget.value);
            }}
          />
        </label>
        <ul class="service-list" data-testid="service-list">
          {services.map((s) => (
            <li key={keyOf(s)}>
              <button
                type="button"
                aria-pressed={keyOf(s) === selected}
                onClick={() => {
                  props.onSelect(keyOf(s));
                }}
              >
                <span class="name">{keyOf(s)}</span>
                <span class="meta">
                  {s.type} · {s.clusterIPs[0] ?? 'None'} ·{' '}
                  {s.endpoints.filter((e) => e.ready).length}/{s.endpoints.length} endpoints
                </span>
              </button>
            </li>
          ))}
        </ul>
      </aside>
      <div class="main">
        {svc ? (
          <ServiceDetails svc={svc} />
        ) : (
          <p class="hint">Select a Service to see its endpoints and DNS names.</p>
        )}
        {/* Focusable: a map wider than the screen scrolls with the arrow keys too (axe
            scrollable-region-focusable, seen on the lab's 3-node map). */}
        <div
          class="graph-wrap"
          data-testid="graph"
          tabIndex={0}
          role="region"
          aria-label="Cluster map"
        >
          {layoutError !== '' ? (
            <p role="alert">Map layout failed: {layoutError}</p>
          ) : layout ? (
            <>
              {layout.hidden > 0 && (
                <p class="hint">
                  Showing {services.length - layout.hidden} of {services.length} Services: filter to
                  see others.
                </p>
              )}
              <Graph
                layout={layout}
                highlight={highlight}
                selectedId={svc ? serviceId(svc) : ''}
                onSelect={props.onSelect}
              />
            </>
          ) : (
            <p class="hint">Laying out the map…</p>
          )}
        </div>
      </div>
    </div>
  );
}
