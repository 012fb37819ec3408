/**
 * Several statements in one exchange with PostgreSQL (decision PERF-170): each statement's Parse (once per
 * connection for a named one), Bind, Describe and Execute are written together and followed by ONE Sync, so
 * the server answers them all before the client waits once. `pg` waits for each query's ReadyForQuery
 * before sending the next, which made every statement a round trip of its own; a score's transaction is
 * a few statements before publishing and a few after, and each wait was a turn of both event loops.
 *
 * The batch is a `pg` "submittable" (as `pg-cursor` is): `pg` queues it like a query and hands it the
 * backend's messages. What the extended protocol gives: the statements run in order; an error skips the
 * rest up to the Sync (so a COMMIT sent after a failed statement never runs), and the batch answers that
 * error. Outside an explicit transaction the statements between two Syncs form one implicit transaction.
 */
import { createRequire } from 'node:module';
import type pg from 'pg';
import type { BatchResult, BatchStatement, PipelinedTransaction as Pipelined } from './driver.js';
import { normalizeParams, toPostgresPlaceholders } from './driver.js';
import { statementConfig } from './pg-statements.js';

interface PgResult {
  rows: unknown[];
  rowCount: number | null;
  fields: unknown[];
  _parsers: unknown[] | undefined;
  _prebuiltEmptyResultObject: object | null;
  addFields(fields: unknown[]): void;
  parseRow(values: unknown[]): unknown;
  addRow(row: unknown): void;
  addCommandComplete(msg: unknown): void;
}

interface PgConnection {
  parsedStatements: Record<string, string>;
  stream: { cork?: () => void; uncork?: () => void };
  parse(msg: { text: string; name?: string; types?: unknown[] }): void;
  bind(msg: { portal: string; statement: string; values: unknown[]; valueMapper: (value: unknown) => unknown }): void;
  describe(msg: { type: 'P'; name: string }): void;
  execute(msg: { portal: string; rows: number }): void;
  sync(): void;
}

type TypeParsers = { getTypeParser: (oid: number, format?: string) => unknown };

const require = createRequire(import.meta.url);
let pgParts: { Result: new (rowMode: string | undefined, types: TypeParsers) => PgResult; prepareValue: (v: unknown) => unknown } | undefined;
/** `pg`'s own row parser and value mapper, loaded with `pg` (never on a SQLite service, PERF-31). */
function parts(): NonNullable<typeof pgParts> {
  return (pgParts ??= {
    Result: require('pg/lib/result') as NonNullable<typeof pgParts>['Result'],
    prepareValue: (require('pg/lib/utils') as { prepareValue: (v: unknown) => unknown }).prepareValue,
  });
}

interface Prepared {
  text: string;
  values: unknown[];
  /** The prepared statement's name ('' for the unnamed one). */
  name: string;
  /** Whether this exchange parses it (named and new on this connection, or unnamed). */
  parse: boolean;
  arrays: boolean;
  /** Its columns as an earlier execution described them; undefined: this exchange asks (Describe). */
  described: Described | undefined;
}

/** What `pg`'s `Result.addFields` makes of a statement's RowDescription: its fields, parsers and empty row. */
interface Described {
  fields: unknown[];
  parsers: unknown[] | undefined;
  empty: object | null;
}

/**
 * The columns of each named statement, as the first execution's RowDescription gave them (PERF-212). A named
 * statement's text never changes (PERF-130), and it reads no `*`, so its columns, their types and so their
 * parsers are the same on every connection and every execution: the exchange skips the Describe, the
 * backend sends no RowDescription, and the result takes the parsers made the first time. `pg` asked for it
 * on every execution and built a parser per column each time: for the score path's joined read of 79
 * columns that was 5% of the PostgreSQL instance's busy time (`addFields`), beside parsing the message.
 */
const descriptions = new Map<string, Described>();

/** The submittable `pg` runs: written at once, answered once the backend is ready again. */
class Batch {
  readonly #statements: Prepared[];
  readonly #types: TypeParsers;
  readonly #results: PgResult[] = [];
  /** The statement whose answers are arriving. */
  #current = 0;
  #failure: unknown = null;
  #settle: (err: unknown, results?: PgResult[]) => void;
  /** What `pg` records when a ParseComplete arrives: the statement being answered, if this exchange parses it. */
  name: string | undefined;
  text: string | undefined;

  constructor(statements: Prepared[], types: TypeParsers, settle: (err: unknown, results?: PgResult[]) => void) {
    this.#statements = statements;
    this.#types = types;
    this.#settle = settle;
    this.#point();
  }

  /** The statements' texts, for whoever watches `Client.query` (tests count and read statements there). */
  toString(): string {
    return this.#statements.map((s) => s.text).join('; ');
  }

  /** `pg` notes a named statement as parsed on its connection by these two, on its ParseComplete. */
  #point(): void {
    const s = this.#statements[this.#current];
    this.name = s && s.parse && s.name !== '' ? s.name : undefined;
    this.text = this.name === undefined ? undefined : s?.text;
  }

  #result(): PgResult {
    let result = this.#results[this.#current];
    if (!result) {
      const { Result } = parts();
      const statement = this.#statements[this.#current];
      result = new Result(statement?.arrays ? 'array' : undefined, this.#types);
      const described = statement?.described;
      if (described) {
        result.fields = described.fields;
        result._parsers = described.parsers;
        result._prebuiltEmptyResultObject = described.empty;
      }
      this.#results[this.#current] = result;
    }
    return result;
  }

  submit(connection: PgConnection): null {
    const { prepareValue } = parts();
    connection.stream.cork?.();
    try {
      for (const s of this.#statements) {
        if (s.parse) connection.parse({ text: s.text, name: s.name, types: [] });
        connection.bind({ portal: '', statement: s.name, values: s.values, valueMapper: prepareValue });
        if (!s.described) connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '', rows: 0 });
      }
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(msg: { fields: unknown[] }): void {
    const result = this.#result();
    result.addFields(msg.fields);
    const name = this.#statements[this.#current]?.name;
    if (name) {
      descriptions.set(name, { fields: result.fields, parsers: result._parsers, empty: result._prebuiltEmptyResultObject });
    }
  }

  handleDataRow(msg: { fields: unknown[] }): void {
    if (this.#failure !== null) return;
    const result = this.#result();
    try {
      result.addRow(result.parseRow(msg.fields));
    } catch (err) {
      // A value the parsers refuse (an int8 beyond 2^53): answered once the backend is ready again.
      this.#failure = err;
    }
  }

  handleCommandComplete(msg: unknown): void {
    this.#result().addCommandComplete(msg);
    this.#current += 1;
    this.#point();
  }

  handleEmptyQuery(): void {
    this.#current += 1;
    this.#point();
  }

  handlePortalSuspended(): void {
    // Every Execute asks for all rows (rows: 0); a suspended portal does not happen.
  }

  handleError(err: unknown): void {
    // `pg` hands the error and forgets the batch; the backend skips to the Sync by itself.
    this.#settle(this.#failure ?? err);
  }

  handleReadyForQuery(): void {
    if (this.#failure !== null) this.#settle(this.#failure);
    else this.#settle(null, this.#results);
  }

  handleCopyInResponse(): void {}

  handleCopyData(): void {}
}

/**
 * Runs `statements` in one exchange on `client` and answers their results in order, or the first
 * failure (the statements after it did not run). Named statements (PERF-130) are parsed in the same
 * exchange the first time a connection runs them.
 */
export function runBatch(client: pg.ClientBase, statements: readonly BatchStatement[]): Promise<BatchResult[]> {
  return exchange(
    client,
    statements.map((s) => {
      const text = toPostgresPlaceholders(s.sql);
      const values = normalizeParams(s.params);
      return { text, values, name: statementConfig(text, values).name ?? '', arrays: s.arrays === true };
    }),
  );
}

/**
 * One named statement (PERF-130) in an exchange of its own (PERF-213): what `pg`'s query does, without
 * describing the statement's columns again (PERF-212). `text` and `values` as the driver made them.
 */
export async function runNamed(client: pg.ClientBase, text: string, values: unknown[], name: string): Promise<BatchResult> {
  const [result] = await exchange(client, [{ text, values, name, arrays: false }]);
  return result as BatchResult;
}

function exchange(
  client: pg.ClientBase,
  statements: readonly Omit<Prepared, 'parse' | 'described'>[],
): Promise<BatchResult[]> {
  const connection = (client as unknown as { connection: PgConnection }).connection;
  const parsed = connection.parsedStatements;
  const parsing = new Set<string>();
  const prepared: Prepared[] = statements.map((s) => {
    const { name } = s;
    // A named statement twice in one exchange is parsed once, by the first.
    const parse = name === '' || (parsed[name] === undefined && !parsing.has(name));
    if (parse && name !== '') parsing.add(name);
    return { ...s, parse, described: name === '' ? undefined : descriptions.get(name) };
  });
  const types: TypeParsers = { getTypeParser: (oid, format) => client.getTypeParser(oid, format as 'text') };
  return new Promise<BatchResult[]>((resolve, reject) => {
    let settled = false;
    const batch = new Batch(prepared, types, (err, results) => {
      if (settled) return;
      settled = true;
      if (err) reject(err);
      else resolve(prepared.map((_, i) => ({ rows: results?.[i]?.rows ?? [], rowCount: results?.[i]?.rowCount ?? 0 })));
    });
    void client.query(batch as unknown as pg.QueryConfig);
  });
}

/**
 * One transaction on a pooled connection of its own, in as few exchanges as its work allows (PERF-170):
 * `open` sends BEGIN, the transaction's settings and the first statements together; `commit` sends the
 * last statements with COMMIT. A failure rolls back; a connection whose state is unknown is `broken` and
 * must be destroyed instead of pooled again.
 */
export class PipelinedTransaction implements Pipelined {
  broken = false;
  #open = false;
  #ended = false;
  readonly #client: pg.ClientBase;
  readonly #begin: readonly BatchStatement[];
  readonly #mapError: (err: unknown) => unknown;
  readonly #isServerError: (err: unknown) => boolean;

  constructor(
    client: pg.ClientBase,
    options: { lockTimeoutMs: number; mapError: (err: unknown) => unknown; isServerError: (err: unknown) => boolean },
  ) {
    this.#client = client;
    // As the driver's own transactions: READ COMMITTED, and a bounded wait for any lock (PostgresDriver).
    this.#begin = [{ sql: 'BEGIN ISOLATION LEVEL READ COMMITTED' }, { sql: `SET LOCAL lock_timeout = ${options.lockTimeoutMs}` }];
    this.#mapError = options.mapError;
    this.#isServerError = options.isServerError;
  }

  /** Begins the transaction and runs `statements` in it, in one exchange; answers their results. */
  async open(statements: readonly BatchStatement[]): Promise<BatchResult[]> {
    if (this.#open || this.#ended) throw new Error('this pipelined transaction was already opened');
    this.#open = true;
    const results = await this.#exchange([...this.#begin, ...statements]);
    return results.slice(this.#begin.length);
  }

  /** Runs more statements inside the open transaction, in one exchange. */
  async run(statements: readonly BatchStatement[]): Promise<BatchResult[]> {
    this.#assertOpen();
    return this.#exchange(statements);
  }

  /** Runs `statements` and commits, in one exchange; a failure rolls everything back and is thrown. */
  async commit(statements: readonly BatchStatement[]): Promise<BatchResult[]> {
    this.#assertOpen();
    const results = await this.#exchange([...statements, { sql: 'COMMIT' }]);
    this.#open = false;
    this.#ended = true;
    return results.slice(0, statements.length);
  }

  /** Undoes the transaction, if one is open (idempotent). */
  async rollback(): Promise<void> {
    if (!this.#open) return;
    this.#open = false;
    this.#ended = true;
    if (this.broken) return; // destroyed on release, which rolls back on the server
    try {
      await this.#client.query('ROLLBACK');
    } catch {
      this.broken = true;
    }
  }

  #assertOpen(): void {
    if (!this.#open) throw new Error('this pipelined transaction is not open');
  }

  async #exchange(statements: readonly BatchStatement[]): Promise<BatchResult[]> {
    try {
      return await runBatch(this.#client, statements);
    } catch (err) {
      // Not the server's answer (a lost connection, a value the parsers refused): its state is unknown.
      if (!this.#isServerError(err)) this.broken = true;
      await this.rollback();
      throw this.#mapError(err);
    }
  }
}
