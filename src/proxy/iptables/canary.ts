// The canary monitor: notices when someone flushed or deleted the proxy's iptables state
// from outside (firewalld reload, `iptables -t nat -F`, `iptables -X`) and asks for a full
// resync. Like kube-proxy it keeps an empty KUBE-PROXY-CANARY chain in mangle, nat and
// filter (the proxier creates them); it polls the first jump rule of the nat and filter
// tables — flushing a table (`-F`) empties chains without deleting them, which a chain
// check alone would miss — and the mangle canary chain. It polls on an injected clock.

import type { IptablesTableName } from '../../netfilter/iptables/model.js';
import type { IPFamily } from '../../util/ip.js';
import type { Clock, TimerHandle } from '../../util/clock.js';

/** What the monitor probes; `ruleExists` is optional (the Fake iptables may lack it). */
export interface CanaryProbe {
  readonly family: IPFamily;
  chainExists(table: IptablesTableName, chain: string): Promise<boolean>;
  ruleExists?(table: IptablesTableName, chain: string, args: readonly string[]): Promise<boolean>;
}

/** A thing that must exist while the proxy's rules are intact. */
export type CanaryCheck =
  | { readonly kind: 'chain'; readonly table: IptablesTableName; readonly chain: string }
  | {
      readonly kind: 'rule';
      readonly table: IptablesTableName;
      readonly chain: string;
      readonly args: readonly string[];
    };

export interface CanaryOptions {
  readonly probes: readonly CanaryProbe[];
  /** What to check per family (from the last full sync's plan); empty means nothing yet. */
  readonly checks: (family: IPFamily) => readonly CanaryCheck[];
  readonly intervalMs: number;
  readonly clock: Clock;
  /** Skip a round while this is true (e.g. a sync is writing the rules). */
  readonly isBusy?: () => boolean;
  /** Called once per detected loss, with what was missing. */
  readonly onLost: (family: IPFamily, missing: CanaryCheck) => void;
  readonly onError?: (err: unknown) => void;
}

/** Polls the canaries (see the file header). */
export class CanaryMonitor {
  private readonly opts: CanaryOptions;
  private timer: TimerHandle | undefined;
  private stopped = true;
  private round: Promise<void> | undefined;

  constructor(opts: CanaryOptions) {
    this.opts = opts;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.round;
  }

  /** Runs one round of checks now; resolves to the families found damaged. */
  async checkOnce(): Promise<IPFamily[]> {
    const lost: IPFamily[] = [];
    for (const probe of this.opts.probes) {
      for (const c of this.opts.checks(probe.family)) {
        const present =
          c.kind === 'chain'
            ? await probe.chainExists(c.table, c.chain)
            : probe.ruleExists === undefined
              ? true
              : await probe.ruleExists(c.table, c.chain, c.args);
        if (present) continue;
        lost.push(probe.family);
        this.opts.onLost(probe.family, c);
        break;
      }
    }
    return lost;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.opts.clock.setTimeout(() => {
      this.timer = undefined;
      if (this.opts.isBusy?.() === true) {
        this.schedule();
        return;
      }
      this.round = this.checkOnce()
        .then(
          () => undefined,
          (err: unknown) => {
            this.opts.onError?.(err);
          },
        )
        .finally(() => {
          this.round = undefined;
          this.schedule();
        });
    }, this.opts.intervalMs);
  }
}

/**
 * The checks for one family after a full sync: the first jump rule of every table that has
 * one (a flushed table loses it; deleting a table's chains needs a flush first), then the
 * canary chains of tables without jumps (mangle). One missing check is enough, so the cheap
 * and likely ones come first.
 */
export function canaryChecks(
  canaries: readonly { readonly table: IptablesTableName; readonly chain: string }[],
  jumps: readonly {
    readonly table: IptablesTableName;
    readonly sourceChain: string;
    readonly args: readonly string[];
  }[],
): CanaryCheck[] {
  const out: CanaryCheck[] = [];
  const seen = new Set<IptablesTableName>();
  // nat first: losing it breaks every Service, and it is what `iptables -t nat -F` hits.
  const ordered = [...jumps].sort((a, b) => Number(b.table === 'nat') - Number(a.table === 'nat'));
  for (const j of ordered) {
    if (seen.has(j.table)) continue;
    seen.add(j.table);
    out.push({ kind: 'rule', table: j.table, chain: j.sourceChain, args: j.args });
  }
  for (const c of canaries)
    if (!seen.has(c.table)) out.push({ kind: 'chain', table: c.table, chain: c.chain });
  return out;
}
