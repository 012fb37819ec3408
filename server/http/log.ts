/**
 * Structured logs: one JSON object per line on stdout (or a sink tests supply). A child logger carries
 * fields such as the request id into every line it writes, so a report id finds every line of a request.
 */
import type { LogLevel } from '../config.js';

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export type LogSink = (line: string) => void;

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** Errors do not survive JSON.stringify; keep what helps an operator and nothing that is request data. */
function serializeError(err: unknown): unknown {
  if (err instanceof Error) {
    const out: Record<string, unknown> = { name: err.name, message: err.message, stack: err.stack };
    const code = (err as { code?: unknown }).code;
    if (code !== undefined) out['code'] = code;
    if (err.cause !== undefined) out['cause'] = serializeError(err.cause);
    return out;
  }
  return err;
}

function safeStringify(record: LogFields): string {
  const seen = new WeakSet<object>();
  return JSON.stringify(record, (_key, value: unknown) => {
    if (value instanceof Error) return serializeError(value);
    if (typeof value === 'bigint') return value.toString();
    if (typeof value === 'object' && value !== null) {
      if (seen.has(value)) return '[circular]';
      seen.add(value);
    }
    return value;
  });
}

export function createLogger(options: { level?: LogLevel; sink?: LogSink; fields?: LogFields } = {}): Logger {
  const threshold = RANK[options.level ?? 'info'];
  const sink: LogSink = options.sink ?? ((line) => process.stdout.write(`${line}\n`));
  const make = (base: LogFields): Logger => {
    const write = (level: Exclude<LogLevel, 'silent'>, msg: string, fields?: LogFields): void => {
      if (RANK[level] < threshold) return;
      try {
        sink(safeStringify({ time: new Date().toISOString(), level, msg, ...base, ...fields }));
      } catch {
        // A log line must never take a request down with it.
      }
    };
    return {
      debug: (msg, fields) => write('debug', msg, fields),
      info: (msg, fields) => write('info', msg, fields),
      warn: (msg, fields) => write('warn', msg, fields),
      error: (msg, fields) => write('error', msg, fields),
      child: (fields) => make({ ...base, ...fields }),
    };
  };
  return make(options.fields ?? {});
}

/** Discards everything; for code paths that need a logger but have nowhere useful to write. */
export const silentLogger: Logger = createLogger({ level: 'silent' });
