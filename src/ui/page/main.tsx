// The svcnet ui page: loads the cluster snapshot, follows the server's change events (SSE)
// and shows the map, rules or trace view named in the URL. The first paint with data sets
// the `svcnet-data` performance mark and `data-loaded` on <body> (the browser test reads both).

import { render } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ClusterSnapshot } from '../api-types.js';
import { fetchSnapshot, subscribe } from './api.js';
import { MapView } from './map-view.js';
import { RulesView } from './rules-view.js';
import { TraceView, type TraceParams } from './trace-view.js';
import { readParams, viewOf, writeParams, type View } from './url.js';
import './styles.css';

function App() {
  const [params, setParams] = useState(readParams());
  const [snap, setSnap] = useState<ClusterSnapshot | undefined>(undefined);
  const [error, setError] = useState('');
  const [live, setLive] = useState(false);
  const view = viewOf(params);

  const load = useCallback(() => {
    fetchSnapshot().then(
      (s) => {
        setSnap(s);
        setError('');
      },
      (e: unknown) => {
        setError(e instanceof Error ? e.message : String(e));
      },
    );
  }, []);

  useEffect(() => {
    load();
    let timer: number | undefined;
    let opened = false;
    const stop = subscribe(
      () => {
        // Coalesce bursts (a rollout) into one refetch.
        if (timer === undefined)
          timer = window.setTimeout(() => {
            timer = undefined;
            load();
          }, 50);
      },
      (open) => {
        setLive(open);
        // A reconnect may have missed changes; the first open follows the load above.
        if (open && opened) load();
        opened ||= open;
      },
    );
    const onPop = (): void => {
      setParams(readParams());
    };
    window.addEventListener('popstate', onPop);
    return () => {
      stop();
      window.removeEventListener('popstate', onPop);
    };
  }, [load]);

  useEffect(() => {
    if (snap !== undefined && document.body.dataset.loaded !== '1')
      requestAnimationFrame(() => {
        performance.mark('svcnet-data');
        document.body.dataset.loaded = '1';
      });
    if (snap !== undefined) document.body.dataset.revision = String(snap.revision);
  }, [snap]);

  const update = (patch: Record<string, string | undefined>, push = false): void => {
    const next: Record<string, string | undefined> = Object.fromEntries(params.entries());
    Object.assign(next, patch);
    writeParams(next, push);
    setParams(readParams());
  };
  const go = (v: View): void => {
    update({ view: v }, true);
  };
  const trace: TraceParams = {
    src: params.get('src') ?? '',
    dst: params.get('dst') ?? '',
    proto: params.get('proto') ?? 'tcp',
    node: params.get('tnode') ?? '',
  };

  return (
    <>
      <header class="top">
        <h1>svcnet</h1>
        <nav aria-label="Views">
          {(['map', 'rules', 'trace'] as const).map((v) => (
            <a
              key={v}
              href={`?view=${v}`}
              aria-current={view === v ? 'page' : undefined}
              onClick={(e) => {
                e.preventDefault();
                go(v);
              }}
            >
              {v === 'map' ? 'Cluster map' : v === 'rules' ? 'Rules' : 'Trace'}
            </a>
          ))}
        </nav>
        <span class={`live ${live ? 'on' : 'off'}`} role="status" data-testid="live">
          {live ? 'live' : 'reconnecting…'}
        </span>
      </header>
      <main>
        {error !== '' && (
          <p role="alert" class="error">
            Cannot load the cluster: {error}
          </p>
        )}
        {snap === undefined ? (
          error === '' && <p class="hint">Loading the cluster…</p>
        ) : view === 'map' ? (
          <MapView
            snap={snap}
            selected={params.get('service') ?? ''}
            filter={params.get('q') ?? ''}
            onSelect={(s) => {
              update({ service: s });
            }}
            onFilter={(q) => {
              update({ q });
            }}
          />
        ) : view === 'rules' ? (
          <RulesView
            snap={snap}
            node={params.get('node') ?? ''}
            query={params.get('rq') ?? ''}
            onNode={(node) => {
              update({ node });
            }}
            onQuery={(rq) => {
              update({ rq });
            }}
          />
        ) : (
          <TraceView
            snap={snap}
            params={trace}
            onRun={(p) => {
              update({ src: p.src, dst: p.dst, proto: p.proto, tnode: p.node }, true);
            }}
          />
        )}
      </main>
    </>
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);
