// The rules text `svcnet trace` reads for nftables: an `nft list ruleset` dump (what a node's
// kernel holds) or `nft -f` input (our `svcnet render --mode nftables`, kube-proxy's test
// dumps), turned into the typed Ruleset the walker follows. `nft -f` text is applied to the
// atomic Fake (netfilter/nftables/fake.ts), so a transaction the kernel would refuse is
// refused here too (INVALID_INPUT), naming the operation. Also the format detection behind
// `--rules-format auto`. Pure.

import { SvcnetError } from '../../errors.js';
import type { Ruleset } from '../../netfilter/nftables/model.js';
import { NftError, NftFake } from '../../netfilter/nftables/fake.js';
import { detectFormat, parseRuleset } from '../../netfilter/nftables/parse.js';

/** How `--rules` is read. */
export type RulesFormat = 'iptables' | 'nft';

/** `nft` for an `nft list ruleset` dump or `nft -f` text; `iptables` otherwise. */
export function detectRulesFormat(text: string): RulesFormat {
  const f = detectFormat(text);
  return f === 'nft-ruleset' || f === 'nft-transaction' ? 'nft' : 'iptables';
}

/**
 * Reads nftables rules text into a Ruleset. Throws INVALID_INPUT naming the line for text
 * that is neither form, and the Fake's error for a transaction it refuses.
 */
export function loadNftRules(text: string): Ruleset {
  const format = detectFormat(text);
  if (format === 'nft-ruleset') return parseRuleset(text);
  if (format !== 'nft-transaction')
    throw new SvcnetError(
      'INVALID_INPUT',
      'not nftables rules: expected `nft list ruleset` output (table … { … }) or `nft -f` input (add table …)',
    );
  const fake = new NftFake();
  try {
    // Definitions first when the text is only `add` lines (a dump), else in order.
    fake.load(text);
  } catch (e) {
    // What the kernel would refuse is bad input here.
    if (e instanceof NftError)
      throw new SvcnetError('INVALID_INPUT', `nft -f would refuse ${e.message}`, { cause: e });
    throw e;
  }
  return fake.ruleset();
}
