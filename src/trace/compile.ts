// Turns one rule of the iptables document model into something the walker can evaluate: a
// list of matches and one target. The rule is read once by the typed vocabulary
// (netfilter/iptables/rule.ts); each of its parts is then compiled by the per-kind
// evaluators of eval-match.ts and eval-target.ts. Anything those do not understand is kept
// as an "unsupported" reason, named, so the walker can report it and assume the rule does not
// match. Compiling never throws: a rule the kernel would refuse is reported the same way.
// Pure.

import { commentWordsOf } from '../netfilter/iptables/rule-views.js';
import {
  isDanglingMatch,
  isGoto,
  isTargetName,
  protocolName,
  typedRuleOf,
  type RuleOption,
  type RulePart,
  type TargetPart,
} from '../netfilter/iptables/rule.js';
import {
  addressMatch,
  fragmentMatch,
  interfaceMatch,
  isTracedModule,
  moduleCompiler,
  protocolMatch,
  type Bad,
  type Match,
  type MatchEnv,
  type MatchResult,
} from './eval-match.js';
import { compileTarget, type Target } from './eval-target.js';

export interface CompiledRule {
  readonly matches: readonly Match[];
  readonly target: Target;
  /** The `-m comment --comment` text, if any. */
  readonly comment: string | undefined;
  /** Why this rule cannot be evaluated faithfully; non-empty means "assumed not to match". */
  readonly unsupported: readonly string[];
  /** Non-fatal remarks (e.g. an unquoted multi-word comment). */
  readonly notes: readonly string[];
}

/** A match extension instance: its header part's module and every option given to it. */
interface Instance {
  readonly module: string;
  readonly options: RuleOption[];
}

/** What the first pass over a rule's parts collects. */
class RuleReading {
  readonly unsupported: string[] = [];
  readonly notes: string[] = [];
  readonly matches: Match[] = [];
  readonly instances: Instance[] = [];
  readonly targetOptions: RuleOption[] = [];
  target: TargetPart | undefined;
  comment: string | undefined;
  protocol: string | undefined;
  protocolNegated = false;
  readonly bad: Bad = (reason) => {
    this.unsupported.push(reason);
  };

  /** Built-in matches (`-p`, `-s`, `-d`, `-i`, `-o`, `-f`), in written order. */
  builtin(p: RulePart): void {
    if (p.kind === 'fragment') {
      this.matches.push(fragmentMatch(p.negate));
      return;
    }
    if (
      p.kind !== 'protocol' &&
      p.kind !== 'source' &&
      p.kind !== 'destination' &&
      p.kind !== 'in-interface' &&
      p.kind !== 'out-interface'
    )
      return;
    const neg = p.negate !== (p.negateAfter === true);
    if (p.value === undefined) {
      this.bad(`${p.flag} needs a value`);
      return;
    }
    let m: Match | undefined;
    if (p.kind === 'protocol') {
      this.protocol = protocolName(p.value);
      this.protocolNegated = neg;
      m = protocolMatch(this.protocol, neg);
    } else if (p.kind === 'source' || p.kind === 'destination')
      m = addressMatch(p.kind === 'source', p.flag, p.value, neg, this.bad);
    else m = interfaceMatch(p.kind === 'in-interface', p.value, neg);
    if (m) this.matches.push(m);
  }

  /** Options of a match extension: reports unknown ones of traced extensions, reads comments. */
  extension(module: string, header: string, options: readonly RuleOption[]): void {
    let inst =
      header === 'continued' ? this.instances.findLast((x) => x.module === module) : undefined;
    if (!inst) {
      inst = { module, options: [] };
      this.instances.push(inst);
    }
    for (const o of options) {
      if (!o.known && isTracedModule(module))
        this.bad(`match ${module}: option ${o.name} is not supported`);
      inst.options.push(o);
      const words = module === 'comment' ? commentWordsOf(o) : undefined;
      if (words) this.readComment(words);
    }
  }

  private readComment(values: readonly string[]): void {
    // iptables-save quotes multi-word comments; hand-written dumps sometimes do not.
    this.comment = values.length > 1 ? values.join(' ') : values[0];
    if (values.length > 1)
      this.notes.push(`unquoted comment with spaces read as ${JSON.stringify(this.comment)}`);
  }

  /** A target part (`-j`/`-g`, or its options continued after other matches). */
  targetPart(p: TargetPart): void {
    if (p.header === 'explicit') this.target = p;
    for (const o of p.options) {
      if (o.known) this.targetOptions.push(o);
      else if (isTargetName(p.name))
        this.bad(`target ${p.name}: option ${o.name} is not supported`);
    }
  }

  read(p: RulePart): void {
    switch (p.kind) {
      case 'match':
        this.extension(p.module, p.header, p.options);
        return;
      case 'target':
        this.targetPart(p);
        return;
      case 'counters':
        return;
      case 'unsupported':
        if (p.what === 'match') this.extension(p.module, p.header, p.options);
        else if (p.what === 'argument')
          this.bad(`unexpected argument ${JSON.stringify(p.words[0] ?? '')}`);
        else if (p.what === 'option') this.bad(`rule: option ${p.words[0] ?? ''} is not supported`);
        else if (isDanglingMatch(p)) this.instances.push({ module: '', options: [] });
        else if (p.words.length > 0) this.target = undefined;
        return;
      default:
        this.builtin(p);
    }
  }
}

/** How to compile: `withIpsets` evaluates `-m set` (traces with an ipset state). */
export interface CompileOptions {
  readonly withIpsets?: boolean;
}

/** Compiles one rule's arguments (what follows `-A CHAIN`). Never throws. */
export function compileRule(args: readonly string[], options: CompileOptions = {}): CompiledRule {
  const r = new RuleReading();
  for (const p of typedRuleOf(args).parts) r.read(p);
  // `! -p tcp -m tcp` makes no sense: protocol modules then see no protocol.
  const protocol = r.protocolNegated ? undefined : r.protocol;
  for (const inst of r.instances) {
    const compile = moduleCompiler(inst.module, options.withIpsets === true);
    if (!compile) r.bad(`match -m ${inst.module} is not supported`);
    else r.matches.push(...compile(inst.options, { module: inst.module, protocol, bad: r.bad }));
  }
  const t = r.target;
  const target: Target =
    t === undefined ? { kind: 'none' } : compileTarget(t.name, r.targetOptions, isGoto(t), r.bad);
  return {
    matches: r.matches,
    target,
    comment: r.comment,
    unsupported: r.unsupported,
    notes: r.notes,
  };
}

/** Combines match results: false wins; probabilities multiply. */
export function evaluateMatches(rule: CompiledRule, env: MatchEnv): MatchResult {
  let p = 1;
  let random = false;
  for (const m of rule.matches) {
    if (m.stateful && env.neverMatchStateful) return false;
    const r = m.evaluate(env);
    if (r === false) return false;
    if (r === true) continue;
    random = true;
    p *= r.probability;
  }
  return random ? { probability: p } : true;
}
