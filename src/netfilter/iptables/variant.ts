// Which iptables backend (legacy or nft) a proxy programs, decided once per process the way
// kube-proxy's image decides it (kubernetes-sigs/iptables-wrappers): the backend whose tables
// already hold the node's rules wins — first the chains kubelet (1.17+) creates in mangle,
// KUBE-IPTABLES-HINT or KUBE-KUBELET-CANARY, looked for in nft first; else the backend holding
// more KUBE-* rules, then more rules of any kind; else nft. Rules written through the other
// backend would form a second ruleset the kernel applies as well (kubernetes #71305,
// #112477), so restore, save, the canary and the cleanup of one proxy all use the one answer
// (`resolveIptablesVariant` memoizes it per Execer). `chooseIptablesVariant` is the pure
// decision; the rest runs the `*-save` tools through the Execer seam.

import type { Execer, ExecResult } from '../../os/exec.js';
import type { IPFamily } from '../../util/ip.js';
import { NFT_RESTORE_CHUNK_LINES, RealIptables, commandsFor } from './backend.js';
import type { IptablesCommands, IptablesVariant } from './backend.js';

/** `--iptables-variant` / `iptables.svcnetVariant`: detect, or force one backend. */
export type IptablesVariantSetting = 'auto' | IptablesVariant;

/** Chains that mark the backend the node's kubelet uses (it creates them in mangle). */
export const VARIANT_HINT_CHAINS: readonly string[] = ['KUBE-IPTABLES-HINT', 'KUBE-KUBELET-CANARY'];

/** What one proxy programs through, and why (one line for the log). */
export interface IptablesVariantChoice {
  readonly variant: IptablesVariant;
  /** Whether the variant's own binaries (`iptables-nft-restore` …) exist; else plain names. */
  readonly specific: boolean;
  readonly reason: string;
}

/** What detection saw: each backend's `*-save` of both families (undefined: tools missing). */
export interface VariantEvidence {
  readonly legacySave?: string;
  readonly nftSave?: string;
}

/** The first hint chain declared in a save dump, if any. */
export function hintChainIn(dump: string | undefined): string | undefined {
  if (dump === undefined) return undefined;
  return VARIANT_HINT_CHAINS.find((c) => new RegExp(`^:${c}(?:\\s|$)`, 'm').test(dump));
}

/** Rules in a save dump: all of them, and those in or jumping to a KUBE-* chain. */
export function countRules(dump: string | undefined): { all: number; kube: number } {
  let all = 0;
  let kube = 0;
  if (dump === undefined) return { all, kube };
  for (const line of dump.split('\n')) {
    if (!line.startsWith('-A ')) continue;
    all++;
    if (line.startsWith('-A KUBE-') || / -[jg] KUBE-/.test(line)) kube++;
  }
  return { all, kube };
}

/** Chooses the backend (pure); see the file header for the order. */
export function chooseIptablesVariant(ev: VariantEvidence): IptablesVariantChoice {
  const hasLegacy = ev.legacySave !== undefined;
  const hasNft = ev.nftSave !== undefined;
  const pick = (variant: IptablesVariant, reason: string): IptablesVariantChoice => ({
    variant,
    specific: variant === 'legacy' ? hasLegacy : hasNft,
    reason,
  });
  if (!hasLegacy && hasNft) return pick('nft', 'only iptables-nft is installed');
  if (hasLegacy && !hasNft) return pick('legacy', 'only iptables-legacy is installed');
  const nftHint = hintChainIn(ev.nftSave);
  if (nftHint !== undefined) return pick('nft', `kubelet's ${nftHint} chain is in the nft tables`);
  const legacyHint = hintChainIn(ev.legacySave);
  if (legacyHint !== undefined)
    return pick('legacy', `kubelet's ${legacyHint} chain is in the legacy tables`);
  const legacy = countRules(ev.legacySave);
  const nft = countRules(ev.nftSave);
  const held = (what: string, l: number, n: number): string =>
    `the legacy tables hold ${String(l)} ${what}, the nft tables ${String(n)}`;
  if (legacy.kube !== nft.kube)
    return pick(
      legacy.kube > nft.kube ? 'legacy' : 'nft',
      held('KUBE-* rules', legacy.kube, nft.kube),
    );
  if (legacy.all > nft.all) return pick('legacy', held('rules', legacy.all, nft.all));
  if (nft.all > 0) return pick('nft', held('rules', legacy.all, nft.all));
  return pick('nft', "no rules in either backend: nft, the default of kube-proxy's image");
}

/** Parses `iptables v1.8.9 (nf_tables)` / `(legacy)`; iptables before 1.8 is legacy. */
export function parseVariantFromVersion(text: string): IptablesVariant | undefined {
  if (/\(nf_tables\)/.test(text)) return 'nft';
  if (/\(legacy\)/.test(text)) return 'legacy';
  return /^iptables v1\.[0-7]\./m.test(text) ? 'legacy' : undefined;
}

async function tryRun(
  execer: Execer,
  cmd: string,
  args: string[],
): Promise<ExecResult | undefined> {
  try {
    return await execer.run({ cmd, args, timeoutMs: 120_000 });
  } catch {
    return undefined; // not installed
  }
}

/** Both families' `*-save` of a backend, or undefined when its tools are missing. */
async function saveBoth(
  execer: Execer,
  v: IptablesVariant,
  args: string[],
): Promise<string | undefined> {
  const parts: string[] = [];
  for (const fam of ['IPv4', 'IPv6'] as const) {
    const r = await tryRun(execer, commandsFor(fam, v).save, args);
    if (r?.code === 0) parts.push(r.stdout);
  }
  return parts.length > 0 ? parts.join('\n') : undefined;
}

/**
 * Detects the backend the node uses. As the wrapper does, nft's mangle table is read first
 * (cheap, and kubelet's hint is usually there); only then whole dumps: legacy's (never
 * `-t mangle`, which would create the table in the kernel) and nft's. Without either
 * backend's own binaries (iptables before 1.8), plain `iptables` is used.
 */
export async function detectIptablesVariant(execer: Execer): Promise<IptablesVariantChoice> {
  const nftMangle = await saveBoth(execer, 'nft', ['-t', 'mangle']);
  const hint = hintChainIn(nftMangle);
  if (hint !== undefined)
    return {
      variant: 'nft',
      specific: true,
      reason: `kubelet's ${hint} chain is in the nft tables`,
    };
  const legacySave = await saveBoth(execer, 'legacy', []);
  const nftSave = nftMangle === undefined ? undefined : await saveBoth(execer, 'nft', []);
  if (legacySave === undefined && nftSave === undefined) {
    const version = await tryRun(execer, 'iptables', ['--version']);
    const variant = parseVariantFromVersion(version?.stdout ?? '') ?? 'legacy';
    return {
      variant,
      specific: false,
      reason: `no iptables-legacy or iptables-nft tools: plain iptables (${variant})`,
    };
  }
  return chooseIptablesVariant({
    ...(legacySave !== undefined ? { legacySave } : {}),
    ...(nftSave !== undefined ? { nftSave } : {}),
  });
}

const memo = new WeakMap<Execer, Promise<IptablesVariantChoice>>();

/**
 * The backend of `setting` for everything run through `execer`: forced, or detected once and
 * remembered, so the cleanup, the proxier and the canary of one proxy can never disagree
 * (a later detection could: the cleanup itself removes rules the counts look at).
 */
export function resolveIptablesVariant(
  setting: IptablesVariantSetting,
  execer: Execer,
): Promise<IptablesVariantChoice> {
  if (setting !== 'auto')
    return Promise.resolve({
      variant: setting,
      specific: true,
      reason: 'set by --iptables-variant or iptables.svcnetVariant',
    });
  let p = memo.get(execer);
  if (p === undefined) {
    p = detectIptablesVariant(execer);
    memo.set(execer, p);
  }
  return p;
}

/** The commands of a choice for one family. */
export function commandsOfChoice(
  choice: IptablesVariantChoice,
  family: IPFamily,
): IptablesCommands {
  return commandsFor(family, choice.specific ? choice.variant : undefined);
}

/** One backend per family, all through the one resolved variant (see resolveIptablesVariant). */
export async function resolveIptablesBackends(
  setting: IptablesVariantSetting,
  execer: Execer,
  families: readonly IPFamily[],
): Promise<{ choice: IptablesVariantChoice; backends: RealIptables[] }> {
  const choice = await resolveIptablesVariant(setting, execer);
  // iptables-nft restores are split into chunks (backend.ts), also under the plain names.
  const chunk = choice.variant === 'nft' ? NFT_RESTORE_CHUNK_LINES : undefined;
  const backends = families.map(
    (f) => new RealIptables(execer, f, commandsOfChoice(choice, f), 5, chunk),
  );
  return { choice, backends };
}
