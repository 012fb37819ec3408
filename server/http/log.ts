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
  // for...in, not Object.entries: this runs for every line, the access line of every request included.
  for (const key in fields) {
    const value = fields[key];
    if (value instanceof Error) {
      out ??= { ...fields };
      out[key] = serializeError(value);
    }
  }
  return out ?? fields;
}

/**
 * pino's `isoTime`, made once per millisecond: every line of a request (and of its neighbours in the same
 * millisecond) carries the same text, so the Date and its ISO string are made once for all of them.
 */
let isoMs = -1;
let isoText = '';
function isoTime(): string {
  const now = Date.now();
  if (now !== isoMs) {
    isoMs = now;
    isoText = `,"time":"${new Date(now).toISOString()}"`;
  }
  return isoText;
}

const SECRET_NAMES: ReadonlySet<string> = new Set(REDACTED_FIELDS);

/**
 * Whether pino's redaction (paths `name` and `*.name`) could change these fields: a key of a secret's name
 * at the top level or one object down, or a value whose keys are not all its own (a class instance).
 */
function mayHoldSecrets(fields: LogFields): boolean {
  for (const key in fields) {
    if (SECRET_NAMES.has(key)) return true;
    const value = fields[key];
    if (typeof value !== 'object' || value === null) continue;
    const proto = Object.getPrototypeOf(value) as unknown;
    if (Array.isArray(value)) continue;
    if (proto !== Object.prototype && proto !== null) return true;
    for (const inner in value) if (SECRET_NAMES.has(inner)) return true;
  }
  return false;
}

interface Pinos {
  /** The root logger, with redaction. */
  redacting: pino.Logger;
  /** The same options and destination without the redaction pass, for lines it could not change. */
  plain: pino.Logger;
}

/**
 * A logger over a pino logger made on first use. A request's child loggers (its request id, its operation)
 * are asked for on every request but written to by few: making the pino child only when a line at an
 * enabled level is written keeps that cost off the requests that write nothing (decision PERF-22).
 *
 * A line none of whose fields (its own and its children's) has a secret's name where redaction looks is
 * written by the plain twin, with the children's fields merged in (the same JSON, key for key): pino's
 * wildcard redaction and a pino child per request were a visible share of every request's access line,
 * which never carries a credential (PERF-29). Any other line takes the redacting logger, as before.
 */
class PinoLogger implements Logger {
  /** The pino child of this logger, made on its first line that needs it. */
  private made: pino.Logger | undefined;

  constructor(
    private readonly parent: PinoLogger | null,
    private readonly pinos: Pinos,
    /** This logger's own fields (the pino child's), and every field of its line with its parents'. */
    private readonly own: LogFields,
    private readonly bindings: LogFields,
    private readonly clean: boolean,
  ) {}

  private pino(): pino.Logger {
    if (this.parent === null) return this.pinos.redacting;
    return (this.made ??= this.parent.pino().child(this.own));
  }

  private write(level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: LogFields): void {
    try {
      // Children keep their root's level, so a disabled level is known without making the child.
      if (!this.pinos.redacting.isLevelEnabled(level)) return;
      const own = withErrors(fields);
      if (this.clean && !mayHoldSecrets(own) && !overlaps(this.bindings, own)) {
        this.pinos.plain[level]({ ...this.bindings, ...own }, msg);
        return;
      }
      this.pino()[level](own, msg);
    } catch {
      // A log line must never take a request down with it.
    }
  }

  debug(msg: string, fields?: LogFields): void {
    this.write('debug', msg, fields);
  }

  info(msg: string, fields?: LogFields): void {
    this.write('info', msg, fields);
  }

  warn(msg: string, fields?: LogFields): void {
    this.write('warn', msg, fields);
  }

  error(msg: string, fields?: LogFields): void {
    this.write('error', msg, fields);
  }

  child(fields: LogFields): Logger {
    const own = withErrors(fields);
    return new PinoLogger(this, this.pinos, own, { ...this.bindings, ...own }, this.clean && !mayHoldSecrets(own) && !overlaps(this.bindings, own));
  }
}

/** A key twice in one line (a child's and the line's own) is written twice by pino; merging would drop one. */
function overlaps(bindings: LogFields, fields: LogFields): boolean {
  for (const key in fields) if (key in bindings) return true;
  return false;
}

export function createLogger(options: { level?: LogLevel; sink?: LogSink; fields?: LogFields } = {}): Logger {
  const sink = options.sink;
  // Synchronous on stdout: `npm start` exits right after its last line on shutdown, and nothing may be lost.
  const destination = sink
    ? { write: (line: string): void => sink(line.endsWith('\n') ? line.slice(0, -1) : line) }
    : pino.destination({ dest: 1, sync: true });
  const shared: pino.LoggerOptions = {
    level: options.level ?? 'info',
    base: options.fields ?? null,
    timestamp: isoTime,
    formatters: { level: (label) => ({ level: label }) },
    // Errors are serialised by `withErrors`, the same way for every key.
    serializers: { err: (value: unknown) => value },
  };
  const log = pino({ ...shared, redact: { paths: REDACT_PATHS, censor: REDACTED } }, destination);
  const plain = pino(shared, destination);
  // The base fields are written by both and never merged, so only a secret among them matters.
  return new PinoLogger(null, { redacting: log, plain }, {}, {}, !mayHoldSecrets(options.fields ?? {}));
}

/** Discards everything; for code paths that need a logger but have nowhere useful to write. */
export const silentLogger: Logger = createLogger({ level: 'silent' });
