// RuleWriter: accumulates iptables-restore rule lines (`-A CHAIN args\n`) as text, counting
// them. The plan writes rules straight to text because a big sync writes hundreds of
// thousands of rules and per-rule argument arrays would dominate its time and memory;
// the typed document is recovered by parsing when a caller wants it. Simple rules can be
// described typed (`rule(chain, {comment, proto, dst, dport, jump})`) and are rendered once
// by the rule model's renderer. Pure.

import { quoteArg } from '../../netfilter/iptables/render.js';
import { renderSimpleRule, type SimpleRuleSpec } from '../../netfilter/iptables/rule-build.js';

export class RuleWriter {
  private readonly parts: string[] = [];
  private n = 0;

  /** Appends `-A chain body`; `body` is already-quoted argument text. */
  add(chain: string, body: string): void {
    this.parts.push(body === '' ? `-A ${chain}\n` : `-A ${chain} ${body}\n`);
    this.n++;
  }

  /** Appends a rule given as arguments (quoted as iptables-save does). */
  addArgs(chain: string, args: readonly string[]): void {
    this.add(chain, args.map(quoteArg).join(' '));
  }

  /** Appends a typed simple rule (see netfilter/iptables/rule-build.ts for its word order). */
  rule(chain: string, spec: SimpleRuleSpec): void {
    this.add(chain, renderSimpleRule(spec));
  }

  get count(): number {
    return this.n;
  }

  get text(): string {
    // join copies two or more parts into one flat string, but returns a lone part as it is.
    return this.parts.length === 1 ? flat(this.parts[0] ?? '') : this.parts.join('');
  }
}

/**
 * `s` as one flat string. A template literal makes a V8 cons string (a tree of its pieces,
 * about three times the size of the text); texts kept from sync to sync are flattened, which
 * reading a character does in place (the garbage collector then drops the tree).
 */
export function flat(s: string): string {
  s.charCodeAt(0);
  return s;
}

/** `-m comment --comment X`, X quoted as iptables-save would (`quoteArg`). */
export function commentArgs(text: string): string {
  return `-m comment --comment ${quoteArg(text)}`;
}

/** `:NAME - [0:0]` line for a user-defined chain. */
export function chainLine(name: string): string {
  return `:${name} - [0:0]\n`;
}
