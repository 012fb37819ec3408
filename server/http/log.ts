/**
 * Structured logs on pino: one JSON object per line on stdout (or a sink tests supply), with `time` (ISO 8601),
 * `level` (its name) and `msg`. A child logger carries fields such as the request id into every line it writes,
 * so a report id finds every line of a request. Credentials are redacted wherever a field of a known secret
 * name appears (decision OPS-04): a log line is read by more people than the secrets it could carry.
 */
import pino from 'pino';
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

/** Field names whose values are credentials, at the top level and one object down (e.g. `headers.authorization`). */
export const REDACTED_FIELDS = [
  'authorization',
  'cookie',
  'token',
  'api_key',
  'apiKey',
  'password',
  'secret',
  'client_secret',
  'launch_data',
  'id_token',
  'access_token',
  'database_url',
  'databaseUrl',
  'platform_token',
] as const;
export const REDACTED = '[redacted]';

const REDACT_PATHS = REDACTED_FIELDS.flatMap((name) => [name, `*.${name}`]);

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

/** Errors anywhere at the top level (`err`, `cause`, ...) are written with their message and stack. */
function withErrors(fields: LogFields | undefined): LogFields {
  if (fields === undefined) return {};
  let out: LogFields | null = null;
  for (const [key, value] of Object.entries(fields)) {
    if (value instanceof Error) {
      out ??= { ...fields };
      out[key] = serializeError(value);
    }
  }
  return out ?? fields;
}

/**
 * A logger over a pino logger made on first use. A request's child loggers (its request id, its operation)
 * are asked for on every request but written to by few: making the pino child only when a line at an
 * enabled level is written keeps that cost off the requests that write nothing (decision PERF-22).
 */
function wrap(get: () => pino.Logger, root: pino.Logger): Logger {
  const write = (level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: LogFields): void => {
    try {
      // Children keep their root's level, so a disabled level is known without making the child.
      if (!root.isLevelEnabled(level)) return;
      get()[level](withErrors(fields), msg);
    } catch {
      // A log line must never take a request down with it.
    }
  };
  return {
    debug: (msg, fields) => write('debug', msg, fields),
    info: (msg, fields) => write('info', msg, fields),
    warn: (msg, fields) => write('warn', msg, fields),
    error: (msg, fields) => write('error', msg, fields),
    child: (fields) => {
      let made: pino.Logger | undefined;
      return wrap(() => (made ??= get().child(withErrors(fields))), root);
    },
  };
}

export function createLogger(options: { level?: LogLevel; sink?: LogSink; fields?: LogFields } = {}): Logger {
  const sink = options.sink;
  // Synchronous on stdout: `npm start` exits right after its last line on shutdown, and nothing may be lost.
  const destination = sink
    ? { write: (line: string): void => sink(line.endsWith('\n') ? line.slice(0, -1) : line) }
    : pino.destination({ dest: 1, sync: true });
  const log = pino(
    {
      level: options.level ?? 'info',
      base: options.fields ?? null,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      // Errors are serialised by `withErrors`, the same way for every key.
      serializers: { err: (value: unknown) => value },
    },
    destination,
  );
  return wrap(() => log, log);
}

/** Discards everything; for code paths that need a logger but have nowhere useful to write. */
export const silentLogger: Logger = createLogger({ level: 'silent' });
