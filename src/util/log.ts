// Daemon logging as Kubernetes components do it: `--v=N` verbosity mapped onto pino levels,
// `--logging-format text|json` (text on a terminal, JSON otherwise, as kube-proxy's default
// of text is for people and JSON is for collectors), errors as one line (their message) unless
// the verbosity is 5 or more, when the stack is kept. The text format is our own small
// formatter rather than pino-pretty: it is one function, needs no worker thread or extra
// runtime dependency, and prints exactly the one-line shape the CLI contract promises.
// Not here: what to log (the components decide) and where metrics go.

import { writeSync } from 'node:fs';
import { pino } from 'pino';
import type { Logger } from 'pino';
import { SvcnetError } from '../errors.js';

export type LogFormat = 'text' | 'json';

/** pino levels a user may name with `--log-level`. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** From this verbosity on, errors keep their stack traces (logs and CLI messages). */
export const STACK_VERBOSITY = 5;

/** Parses `--v` (0-10); throws INVALID_INPUT naming the flag. */
export function parseVerbosity(text: string | undefined): number {
  if (text === undefined) return 0;
  const n = Number(text);
  if (text.trim() === '' || !Number.isInteger(n) || n < 0 || n > 10)
    throw new SvcnetError(
      'INVALID_INPUT',
      `--v: must be an integer 0-10, got ${JSON.stringify(text)}`,
    );
  return n;
}

/**
 * The pino level for a klog verbosity: 0-3 info (kube-proxy logs its start-up and sync
 * summaries at V(2)), 4 debug (per-object detail, as V(4)), 5 and more trace.
 */
export function levelForVerbosity(v: number): LogLevel {
  if (v >= 5) return 'trace';
  if (v >= 4) return 'debug';
  return 'info';
}

export interface LogFlags {
  /** `--v`, as typed. */
  readonly v?: string;
  /** `--log-level`, as typed; wins over `--v` for the level when given. */
  readonly logLevel?: string;
  /** `--logging-format`, as typed. */
  readonly loggingFormat?: string;
}

export interface LogSettings {
  readonly level: LogLevel;
  readonly verbosity: number;
  readonly format: LogFormat;
}

/** Resolves the logging flags; `isTTY` is whether stderr is a terminal. Throws INVALID_INPUT. */
export function resolveLogSettings(flags: LogFlags, isTTY: boolean): LogSettings {
  const verbosity = parseVerbosity(flags.v);
  let level = levelForVerbosity(verbosity);
  if (flags.logLevel !== undefined) {
    if (!(LOG_LEVELS as readonly string[]).includes(flags.logLevel))
      throw new SvcnetError(
        'INVALID_INPUT',
        `--log-level: must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(flags.logLevel)}`,
      );
    level = flags.logLevel as LogLevel;
  }
  const f = flags.loggingFormat;
  if (f !== undefined && f !== 'text' && f !== 'json')
    throw new SvcnetError(
      'INVALID_INPUT',
      `--logging-format: must be text or json, got ${JSON.stringify(f)}`,
    );
  return { level, verbosity, format: f ?? (isTTY ? 'text' : 'json') };
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** One line of text log for one pino JSON record. */
export function formatTextRecord(line: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  const { level, time, msg, component, name, ...rest } = rec;
  delete rest.pid;
  delete rest.hostname;
  const label = typeof level === 'string' ? level : (pino.levels.labels[Number(level)] ?? 'info');
  const t = typeof time === 'number' ? new Date(time).toISOString() : '';
  const who = component ?? name;
  const fields = Object.entries(rest).map(([k, v]) => {
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    return `${k}=${typeof v === 'string' && /[\s"=]/.test(v) ? JSON.stringify(v) : text}`;
  });
  const head = `${t} ${label.toUpperCase().padEnd(5)}${typeof who === 'string' ? ` [${who}]` : ''} ${typeof msg === 'string' ? msg : ''}`;
  return `${[head, ...fields].join(' ')}\n`;
}

/** A destination that writes each record synchronously to `fd` in the text format. */
export function textDestination(fd = 2): { write(line: string): void } {
  return {
    write(chunk: string): void {
      for (const line of chunk.split('\n')) if (line !== '') writeSync(fd, formatTextRecord(line));
    },
  };
}

/** A daemon's logger: stderr, the resolved level and format, one-line errors below `--v=5`. */
export function createLogger(component: string, settings: LogSettings, fd = 2): Logger {
  const keepStack = settings.verbosity >= STACK_VERBOSITY;
  const serializers = {
    err: keepStack ? pino.stdSerializers.err : (e: unknown) => errorMessage(e),
  };
  const opts = { level: settings.level, base: { component }, serializers };
  return settings.format === 'text'
    ? pino(opts, textDestination(fd))
    : pino(opts, pino.destination({ fd, sync: true }));
}
