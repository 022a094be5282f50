// One table's chain graph in the rules view: chains as boxes (with the Service or endpoint
// behind them), jumps as arrows labelled with the branch's share of packets (the statistic
// probability in the tooltip), laid out by chain-layout.ts. Every chain is a button (Tab, then
// Enter or Space) that opens that chain's rules in the list below; nft's inline DNAT targets
// are plain boxes.

import { useEffect, useState } from 'preact/hooks';
import type { ChainGraph } from '../chain-graph.js';
import { layoutChains, type ChainLayout } from './chain-layout.js';

export interface ChainGraphViewProps {
  readonly table: string;
  readonly graph: ChainGraph;
  readonly onOpen: (chain: string) => void;
}

function arrowHead(points: readonly { x: number; y: number }[]): string {
  const a = points.at(-2);
  const b = points.at(-1);
  if (!a || !b) return '';
  const ang = Math.atan2(b.y - a.y, b.x - a.x);
  const p = (d: number): string => `${b.x - 8 * Math.cos(ang + d)},${b.y - 8 * Math.sin(ang + d)}`;
  return `${b.x},${b.y} ${p(0.45)} ${p(-0.45)}`;
}

export function ChainGraphView(props: ChainGraphViewProps) {
  const { graph, table } = props;
  const [layout, setLayout] = useState<ChainLayout | undefined>(undefined);
  const [error, setError] = useState('');
  useEffect(() => {
    let live = true;
    layoutChains(graph).then(
      (l) => {
        if (live) {
          setLayout(l);
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
  }, [graph]);
  if (error !== '') return <p role="alert">Chain graph layout failed: {error}</p>;
  if (!layout) return <p class="hint">Laying out the chains…</p>;
  return (
    <div
      class="graph-wrap chain-graph"
      tabIndex={0}
      role="region"
      aria-label={`Chain graph of table ${table}`}
      data-testid="chain-graph"
    >
      <svg
        class="graph"
        viewBox={`0 0 ${Math.max(layout.width, 10)} ${Math.max(layout.height, 10)}`}
        width={layout.width}
        height={layout.height}
        role="group"
        aria-label={`Chains of table ${table} and their jumps`}
      >
        {layout.edges.map((e) => (
          <g
            key={e.edge.id}
            class={`cedge ${e.edge.kind}`}
            data-from={e.edge.from}
            data-to={e.edge.to}
          >
            <title>{e.title}</title>
            <polyline class="edge" points={e.points.map((p) => `${p.x},${p.y}`).join(' ')} />
            <polygon class="arrow" points={arrowHead(e.points)} />
            {e.labelAt && e.label !== '' && (
              <text class="elabel" x={e.labelAt.x + 3} y={e.labelAt.y}>
                {e.label}
              </text>
            )}
          </g>
        ))}
        {layout.boxes.map((b) => {
          const open = (): void => {
            props.onOpen(b.chain);
          };
          // A DNAT target is no chain: nothing to open.
          const button =
            b.kind === 'chain'
              ? {
                  role: 'button' as const,
                  tabIndex: 0,
                  onClick: open,
                  onKeyDown: (ev: KeyboardEvent) => {
                    if (ev.key === 'Enter' || ev.key === ' ') {
                      ev.preventDefault();
                      open();
                    }
                  },
                }
              : {};
          return (
            <g
              key={b.chain}
              class={`box ${b.kind === 'chain' ? 'chainbox' : 'dnatbox'}`}
              data-chain={b.chain}
              transform={`translate(${b.x},${b.y})`}
              {...button}
            >
              <title>{b.title}</title>
              <rect width={b.w} height={b.h} rx={5} />
              {/* One text with a space between the lines: the button is named by it. */}
              <text>
                <tspan x={8} y={16} class="label">
                  {b.chain}
                </tspan>{' '}
                <tspan x={8} y={31} class="sub">
                  {b.sub}
                </tspan>
              </text>
            </g>
          );
        })}
      </svg>
    </div>
  );
}
