// A node's programmed ruleset: per table, a graph of its chains and their jumps scoped by the
// search (chain-graph-view.tsx: KUBE-SERVICES → KUBE-SVC-… → KUBE-SEP-… with each branch's
// share), then the chains (collapsible), each rule with the Service port, endpoint and role
// its kube-proxy comment names, jumps as links to their chain; the raw dump one click away.

import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ClusterSnapshot, RuleInfo, RulesChain, RulesView as Rules } from '../api-types.js';
import { buildChainGraph } from '../chain-graph.js';
import { fetchRules } from './api.js';
import { ChainGraphView } from './chain-graph-view.js';

export interface RulesViewProps {
  readonly snap: ClusterSnapshot;
  readonly node: string;
  readonly query: string;
  readonly onNode: (node: string) => void;
  readonly onQuery: (q: string) => void;
}

function ruleMatches(r: RuleInfo, q: string): boolean {
  const hay = `${r.text} ${r.servicePort ?? ''} ${r.endpoint ?? ''} ${r.role ?? ''}`.toLowerCase();
  return hay.includes(q);
}

const chainAnchor = (table: string, chain: string): string =>
  `chain-${table}-${chain}`.replaceAll(/[^\w-]/g, '_');

/** Opens a chain's rules in the list and moves the focus there. */
function openChain(table: string, chain: string): void {
  const el = document.getElementById(chainAnchor(table, chain));
  if (!(el instanceof HTMLDetailsElement)) return;
  el.open = true;
  el.scrollIntoView({ block: 'start' });
  el.querySelector('summary')?.focus();
}

function Chain(props: {
  table: string;
  chain: RulesChain;
  rules: readonly RuleInfo[];
  open: boolean;
  chains: ReadonlySet<string>;
}) {
  const { table, chain } = props;
  return (
    <details id={chainAnchor(table, chain.name)} open={props.open} class="chain">
      <summary>
        <code>{chain.name}</code>{' '}
        {chain.policy !== '' && <span class="policy">{chain.policy}</span>}{' '}
        <span class="meta">{chain.rules.length} rules</span>
      </summary>
      <ol class="rules">
        {props.rules.map((r) => (
          <li key={r.index} value={r.index}>
            <code class="rule-text">{r.text}</code>
            <span class="annotations">
              {r.servicePort !== undefined && <span class="tag svc">Service {r.servicePort}</span>}
              {r.endpoint !== undefined && <span class="tag ep">endpoint {r.endpoint}</span>}
              {r.role !== undefined && <span class="tag role">{r.role}</span>}
              {r.target !== undefined && props.chains.has(r.target) && (
                <a
                  class="tag jump"
                  href={`#${chainAnchor(table, r.target)}`}
                  onClick={() => {
                    const el = document.getElementById(chainAnchor(table, r.target ?? ''));
                    if (el instanceof HTMLDetailsElement) el.open = true;
                  }}
                >
                  → {r.target}
                </a>
              )}
            </span>
          </li>
        ))}
      </ol>
    </details>
  );
}

export function RulesView(props: RulesViewProps) {
  const { snap, node, query } = props;
  const nodes = snap.rules.map((r) => r.node);
  const current = node !== '' && nodes.includes(node) ? node : (nodes[0] ?? '');
  const [rules, setRules] = useState<Rules | undefined>(undefined);
  const [error, setError] = useState('');
  const [raw, setRaw] = useState(false);
  useEffect(() => {
    if (current === '') return;
    let live = true;
    fetchRules(current).then(
      (r) => {
        if (live) {
          setRules(r);
          setError('');
        }
      },
      (e: unknown) => {
        if (live) setError(e instanceof Error ? e.message : String(e));
      },
    );
    return () => {
      live = false;
    };
    // Re-read after every change: rendered and live rules follow the cluster.
  }, [current, snap.revision]);
  const q = query.trim().toLowerCase();
  const tables = useMemo(
    () =>
      (rules?.tables ?? []).map((t) => {
        const graph = buildChainGraph(t, q);
        // A chain the graph shows is in the list too (its matching rules, else all of them).
        const drawn = new Set(graph.nodes.map((n) => n.chain));
        return {
          name: t.name,
          graph,
          names: new Set(t.chains.map((c) => c.name)),
          chains: t.chains
            .map((c) => {
              const hits = q === '' ? c.rules : c.rules.filter((r) => ruleMatches(r, q));
              return { chain: c, rules: hits.length === 0 && drawn.has(c.name) ? c.rules : hits };
            })
            .filter(
              (c) =>
                q === '' ||
                c.rules.length > 0 ||
                drawn.has(c.chain.name) ||
                c.chain.name.toLowerCase().includes(q),
            ),
        };
      }),
    [rules, q],
  );
  if (nodes.length === 0) return <p class="hint">No node has rules to show.</p>;
  return (
    <div class="rules-view">
      <div class="toolbar">
        <label class="field">
          Node
          <select
            value={current}
            onChange={(e) => {
              props.onNode(e.currentTarget.value);
            }}
          >
            {snap.rules.map((r) => (
              <option key={r.node} value={r.node}>
                {r.node} ({r.origin})
              </option>
            ))}
          </select>
        </label>
        <label class="field grow">
          Search rules (text, Service, endpoint)
          <input
            type="search"
            value={query}
            onInput={(e) => {
              props.onQuery(e.currentTarget.value);
            }}
          />
        </label>
        <button
          type="button"
          aria-pressed={raw}
          onClick={() => {
            setRaw(!raw);
          }}
        >
          {raw ? 'Show chains' : 'Raw dump'}
        </button>
      </div>
      {error !== '' && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {rules && (
        <p class="hint">
          {rules.format} rules of {rules.node}: {rules.description}
        </p>
      )}
      {rules && raw && (
        <pre class="raw" data-testid="raw-rules" tabIndex={0} aria-label="Raw ruleset">
          {rules.raw}
        </pre>
      )}
      {rules &&
        !raw &&
        tables.map((t) => (
          <section key={t.name} class="table" aria-label={`table ${t.name}`}>
            <h2>table {t.name}</h2>
            {t.graph.edges.length > 0 && (
              <>
                <ChainGraphView
                  table={t.name}
                  graph={t.graph}
                  onOpen={(chain) => {
                    openChain(t.name, chain);
                  }}
                />
                {t.graph.omitted > 0 && (
                  <p class="hint">
                    The graph shows {t.graph.edges.length} of{' '}
                    {t.graph.edges.length + t.graph.omitted} jumps: search for a Service, endpoint
                    or chain to see the others.
                  </p>
                )}
              </>
            )}
            {t.chains.length === 0 && <p class="hint">No rule matches.</p>}
            {t.chains.map((c) => (
              <Chain
                key={c.chain.name}
                table={t.name}
                chain={c.chain}
                rules={c.rules}
                chains={t.names}
                open={q !== '' || c.chain.name === 'KUBE-SERVICES' || c.chain.policy !== ''}
              />
            ))}
          </section>
        ))}
    </div>
  );
}
