// The vocabulary of one iptables rule: a closed, typed union of the parts a rule's argument
// vector (what follows `-A CHAIN`) is made of — the built-in matches (`-p`, `-s`, `-d`, `-i`,
// `-o`, `-f`), the match extensions kube-proxy and common tools use (`-m comment`, tcp, udp,
// sctp, multiport, addrtype, statistic, recent, mark, conntrack, state, nfacct, set, physdev,
// limit, ipvs), the targets (ACCEPT, DROP, RETURN, REJECT, DNAT, SNAT, MASQUERADE, MARK, LOG, or a
// jump/goto to a chain) and anything else as an explicit `unsupported` part that keeps its raw
// words. `parseRule` and `renderRule` round-trip the arguments exactly (same words, same
// order, including kube-proxy's `-m tcp -p tcp -d IP --dport N` where an option of a module
// follows other matches); each kind validates itself (`validateRule`), and rule-views.ts
// gives each extension's and target's options a typed view. It only reads and
// writes rules: evaluating them against a packet is trace/'s job. Pure.

/** How a match or target extension was introduced in the words. */
export type PartHeader =
  /** `-m NAME` (or `-j NAME`) written here: a new instance. */
  | 'explicit'
  /** No header: options of the protocol's implicit module (`-p tcp --dport 80`). */
  | 'implicit'
  /** No header: more options of an earlier instance (`-m tcp -p tcp -d X --dport 80`). */
  | 'continued';

/** One option of a match or target extension, as written. */
export interface RuleOption {
  /** The option word, e.g. `--dport`. */
  readonly name: string;
  /** Its values; a comment written unquoted over several words keeps one value per word. */
  readonly values: readonly string[];
  /** `! --dport 80`. */
  readonly negate: boolean;
  /** Whether the extension's vocabulary knows this option (unknown ones keep their words). */
  readonly known: boolean;
}

/** Match extensions with a vocabulary here. */
export type MatchModule =
  | 'comment'
  | 'tcp'
  | 'udp'
  | 'sctp'
  | 'multiport'
  | 'addrtype'
  | 'statistic'
  | 'recent'
  | 'mark'
  | 'conntrack'
  | 'state'
  | 'nfacct'
  | 'set'
  | 'physdev'
  | 'limit'
  | 'ipvs';

/** Targets with a vocabulary here; any other name is a jump to a chain. */
export type TargetName =
  'ACCEPT' | 'DROP' | 'RETURN' | 'REJECT' | 'DNAT' | 'SNAT' | 'MASQUERADE' | 'MARK' | 'LOG';

interface Negatable {
  /** `! -s X`. */
  readonly negate: boolean;
  /** The old syntax `-s ! X` (negates again when both are written). */
  readonly negateAfter?: boolean;
}

export type InterfaceFlag = '-i' | '--in-interface' | '-o' | '--out-interface';

/** `-p tcp`; the value is undefined when the words end after the flag. */
export interface ProtocolMatch extends Negatable {
  readonly kind: 'protocol';
  readonly flag: '-p' | '--protocol';
  readonly value: string | undefined;
}

/** `-s ADDR[/MASK][,...]` or `-d ...`. */
export interface AddressMatch extends Negatable {
  readonly kind: 'source' | 'destination';
  readonly flag: '-s' | '--source' | '-d' | '--destination';
  readonly value: string | undefined;
}

/** `-i NAME` / `-o NAME` (a trailing `+` is a prefix). */
export interface InterfaceMatch extends Negatable {
  readonly kind: 'in-interface' | 'out-interface';
  readonly flag: InterfaceFlag;
  readonly value: string | undefined;
}

/** `-f`: non-first fragments. */
export interface FragmentMatch {
  readonly kind: 'fragment';
  readonly flag: '-f' | '--fragment';
  readonly negate: boolean;
}

/** `-m NAME options...` of a known extension. */
export interface ModuleMatch {
  readonly kind: 'match';
  readonly module: MatchModule;
  readonly header: PartHeader;
  /** `-m` or `--match` (explicit headers only). */
  readonly flag: '-m' | '--match';
  /** A `!` written before `-m` (iptables ignores it). */
  readonly negate: boolean;
  readonly options: readonly RuleOption[];
}

/** `-j NAME options...` / `-g CHAIN`. `name` is a TargetName or a chain. */
export interface TargetPart {
  readonly kind: 'target';
  readonly name: string;
  readonly header: 'explicit' | 'continued';
  readonly flag: '-j' | '--jump' | '-g' | '--goto';
  readonly negate: boolean;
  readonly options: readonly RuleOption[];
}

/** `-c PACKETS BYTES`. */
export interface CountersPart {
  readonly kind: 'counters';
  readonly flag: '-c' | '--set-counters';
  readonly values: readonly string[];
  readonly negate: boolean;
}

/**
 * Anything the vocabulary does not know: an unknown match extension (`module` set, with its
 * options), or stray words (`words`: an unexpected argument, an option nobody owns).
 */
export type UnsupportedPart =
  | {
      readonly kind: 'unsupported';
      readonly what: 'match';
      readonly module: string;
      readonly header: PartHeader;
      readonly flag: '-m' | '--match';
      readonly negate: boolean;
      readonly options: readonly RuleOption[];
    }
  | {
      readonly kind: 'unsupported';
      /** `argument`: a stray value; `option`: an option nobody owns; `dangling`: a `!`, `-m`
       * or `-j` with nothing after it. */
      readonly what: 'argument' | 'option' | 'dangling';
      readonly words: readonly string[];
      readonly negate: boolean;
    };

export type RulePart =
  | ProtocolMatch
  | AddressMatch
  | InterfaceMatch
  | FragmentMatch
  | ModuleMatch
  | TargetPart
  | CountersPart
  | UnsupportedPart;

/** A rule's arguments, typed; `parts` are in written order. */
export interface TypedRule {
  readonly parts: readonly RulePart[];
}

/** Arity of an option: value count, or `words` (a comment, possibly unquoted). */
export type Arity = 0 | 1 | 2 | 'words';

const PORT_OPTIONS = {
  '--dport': 1,
  '--destination-port': 1,
  '--sport': 1,
  '--source-port': 1,
} as const;

/** The options of each match extension, with their value counts. */
const MATCH_OPTIONS: Readonly<Record<MatchModule, Readonly<Record<string, Arity>>>> = {
  comment: { '--comment': 'words' },
  tcp: { ...PORT_OPTIONS, '--tcp-flags': 2, '--syn': 0 },
  udp: PORT_OPTIONS,
  sctp: PORT_OPTIONS,
  multiport: {
    '--dports': 1,
    '--destination-ports': 1,
    '--sports': 1,
    '--source-ports': 1,
    '--ports': 1,
  },
  addrtype: { '--src-type': 1, '--dst-type': 1, '--limit-iface-in': 0, '--limit-iface-out': 0 },
  statistic: { '--mode': 1, '--probability': 1, '--every': 1, '--packet': 1 },
  recent: {
    '--name': 1,
    '--set': 0,
    '--rcheck': 0,
    '--update': 0,
    '--remove': 0,
    '--seconds': 1,
    '--reap': 0,
    '--rsource': 0,
    '--rdest': 0,
    '--mask': 1,
    '--hitcount': 1,
    '--rttl': 0,
  },
  mark: { '--mark': 1 },
  conntrack: { '--ctstate': 1 },
  state: { '--state': 1 },
  nfacct: { '--nfacct-name': 1 },
  set: { '--match-set': 2, '--return-nomatch': 0 },
  physdev: {
    '--physdev-in': 1,
    '--physdev-out': 1,
    '--physdev-is-in': 0,
    '--physdev-is-out': 0,
    '--physdev-is-bridged': 0,
  },
  limit: { '--limit': 1, '--limit-burst': 1 },
  // xt_ipvs (iptables-extensions(8) "ipvs"): kube-proxy's IPVS mode writes
  // `-m ipvs --vaddr A --vproto P --vport N`.
  ipvs: {
    '--ipvs': 0,
    '--vproto': 1,
    '--vaddr': 1,
    '--vport': 1,
    '--vdir': 1,
    '--vmethod': 1,
    '--vportctl': 1,
  },
};

/** The options of each target, with their value counts. */
const TARGET_OPTIONS: Readonly<Record<TargetName, Readonly<Record<string, Arity>>>> = {
  DNAT: { '--to-destination': 1, '--random': 0, '--persistent': 0 },
  SNAT: { '--to-source': 1, '--random': 0, '--random-fully': 0, '--persistent': 0 },
  MASQUERADE: { '--to-ports': 1, '--random': 0, '--random-fully': 0 },
  REJECT: { '--reject-with': 1 },
  MARK: { '--set-mark': 1, '--set-xmark': 1, '--or-mark': 1, '--and-mark': 1, '--xor-mark': 1 },
  LOG: {
    '--log-prefix': 1,
    '--log-level': 1,
    '--log-tcp-sequence': 0,
    '--log-tcp-options': 0,
    '--log-ip-options': 0,
    '--log-uid': 0,
  },
  ACCEPT: {},
  DROP: {},
  RETURN: {},
};

// Sets, not `in`/hasOwn on the tables: rules name thousands of distinct chains, and a miss
// on an object's keys with ever-new strings is the slow path of V8's lookup caches.
const MATCH_MODULES: ReadonlySet<string> = new Set(Object.keys(MATCH_OPTIONS));
const TARGET_NAMES: ReadonlySet<string> = new Set(Object.keys(TARGET_OPTIONS));

export function isMatchModule(name: string): name is MatchModule {
  return MATCH_MODULES.has(name);
}

export function isTargetName(name: string): name is TargetName {
  return TARGET_NAMES.has(name);
}

/** An option word (`-x`, `--xyz`), as opposed to a value (negative numbers are values). */
function isOptionWord(t: string): boolean {
  return t.startsWith('-') && !/^-\d/.test(t);
}

const GENERIC_KIND: Readonly<Record<string, 'protocol' | 'source' | 'destination'>> = {
  '-p': 'protocol',
  '--protocol': 'protocol',
  '-s': 'source',
  '--source': 'source',
  '-d': 'destination',
  '--destination': 'destination',
};

const INTERFACE_KIND: Readonly<Record<string, 'in-interface' | 'out-interface'>> = {
  '-i': 'in-interface',
  '--in-interface': 'in-interface',
  '-o': 'out-interface',
  '--out-interface': 'out-interface',
};

/** The owner of option words while parsing: a match instance or the target. */
interface Owner {
  readonly kind: 'match' | 'unsupported' | 'target';
  readonly name: string;
  /** The header's flag (`-m` for matches; `-j`/`-g`... for the target). */
  readonly flag: '-m' | TargetPart['flag'];
  /** Index in `parts` of the part holding this owner's latest options (-1: none yet). */
  last: number;
  /** That part's options, appended to while the owner's options stay contiguous. */
  options: RuleOption[];
  /** Arity table, when the owner's vocabulary is known. */
  readonly vocabulary: Readonly<Record<string, Arity>> | undefined;
}

const PROTOCOL_NUMBERS: Readonly<Record<string, string>> = {
  '6': 'tcp',
  '17': 'udp',
  '132': 'sctp',
  '1': 'icmp',
  '58': 'ipv6-icmp',
};

/** `-p` value as a protocol name: numbers named, lower case. */
export function protocolName(value: string): string {
  return PROTOCOL_NUMBERS[value] ?? value.toLowerCase();
}

function isTargetFlag(t: string): t is '-j' | '--jump' | '-g' | '--goto' {
  return t === '-j' || t === '--jump' || t === '-g' || t === '--goto';
}

/** Mutable state of one parse. */
class RuleParser {
  readonly parts: RulePart[] = [];
  private readonly instances: Owner[] = [];
  private current: Owner | undefined;
  private target: Owner | undefined;
  private protocol: string | undefined;
  /** The arity ownerOf found for the option being read. */
  private arity: Arity | undefined;
  private i = 0;
  private readonly args: readonly string[];

  constructor(args: readonly string[]) {
    this.args = args;
  }

  parse(): TypedRule {
    const args = this.args;
    let negate = false;
    while (this.i < args.length) {
      const tok = args[this.i++] ?? '';
      if (tok === '!') {
        negate = true;
        continue;
      }
      const neg = negate;
      negate = false;
      this.word(tok, neg);
    }
    if (negate) this.parts.push({ kind: 'unsupported', what: 'dangling', words: [], negate });
    return { parts: this.parts };
  }

  private take(): string | undefined {
    return this.args[this.i++];
  }

  private word(tok: string, neg: boolean): void {
    if ((tok === '-m' || tok === '--match' || isTargetFlag(tok)) && this.i >= this.args.length) {
      this.parts.push({ kind: 'unsupported', what: 'dangling', words: [tok], negate: neg });
      if (isTargetFlag(tok)) this.current = undefined;
      return;
    }
    if (tok === '-m' || tok === '--match') {
      this.header(tok, neg);
      return;
    }
    if (isTargetFlag(tok)) {
      const name = this.take() ?? '';
      const options: RuleOption[] = [];
      this.parts.push({
        kind: 'target',
        name,
        header: 'explicit',
        flag: tok,
        negate: neg,
        options,
      });
      this.current = undefined;
      this.target = {
        kind: 'target',
        name,
        flag: tok,
        last: this.parts.length - 1,
        options,
        vocabulary: isTargetName(name) ? TARGET_OPTIONS[name] : undefined,
      };
      return;
    }
    if (tok === '-c' || tok === '--set-counters') {
      const values = this.args.slice(this.i, this.i + 2);
      this.i += values.length;
      this.parts.push({ kind: 'counters', flag: tok, values, negate: neg });
      return;
    }
    if (tok === '-f' || tok === '--fragment') {
      this.parts.push({ kind: 'fragment', flag: tok, negate: neg });
      return;
    }
    const generic = GENERIC_KIND[tok] ?? INTERFACE_KIND[tok];
    if (generic !== undefined) {
      this.generic(generic, tok, neg);
      return;
    }
    if (!isOptionWord(tok)) {
      this.parts.push({ kind: 'unsupported', what: 'argument', words: [tok], negate: neg });
      return;
    }
    this.option(tok, neg);
  }

  private header(flag: '-m' | '--match', neg: boolean): void {
    const name = this.take() ?? '';
    const options: RuleOption[] = [];
    const known = isMatchModule(name);
    const owner: Owner = {
      kind: known ? 'match' : 'unsupported',
      name,
      flag: '-m',
      last: this.parts.length,
      options,
      vocabulary: known ? MATCH_OPTIONS[name] : undefined,
    };
    this.parts.push(
      known
        ? { kind: 'match', module: name, header: 'explicit', flag, negate: neg, options }
        : {
            kind: 'unsupported',
            what: 'match',
            module: name,
            header: 'explicit',
            flag,
            negate: neg,
            options,
          },
    );
    this.instances.push(owner);
    this.current = owner;
  }

  private generic(
    kind: 'protocol' | 'source' | 'destination' | 'in-interface' | 'out-interface',
    flag: string,
    neg: boolean,
  ): void {
    let value = this.take();
    let negateAfter = false;
    if (value === '!') {
      negateAfter = true;
      value = this.take();
    }
    const part = {
      kind,
      flag,
      negate: neg,
      ...(negateAfter ? { negateAfter } : {}),
      value,
    } as ProtocolMatch | AddressMatch | InterfaceMatch;
    this.parts.push(part);
    if (kind === 'protocol' && value !== undefined) this.protocol = protocolName(value);
  }

  /** Finds who owns option `tok` (see iptables' option dispatch) and its arity. */
  /** Finds who owns option `tok` (see iptables' option dispatch); sets `arity`. */
  private ownerOf(tok: string): Owner | undefined {
    if (this.current === undefined && this.target !== undefined) {
      this.arity = this.target.vocabulary?.[tok];
      return this.target;
    }
    const cur = this.current;
    this.arity = cur?.vocabulary?.[tok];
    const pname = this.protocol;
    if (this.arity !== undefined || pname === undefined || !isMatchModule(pname)) return cur;
    const implicitArity = MATCH_OPTIONS[pname][tok];
    if (implicitArity === undefined) return cur;
    this.arity = implicitArity;
    let implicit = this.instances.find((m) => m.name === pname);
    if (!implicit) {
      implicit = {
        kind: 'match',
        name: pname,
        flag: '-m',
        last: -1,
        options: [],
        vocabulary: MATCH_OPTIONS[pname],
      };
      this.instances.push(implicit);
    }
    return implicit;
  }

  /** Takes words up to the next option word or `!`. */
  private takeRest(values: string[]): void {
    const args = this.args;
    while (this.i < args.length && !isOptionWord(args[this.i] ?? '') && args[this.i] !== '!')
      values.push(this.take() ?? '');
  }

  private values(arity: Arity | undefined): string[] {
    const values: string[] = [];
    if (arity === undefined) this.takeRest(values);
    else if (arity === 'words') {
      const v = this.take();
      if (v !== undefined) values.push(v);
      this.takeRest(values);
    } else
      for (let k = 0; k < arity && this.i < this.args.length; k++) values.push(this.take() ?? '');
    return values;
  }

  private option(tok: string, neg: boolean): void {
    const owner = this.ownerOf(tok);
    const arity = this.arity;
    const opt: RuleOption = {
      name: tok,
      values: this.values(arity),
      negate: neg,
      known: arity !== undefined,
    };
    if (!owner) {
      this.parts.push({
        kind: 'unsupported',
        what: 'option',
        words: [tok, ...opt.values],
        negate: neg,
      });
      return;
    }
    if (owner.last >= 0 && owner.last === this.parts.length - 1) {
      owner.options.push(opt);
      return;
    }
    const header = owner.last < 0 ? 'implicit' : 'continued';
    owner.last = this.parts.length;
    owner.options = [opt];
    const options = owner.options;
    const name = owner.name;
    if (owner.kind === 'target')
      this.parts.push({
        kind: 'target',
        name,
        header: 'continued',
        flag: owner.flag === '-m' ? '-j' : owner.flag,
        negate: false,
        options,
      });
    else if (owner.kind === 'match' && isMatchModule(name))
      this.parts.push({ kind: 'match', module: name, header, flag: '-m', negate: false, options });
    else
      this.parts.push({
        kind: 'unsupported',
        what: 'match',
        module: name,
        header,
        flag: '-m',
        negate: false,
        options,
      });
  }
}

/**
 * Parses a rule's arguments (what follows `-A CHAIN`). Never throws: words the vocabulary
 * does not know become `unsupported` parts, so `renderRule(parseRule(a))` equals `a`.
 */
export function parseRule(args: readonly string[]): TypedRule {
  return new RuleParser(args).parse();
}

function renderOption(o: RuleOption, out: string[]): void {
  if (o.negate) out.push('!');
  out.push(o.name, ...o.values);
}

/** An extension (match or target): its header when written here, then its options. */
function renderExtension(
  p: { readonly header: PartHeader; readonly negate: boolean; readonly flag: string },
  name: string,
  options: readonly RuleOption[],
  out: string[],
): void {
  if (p.header === 'explicit') {
    if (p.negate) out.push('!');
    out.push(p.flag, name);
  }
  for (const o of options) renderOption(o, out);
}

function renderPart(p: RulePart, out: string[]): void {
  switch (p.kind) {
    case 'protocol':
    case 'source':
    case 'destination':
    case 'in-interface':
    case 'out-interface':
      if (p.negate) out.push('!');
      out.push(p.flag);
      if (p.negateAfter === true) out.push('!');
      if (p.value !== undefined) out.push(p.value);
      return;
    case 'fragment':
    case 'counters':
      if (p.negate) out.push('!');
      out.push(p.flag, ...(p.kind === 'counters' ? p.values : []));
      return;
    case 'target':
      renderExtension(p, p.name, p.options, out);
      return;
    case 'match':
      renderExtension(p, p.module, p.options, out);
      return;
    case 'unsupported':
      if (p.what === 'match') renderExtension(p, p.module, p.options, out);
      else {
        if (p.negate) out.push('!');
        out.push(...p.words);
      }
  }
}

/** The argument vector of a typed rule (inverse of parseRule). */
export function renderRuleArgs(rule: TypedRule): string[] {
  const out: string[] = [];
  for (const p of rule.parts) renderPart(p, out);
  return out;
}

const typedCache = new WeakMap<readonly string[], TypedRule>();

/**
 * The typed form of a rule's arguments (a document Rule's `args`), parsed on first use and
 * remembered for the array's lifetime: parsing a dump stays as cheap as before, and each
 * reader of the same rule shares one parse. The arrays must not be mutated.
 */
export function typedRuleOf(args: readonly string[]): TypedRule {
  let t = typedCache.get(args);
  if (!t) {
    t = parseRule(args);
    typedCache.set(args, t);
  }
  return t;
}

/** The rule's target part (the last `-j`/`-g`), if any. */
export function targetPartOf(rule: TypedRule): TargetPart | undefined {
  let t: TargetPart | undefined;
  for (const p of rule.parts) if (p.kind === 'target' && p.header === 'explicit') t = p;
  return t;
}

/** Whether a target part is a goto (`-g`/`--goto`) rather than a jump. */
export function isGoto(t: TargetPart): boolean {
  return t.flag === '-g' || t.flag === '--goto';
}

/** Whether an unsupported part is a dangling `-m`/`--match` (a match instance with no name). */
export function isDanglingMatch(p: UnsupportedPart): boolean {
  return p.what === 'dangling' && (p.words[0] === '-m' || p.words[0] === '--match');
}

/** Whether a target part is a jump/goto to a chain rather than a built-in target. */
function isChainTarget(t: TargetPart): boolean {
  return isGoto(t) || !isTargetName(t.name);
}

/**
 * The chain a rule jumps or goes to (`-j CHAIN` / `-g CHAIN`), or the target name for
 * built-in targets; undefined when the rule has no target. Looks at the first `-j` and,
 * without one, the first `-g`, as iptables' own lookups do.
 */
export function targetOf(args: readonly string[]): string | undefined {
  const parts = typedRuleOf(args).parts;
  const first = (flags: readonly string[]): string | undefined =>
    parts.find(
      (p): p is TargetPart =>
        p.kind === 'target' && p.header === 'explicit' && flags.includes(p.flag),
    )?.name;
  return first(['-j', '--jump']) ?? first(['-g', '--goto']);
}

/** The first `-j` target name (not `-g`), if any. */
export function jumpTargetOf(args: readonly string[]): string | undefined {
  return typedRuleOf(args).parts.find(
    (p): p is TargetPart =>
      p.kind === 'target' && p.header === 'explicit' && (p.flag === '-j' || p.flag === '--jump'),
  )?.name;
}

/**
 * The text of the rule's first `--comment` as its first word-value (what iptables-save
 * quotes as one argument), or undefined without a comment.
 */
export function commentOf(args: readonly string[]): string | undefined {
  for (const p of typedRuleOf(args).parts)
    if (p.kind === 'match' && p.module === 'comment')
      for (const o of p.options) if (o.name === '--comment') return o.values[0];
  return undefined;
}

/** Per-kind checks of a target's options (what iptables' target extensions refuse). */
const TARGET_CHECKS: Partial<
  Record<TargetName, (opts: readonly RuleOption[]) => string | undefined>
> = {
  DNAT: (o) =>
    o.some((x) => x.name === '--to-destination') ? undefined : 'DNAT: missing --to-destination',
  SNAT: (o) => (o.some((x) => x.name === '--to-source') ? undefined : 'SNAT: missing --to-source'),
  MARK: (o) =>
    o.some((x) => x.known)
      ? undefined
      : 'MARK: one of --set-mark, --set-xmark, --or-mark, --and-mark, --xor-mark is required',
};

/**
 * Validates a typed rule the way iptables-restore would refuse it: an option missing its
 * value, a target missing a required option. Unknown extensions are not judged (the kernel
 * may know them). Returns every problem (empty when valid).
 */
export function validateRule(rule: TypedRule): string[] {
  const problems: string[] = [];
  const targetOptions: RuleOption[] = [];
  for (const p of rule.parts) {
    if (
      (p.kind === 'protocol' ||
        p.kind === 'source' ||
        p.kind === 'destination' ||
        p.kind === 'in-interface' ||
        p.kind === 'out-interface') &&
      p.value === undefined
    )
      problems.push(`${p.flag} needs a value`);
    if (p.kind === 'match') {
      const vocab = MATCH_OPTIONS[p.module];
      for (const o of p.options) {
        const arity = vocab[o.name];
        if (typeof arity === 'number' && o.values.length < arity)
          problems.push(`${p.module} ${o.name}: needs ${arity} value(s)`);
      }
    }
    if (p.kind === 'target') targetOptions.push(...p.options);
  }
  const t = targetPartOf(rule);
  if (t && !isChainTarget(t) && isTargetName(t.name)) {
    const check = TARGET_CHECKS[t.name];
    const problem = check?.(targetOptions);
    if (problem !== undefined) problems.push(problem);
    for (const o of targetOptions) {
      const arity = TARGET_OPTIONS[t.name][o.name];
      if (typeof arity === 'number' && o.values.length < arity)
        problems.push(`${t.name} ${o.name}: needs ${arity} value(s)`);
    }
  }
  return problems;
}
