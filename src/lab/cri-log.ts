// The kubelet's CRI container log format, and the choosing of lines a `pods/NAME/log`
// request asks for. Each line of a container log file is `<RFC3339Nano time> <stdout|stderr>
// <F|P> <content>`: F ends a line of the container's output, P is a piece of a longer line
// whose rest follows. Pure: no I/O; the files are read and written by container-log-files.ts.
// Not the Docker JSON log format, which the kubelet no longer writes.

/** A container's output stream. */
export type LogStream = 'stdout' | 'stderr';

/** One parsed line of a CRI log file. */
export interface CriLine {
  /** As written, RFC3339 with nanoseconds. */
  readonly time: string;
  /** Milliseconds since the epoch (for sinceSeconds/sinceTime). */
  readonly ms: number;
  readonly stream: LogStream;
  /** False for a P (partial) line: the output line goes on in the next one. */
  readonly full: boolean;
  readonly content: string;
}

/** Longest content one CRI line carries; longer output lines are split into P pieces. */
export const MAX_CRI_LINE_BYTES = 16 * 1024;

/** RFC3339 with nine fractional digits, from milliseconds (the lab's clock has no finer grain). */
export function criTime(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2026-11-27T16:12:55.123Z
  return `${iso.slice(0, -1)}000000Z`;
}

/** One CRI log line, newline included. */
export function formatCriLine(
  ms: number,
  stream: LogStream,
  full: boolean,
  content: string,
): string {
  return `${criTime(ms)} ${stream} ${full ? 'F' : 'P'} ${content}\n`;
}

/** Parses one CRI log line (without its newline); undefined when it is not one. */
export function parseCriLine(line: string): CriLine | undefined {
  const m = /^(\S+) (stdout|stderr) ([FP]) ?/.exec(line);
  if (m?.[1] === undefined) return undefined;
  const ms = Date.parse(m[1]);
  if (Number.isNaN(ms)) return undefined;
  return {
    time: m[1],
    ms,
    stream: m[2] as LogStream,
    full: m[3] === 'F',
    content: line.slice(m[0].length),
  };
}

/**
 * Splits a chunk of a stream's output into CRI lines, carrying an unfinished last line over
 * to the next chunk (`pending`); a line longer than MAX_CRI_LINE_BYTES goes out in P pieces.
 * Returns the formatted text and the new pending part.
 */
export function criLinesOf(
  ms: number,
  stream: LogStream,
  pending: string,
  chunk: string,
): { text: string; pending: string } {
  const parts = (pending + chunk).split('\n');
  let rest = parts.pop() ?? '';
  let text = '';
  for (const p of parts) text += pieces(ms, stream, p, true);
  while (Buffer.byteLength(rest) > MAX_CRI_LINE_BYTES) {
    const cut = rest.slice(0, MAX_CRI_LINE_BYTES);
    text += formatCriLine(ms, stream, false, cut);
    rest = rest.slice(cut.length);
  }
  return { text, pending: rest };
}

function pieces(ms: number, stream: LogStream, line: string, last: boolean): string {
  let text = '';
  let rest = line;
  while (Buffer.byteLength(rest) > MAX_CRI_LINE_BYTES) {
    const cut = rest.slice(0, MAX_CRI_LINE_BYTES);
    text += formatCriLine(ms, stream, false, cut);
    rest = rest.slice(cut.length);
  }
  return text + formatCriLine(ms, stream, last, rest);
}

/** What a log request asks for, parsed from the kubelet's query (PodLogOptions). */
export interface LogOptions {
  readonly follow: boolean;
  readonly previous: boolean;
  readonly timestamps: boolean;
  /** Only the last N lines; undefined for all. */
  readonly tailLines?: number;
  /** Only lines at or after this time, ms since the epoch. */
  readonly sinceMs?: number;
  /** Stop after this many bytes. */
  readonly limitBytes?: number;
}

function bool(q: URLSearchParams, key: string): boolean {
  const v = q.get(key);
  return v === 'true' || v === '1';
}

function count(q: URLSearchParams, key: string): number | undefined {
  const v = q.get(key);
  if (v === null || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw new Error(`${key}: must be an integer, got ${JSON.stringify(v)}`);
  return n;
}

/** PodLogOptions from a query; throws naming the bad parameter. `now` is for sinceSeconds. */
export function parseLogOptions(q: URLSearchParams, now: number): LogOptions {
  const tail = count(q, 'tailLines');
  const sinceSeconds = count(q, 'sinceSeconds');
  const limit = count(q, 'limitBytes');
  const sinceTime = q.get('sinceTime');
  let sinceMs: number | undefined;
  if (sinceSeconds !== undefined) {
    if (sinceSeconds < 1) throw new Error('sinceSeconds: must be greater than 0');
    sinceMs = now - sinceSeconds * 1000;
  } else if (sinceTime !== null && sinceTime !== '') {
    sinceMs = Date.parse(sinceTime);
    if (Number.isNaN(sinceMs))
      throw new Error(`sinceTime: must be an RFC3339 time, got ${JSON.stringify(sinceTime)}`);
  }
  if (limit !== undefined && limit < 1) throw new Error('limitBytes: must be greater than 0');
  return {
    follow: bool(q, 'follow'),
    previous: bool(q, 'previous'),
    timestamps: bool(q, 'timestamps'),
    ...(tail !== undefined && tail >= 0 ? { tailLines: tail } : {}),
    ...(sinceMs !== undefined ? { sinceMs } : {}),
    ...(limit !== undefined ? { limitBytes: limit } : {}),
  };
}

/** What a client sees of one CRI line: its content (newline after an F line), stamped or not. */
export function renderCriLine(line: CriLine, timestamps: boolean): string {
  return `${timestamps ? `${line.time} ` : ''}${line.content}${line.full ? '\n' : ''}`;
}

/** Parses whole CRI text (several files' worth, oldest first); lines that do not parse are skipped. */
export function parseCriText(text: string): CriLine[] {
  const out: CriLine[] = [];
  for (const l of text.split('\n')) {
    if (l === '') continue;
    const c = parseCriLine(l);
    if (c !== undefined) out.push(c);
  }
  return out;
}

/**
 * The lines a request shows of a log, oldest first: those since `sinceMs`, then the last
 * `tailLines` of them (a P piece counts with the F line that ends it, as one output line).
 */
export function selectCriLines(lines: readonly CriLine[], opts: LogOptions): CriLine[] {
  const since = opts.sinceMs;
  let chosen = since === undefined ? [...lines] : lines.filter((l) => l.ms >= since);
  if (opts.tailLines !== undefined) {
    let seen = 0;
    let start = chosen.length;
    for (let i = chosen.length - 1; i >= 0; i--) {
      if (chosen[i]?.full === true) {
        if (seen === opts.tailLines) break;
        seen++;
      }
      start = i;
    }
    if (opts.tailLines === 0) start = chosen.length;
    chosen = chosen.slice(start);
  }
  return chosen;
}

/** Counts bytes out against limitBytes: how much of `text` may still go, and whether that ends it. */
export class ByteBudget {
  private left: number;

  constructor(limit: number | undefined) {
    this.left = limit ?? Number.POSITIVE_INFINITY;
  }

  /** The part of `text` that fits; the budget shrinks by its size. */
  take(text: string): string {
    if (this.left === Number.POSITIVE_INFINITY) return text;
    const buf = Buffer.from(text);
    const n = Math.min(buf.length, this.left);
    this.left -= n;
    return buf.subarray(0, n).toString();
  }

  get spent(): boolean {
    return this.left <= 0;
  }
}
