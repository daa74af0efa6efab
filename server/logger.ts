// Application logger (pino).
//
// Output shape:
//   mode 'debug'   -> destination gets human-readable lines (pino-pretty, in-process, sync)
//   otherwise      -> destination gets `format`: 'json' (pino's own lines) or 'logfmt'
//   path non-empty -> additionally appended to <path>/console.log in `format` (never pretty)
// Outside debug mode, stdout and the file gather lines and write them 8 KB at a time, or every 200 ms, and before
// the process exits (log-batch.ts).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import pino from 'pino';
import { lineBatch } from './log-batch.ts';

// pino-pretty is loaded only in debug mode: release processes need not hold it in memory.
const load = createRequire(import.meta.url);

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'json' | 'logfmt';

export interface LoggerOptions {
  level: LogLevel;
  format: LogFormat;
  /** Folder for `console.log`; empty = no file. */
  path: string;
  mode: 'debug' | 'release';
  /** Defaults to process.stdout. */
  destination?: NodeJS.WritableStream;
}

/** Secrets are replaced by `***` before any sink sees the entry. */
export const REDACT_PATHS = [
  'password',
  '*.password',
  'token',
  '*.token',
  'secret',
  '*.secret',
  'client_secret',
  '*.client_secret',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'headers.cookie',
  'req.headers.authorization',
  'req.headers.cookie',
];

export const LOG_FILE_NAME = 'console.log';

export function createLogger(opts: LoggerOptions): pino.Logger {
  const batched = !opts.destination && opts.mode !== 'debug';
  const destination: { write(s: string): unknown } = opts.destination ?? (batched ? lineBatch(1) : process.stdout);
  const line = (s: string) => void destination.write(s);
  const streams: pino.StreamEntry[] = [
    {
      level: opts.level,
      stream:
        opts.mode === 'debug'
          ? prettySink(line, isTty(opts.destination ?? process.stdout))
          : formatSink(opts.format, line),
    },
  ];
  if (opts.path) {
    try {
      mkdirSync(opts.path, { recursive: true });
    } catch (err) {
      throw new Error(`log.path: cannot create ${opts.path} (${(err as NodeJS.ErrnoException).code ?? String(err)})`, {
        cause: err,
      });
    }
    const file = batched
      ? lineBatch(join(opts.path, LOG_FILE_NAME))
      : pino.destination({ dest: join(opts.path, LOG_FILE_NAME), sync: true, append: true, mkdir: true });
    streams.push({ level: opts.level, stream: formatSink(opts.format, (s) => void file.write(s)) });
  }
  const sinks = pino.multistream(streams);
  const logger = pino({ level: opts.level, redact: { paths: REDACT_PATHS, censor: '***' } }, sinks);
  (logger as Twinned)[kUnredacted] = pino({ level: opts.level }, sinks);
  return logger;
}

const kUnredacted = Symbol('unredacted');
type Twinned = pino.Logger & { [kUnredacted]?: pino.Logger };

/**
 * A logger on the same sinks without the redaction pass, for lines whose fields are fixed and hold no secret (the
 * access log): redaction walked every line's fields for the secret paths, about half of a line's cost
 * (docs/performance.md "Logging"). Children of `logger` find it too (a pino child inherits from its parent); a
 * logger `createLogger` did not make is answered as it is.
 */
export function unredacted(logger: pino.Logger): pino.Logger {
  return (logger as Twinned)[kUnredacted] ?? logger;
}

function isTty(stream: NodeJS.WritableStream): boolean {
  return (stream as { isTTY?: boolean }).isTTY === true;
}

function formatSink(format: LogFormat, write: (s: string) => void): pino.DestinationStream {
  return format === 'logfmt' ? { write: (s) => write(toLogfmt(s)) } : { write };
}

function prettySink(write: (s: string) => void, colorize: boolean): pino.DestinationStream {
  const pretty = load('pino-pretty') as typeof import('pino-pretty');
  const prettify = pretty.prettyFactory({
    colorize,
    translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l',
    ignore: 'pid,hostname',
  });
  return { write: (s) => write(prettify(s)) };
}

// ---- logfmt -----------------------------------------------------------------

/**
 * Converts one pino JSON line into one logfmt line:
 * `level=info time=2026-11-21T10:00:00.000Z msg="hello world" key=value nested.key=1`.
 * Nested objects are flattened with dots; error stacks are dropped to keep one line per entry.
 */
export function toLogfmt(jsonLine: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(jsonLine) as Record<string, unknown>;
  } catch {
    return jsonLine.endsWith('\n') ? jsonLine : jsonLine + '\n';
  }
  const { level, time, msg, pid: _pid, hostname: _hostname, ...rest } = entry;
  const pairs: string[] = [];
  pairs.push(`level=${typeof level === 'number' ? (pino.levels.labels[level] ?? level) : value(level)}`);
  if (time !== undefined) pairs.push(`time=${typeof time === 'number' ? new Date(time).toISOString() : value(time)}`);
  if (msg !== undefined) pairs.push(`msg=${value(msg)}`);
  flatten(rest, '', pairs);
  return pairs.join(' ') + '\n';
}

function flatten(obj: Record<string, unknown>, prefix: string, out: string[]): void {
  const errorLike = typeof obj.message === 'string' && typeof obj.stack === 'string';
  for (const [k, v] of Object.entries(obj)) {
    if (errorLike && k === 'stack') continue;
    const key = prefix + k.replace(/[\s="\\]/g, '_');
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0) {
      flatten(v as Record<string, unknown>, key + '.', out);
    } else {
      out.push(`${key}=${value(v)}`);
    }
  }
}

function value(v: unknown): string {
  const s = typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v);
  // Quote when the value would be ambiguous unquoted; escape so the entry stays on one line.
  if (s === '' || /[\s"=\\]|[\u0000-\u001f\u007f]/.test(s)) {
    return '"' + s.replace(/[\\"\u0000-\u001f\u007f]/g, escapeChar) + '"';
  }
  return s;
}

function escapeChar(c: string): string {
  switch (c) {
    case '\n':
      return '\\n';
    case '\r':
      return '\\r';
    case '\t':
      return '\\t';
    case '"':
    case '\\':
      return '\\' + c;
    default:
      return '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0');
  }
}
