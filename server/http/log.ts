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

/**
 * pino's own string quoting (`_asString` in pino/lib/tools.js, Node < 25): `"` and `\\` escaped by hand
 * when the text is short and holds no control character, else `JSON.stringify`. Copied, not imported (pino
 * does not export it), so that a line written by `primitiveLine` is byte for byte the line pino writes;
 * `tests/server/core/log.test.ts` holds the two equal on arbitrary text.
 */
function pinoString(text: string): string {
  if (text.length > 100) return JSON.stringify(text);
  let result = '';
  let last = 0;
  let found = false;
  let point = 255;
  for (let i = 0; i < text.length && point >= 32; i += 1) {
    point = text.charCodeAt(i);
    if (point === 34 || point === 92) {
      result += `${text.slice(last, i)}\\`;
      last = i;
      found = true;
    }
  }
  result = found ? result + text.slice(last) : text;
  return point < 32 ? JSON.stringify(text) : `"${result}"`;
}

/** Keys pino treats apart (the level, time, message and error keys) or orders apart (array indices). */
const SPECIAL_KEY = /^(?:level|time|msg|err|\d.*)$/;

/**
 * `,"key":value` for each field, as pino's `asJson` writes a field whose value is a string, a number or a
 * boolean (undefined is left out); null when a field is anything else (an object, an Error, a function) or
 * has a key pino treats apart, for which the line takes pino itself.
 */
function primitiveFields(fields: LogFields): string | null {
  let text = '';
  for (const key in fields) {
    const value = fields[key];
    if (SPECIAL_KEY.test(key) || SECRET_NAMES.has(key)) return null;
    switch (typeof value) {
      case 'undefined':
        continue;
      case 'string':
        text += `,${pinoString(key)}:${pinoString(value)}`;
        break;
      case 'number':
        text += `,${pinoString(key)}:${Number.isFinite(value) ? String(value) : 'null'}`;
        break;
      case 'boolean':
        text += `,${pinoString(key)}:${String(value)}`;
        break;
      default:
        return null;
    }
  }
  return text;
}

/** `{"level":"info"`: what pino writes first, with the level formatter of `createLogger`. */
const LEVEL_TEXT = {
  debug: '{"level":"debug"',
  info: '{"level":"info"',
  warn: '{"level":"warn"',
  error: '{"level":"error"',
} as const;

interface Pinos {
  /** The root logger, with redaction. */
  redacting: pino.Logger;
  /** The same options and destination without the redaction pass, for lines it could not change. */
  plain: pino.Logger;
  /** Writes the lines gathered so far (a `warn` or `error` line is never held back, PERF-120). */
  flush: () => void;
  /** The destination both write to, for a line written without pino (PERF-123). */
  write: (line: string) => void;
  /** Whether a line may be written without pino at all (`primitiveLine`). */
  primitive: boolean;
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
        const line = this.primitiveLine(level, msg, own);
        if (line !== null) this.pinos.write(line);
        else this.pinos.plain[level]({ ...this.bindings, ...own }, msg);
      } else this.pino()[level](own, msg);
      if (level === 'warn' || level === 'error') this.pinos.flush();
    } catch {
      // A log line must never take a request down with it.
    }
  }

  /** This logger's fields as `primitiveFields` writes them, made on first use (null: pino writes them). */
  private bindingsText: string | null | undefined;

  /**
   * The line pino's plain twin would write for these fields, without pino (PERF-123): when every field,
   * the children's included, is a string, a number, a boolean or undefined, pino's `asJson` comes down to
   * the level, the time, each field as `,"key":value` in the merged object's order, and the message. The
   * access line of every request is such a line; anything else (null) takes pino.
   */
  private primitiveLine(level: 'debug' | 'info' | 'warn' | 'error', msg: string, own: LogFields): string | null {
    if (!this.pinos.primitive || msg.includes('%')) return null; // pino formats printf-style placeholders
    if (this.bindingsText === undefined) this.bindingsText = primitiveFields(this.bindings);
    if (this.bindingsText === null) return null;
    const fields = primitiveFields(own);
    if (fields === null) return null;
    return `${LEVEL_TEXT[level]}${isoTime()}${this.bindingsText}${fields},"msg":${pinoString(msg)}}\n`;
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

/**
 * stdout, written once per turn of the event loop (decision PERF-120). A request's access line was one
 * `write(2)` of its own, a visible share of a GET; now the lines of one turn (the access lines of every
 * request answered in it) go out together, at the end of the turn (`setImmediate`), or at once past
 * `TURN_BYTES`. A line at `warn` or above is written at once, after the lines gathered before it, so an
 * error is never held back. The gathered lines are written synchronously on the process's `exit` (which
 * `process.exit`, the end of the loop and an uncaught exception all emit; SIGTERM and SIGINT end in
 * `process.exit` in `server/main.ts`): only a process killed outright (SIGKILL, out of memory) loses the
 * `info` lines of its last turn, and those describe requests already answered.
 */
const TURN_BYTES = 64 * 1024;
class TurnWriter {
  private pending = '';
  private scheduled = false;
  private readonly flushNow = (): void => this.flush();

  constructor(private readonly out: { write(text: string): unknown; flushSync?: () => void }) {
    process.on('exit', () => {
      this.flush();
      try {
        this.out.flushSync?.();
      } catch {
        // Nothing more can be done for a log line at exit.
      }
    });
  }

  write(line: string): void {
    this.pending += line;
    if (this.pending.length >= TURN_BYTES) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushNow);
    }
  }

  flush(): void {
    this.scheduled = false;
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    this.out.write(text);
  }
}

let stdoutWriter: TurnWriter | undefined;
/** One writer for every logger on stdout (tests make many apps in one process). */
function stdoutWriterOnce(): TurnWriter {
  return (stdoutWriter ??= new TurnWriter(pino.destination({ dest: 1, sync: true })));
}

export function createLogger(options: { level?: LogLevel; sink?: LogSink; fields?: LogFields } = {}): Logger {
  const sink = options.sink;
  // stdout gathers a turn's lines (PERF-120); a test's sink gets each line as it is written.
  const writer = sink ? undefined : stdoutWriterOnce();
  const destination = writer ?? { write: (line: string): void => sink?.(line.endsWith('\n') ? line.slice(0, -1) : line) };
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
  const pinos: Pinos = {
    redacting: log,
    plain,
    flush: writer ? () => writer.flush() : () => undefined,
    write: (line) => destination.write(line),
    // Base fields are pino's own chindings, quoted its other way: lines under them always take pino.
    primitive: Object.keys(options.fields ?? {}).length === 0,
  };
  return new PinoLogger(null, pinos, {}, {}, !mayHoldSecrets(options.fields ?? {}));
}

/** Discards everything; for code paths that need a logger but have nowhere useful to write. */
export const silentLogger: Logger = createLogger({ level: 'silent' });
