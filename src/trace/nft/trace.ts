// `traceNftPacket`: the stages an nftables packet goes through (kernel mode: hooks and
// routing, see walk.ts; fixture-compatible mode: kube-proxy's unit-test tracer order —
// filter-prerouting-pre-dnat, nat-prerouting, filter-forward, filter-input, nat-postrouting),
// run by the nft Walker, turned into the common TraceResult (result.ts). Pure.

import type { ChainHook, Ruleset } from '../../netfilter/nftables/model.js';
import { isLocalAddress, type Packet, type TraceContext } from '../packet.js';
import type { Hook, TraceResult } from '../result.js';
import { PathRunner, initialState, toOutcome, type State } from '../walk-state.js';
import type { BaseChain } from './view.js';
import { HOOK_NAMES, Walker, prepareNftRuleset, type PreparedNftRuleset } from './walk.js';

type Stage =
  | { readonly kind: 'hook'; readonly hook: ChainHook; readonly nat: boolean }
  | { readonly kind: 'chain'; readonly chain: string }
  | { readonly kind: 'route'; readonly after: 'prerouting' | 'output' }
  | { readonly kind: 'deliver'; readonly where: 'local' | 'forward' };

/** kube-proxy's unit-test tracer order (fixtures README, "Packet-flow semantics"). */
const FIXTURE_CHAINS = [
  'filter-prerouting-pre-dnat',
  'nat-prerouting',
  'filter-forward',
  'filter-input',
  'nat-postrouting',
];

class Pipeline extends PathRunner<Walker> {
  stages(): Stage[] {
    if (this.ctx.mode === 'fixture-compatible')
      return FIXTURE_CHAINS.map((chain) => ({ kind: 'chain', chain }));
    if (this.ctx.origin === 'node')
      return [
        { kind: 'hook', hook: 'output', nat: this.isNew },
        { kind: 'hook', hook: 'postrouting', nat: this.isNew },
        { kind: 'route', after: 'output' },
      ];
    return [
      { kind: 'hook', hook: 'prerouting', nat: this.isNew },
      { kind: 'route', after: 'prerouting' },
    ];
  }

  run(stages: readonly Stage[], state: State): void {
    const [stage, ...rest] = stages;
    if (!stage) {
      this.accepted(state);
      return;
    }
    switch (stage.kind) {
      case 'deliver':
        this.accepted(state, stage.where);
        return;
      case 'route':
        this.route(stage.after, state);
        return;
      case 'chain':
        this.runNamedChain(stage.chain, state, (s) => {
          this.run(rest, s);
        });
        return;
      case 'hook': {
        if (stage.hook === 'postrouting' || stage.hook === 'forward')
          state.outInterface ??= this.ctx.outInterface;
        const chains = this.walker.view.hooks.get(stage.hook) ?? [];
        this.runHook(HOOK_NAMES[stage.hook], chains, stage.nat, false, state, (s) => {
          this.run(rest, s);
        });
      }
    }
  }

  /** fixture-compatible: one named chain of the family's tables (first table having it). */
  private runNamedChain(name: string, state: State, next: (s: State) => void): void {
    const table = this.walker.view.tables.find((t) => t.chains.has(name));
    const chain = table?.chains.get(name);
    if (!table || !chain) {
      next(state);
      return;
    }
    const hook = HOOK_NAMES[chain.chain.hook ?? 'prerouting'];
    const bc: BaseChain = { table, chain, priority: chain.chain.priority ?? 0 };
    this.continueWith(this.walker.runBase(hook, bc, state), true, next);
  }

  /** The base chains of one hook in priority order; nat chains until one translated. */
  private runHook(
    hook: Hook,
    chains: readonly BaseChain[],
    nat: boolean,
    natDone: boolean,
    state: State,
    next: (s: State) => void,
  ): void {
    const [bc, ...rest] = chains;
    if (!bc) {
      next(state);
      return;
    }
    if (bc.chain.chain.type === 'nat' && (!nat || natDone)) {
      this.runHook(hook, rest, nat, natDone, state, next);
      return;
    }
    const exits = this.walker.runBase(hook, bc, state);
    this.continueWith(exits, false, (s, e) => {
      const translated =
        bc.chain.chain.type === 'nat' && e.kind === 'verdict' && e.verdict === 'nat';
      this.runHook(hook, rest, nat, natDone || translated, s, next);
    });
  }

  /** Routing on the (possibly DNATed) destination: to the node itself, or on out of it. */
  private route(after: 'prerouting' | 'output', state: State): void {
    const local = isLocalAddress(this.ctx, state.dst);
    if (after === 'prerouting') {
      if (local)
        this.run(
          [
            { kind: 'hook', hook: 'input', nat: this.isNew },
            { kind: 'deliver', where: 'local' },
          ],
          state,
        );
      else
        this.run(
          [
            { kind: 'hook', hook: 'forward', nat: false },
            { kind: 'hook', hook: 'postrouting', nat: this.isNew },
            { kind: 'deliver', where: 'forward' },
          ],
          state,
        );
      return;
    }
    if (!local) {
      this.run([{ kind: 'deliver', where: 'forward' }], state);
      return;
    }
    // A node address loops back in over lo; NAT was decided on the way out.
    state.inInterface = 'lo';
    state.outInterface = undefined;
    this.run(
      [
        { kind: 'hook', hook: 'prerouting', nat: false },
        { kind: 'hook', hook: 'input', nat: false },
        { kind: 'deliver', where: 'local' },
      ],
      state,
    );
  }
}

/**
 * Traces `packet` through the nftables `ruleset` in `ctx`. Never throws for rules it cannot
 * evaluate: they are listed in `unsupported` and assumed not to match.
 */
export function traceNftPacket(
  rules: Ruleset | PreparedNftRuleset,
  packet: Packet,
  ctx: TraceContext,
): TraceResult {
  const prepared = 'view' in rules ? rules : prepareNftRuleset(rules, packet.src.family);
  const walker = new Walker(prepared.view, packet, ctx);
  const pipeline = new Pipeline(walker, ctx);
  pipeline.run(pipeline.stages(), initialState(packet, ctx));
  const notes: string[] = [];
  if (prepared.view.tables.length === 0)
    notes.push(
      `the ruleset has no ${packet.src.family === 'IPv4' ? 'ip' : 'ip6'} or inet table: nothing to trace`,
    );
  if (ctx.ctState !== 'NEW')
    notes.push(
      `conntrack state ${ctx.ctState}: nat chains are not consulted (NAT is decided on a connection's first packet)`,
    );
  return {
    packet,
    context: ctx,
    outcomes: pipeline.done.map((d) => toOutcome(d, ctx)),
    unsupported: walker.unsupportedRules(),
    notes: [...notes, ...walker.notes],
    dataplane: 'nftables',
  };
}
