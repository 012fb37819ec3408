/**
 * The one seam between the domain SQL (repositories) and a database engine. SQLite (embedded default)
 * and PostgreSQL implement it; repositories are written once against it.
 *
 * Conventions every driver honours, so repository SQL stays identical across engines:
 * - placeholders are `?`; the PostgreSQL driver rewrites them to `$1..$n` (see `toPostgresPlaceholders`);
 * - booleans are bound as INTEGER 0/1 and read back as numbers (no BOOLEAN columns: SQLite has none);
 * - INTEGER/BIGINT columns come back as JS numbers (the PostgreSQL driver must parse int8, OID 20, to
 *   number; every integer we store, microseconds since the epoch included, stays below 2^53);
 * - binding `undefined` is a bug and throws, so a forgotten `?? null` cannot silently store NULL;
 * - a string holding U+0000 is refused (`UnstorableTextError`) on both engines: PostgreSQL cannot store it;
 * - failures surface as the store's typed errors: a UNIQUE or PRIMARY KEY conflict as
 *   `UniqueViolationError`, a foreign key as `ForeignKeyViolationError`, a lock wait that outlived the
 *   busy timeout as `StoreBusyError` (repositories catch the first to report duplicate extids);
 * - `transaction(fn)` commits when `fn` resolves and rolls back when it rejects; the handle given to `fn`
 *   is the only way to reach that transaction and is dead once it ends.
 */
import { UnstorableTextError } from './errors.js';

export type Dialect = 'sqlite' | 'postgres';

export type SqlParam = string | number | bigint | boolean | null | Uint8Array;

export interface RunResult {
  /** Rows inserted, updated or deleted by the statement. */
  changes: number;
}

export interface Driver {
  readonly dialect: Dialect;
  /** Appended to a SELECT that reads a row it will write in the same transaction: '' on SQLite, whose
   * `BEGIN IMMEDIATE` already serializes writers, and ' FOR UPDATE' on PostgreSQL. */
  readonly forUpdate: string;
  get<T extends object>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined>;
  all<T extends object>(sql: string, params?: readonly SqlParam[]): Promise<T[]>;
  /**
   * A read's rows as arrays of the column values in the SELECT's order, for a statement of many columns:
   * better-sqlite3 makes a row object by adding each column's name as a property, which for a joined row
   * of 79 columns cost more than the statement itself (PERF-140). Optional: a driver without it is read
   * with `rowValues` (its `all`, each row's values in column order).
   */
  values?(sql: string, params?: readonly SqlParam[]): Promise<unknown[][]>;
  run(sql: string, params?: readonly SqlParam[]): Promise<RunResult>;
  /**
   * Runs `fn` in a transaction. Called on a transaction-scoped driver it opens a savepoint instead, so
   * a repository method that needs atomicity can be called both on its own and inside a caller's
   * transaction; a failure inside rolls back to the savepoint only.
   */
  transaction<T>(fn: (tx: Driver) => Promise<T>): Promise<T>;
}

export interface RootDriver extends Driver {
  close(): Promise<void>;
  /**
   * A driver whose commits are made durable by one fsync shared by the commits before it (SQLite, PERF-03):
   * the fsync running now, if one is. A commit made before it ends waits for it and then for the next one,
   * so a write may as well wait for it before committing (PERF-141). Absent, or null, otherwise.
   */
  syncRunning?(): Promise<void> | null;
  /**
   * PostgreSQL: `fn` with a connection of its own whose transaction is sent in few exchanges, BEGIN with
   * its first statements and COMMIT with its last (PERF-170). Absent on SQLite, where a statement is a call.
   */
  pipelined?<T>(fn: (tx: PipelinedTransaction) => Promise<T>): Promise<T>;
  /** A connection pool's state for the metrics (OPS-12): PostgreSQL's; absent for SQLite, which has none. */
  poolStats?(): PoolStats;
}

export interface BatchStatement {
  sql: string;
  params?: readonly SqlParam[];
  /** The rows as arrays of column values in the SELECT's order (a wide joined row, PERF-140). */
  arrays?: boolean;
}

export interface BatchResult {
  /** Row objects, or arrays when the statement asked for `arrays`. */
  rows: unknown[];
  /** Rows inserted, updated, deleted or returned. */
  rowCount: number;
}

/**
 * One transaction on a connection of its own, sent in few exchanges (PostgreSQL, `pg-batch.ts`, PERF-170):
 * BEGIN with the first statements, COMMIT with the last.
 */
export interface PipelinedTransaction {
  /** Begins the transaction and runs `statements` in it, in one exchange; answers their results. */
  open(statements: readonly BatchStatement[]): Promise<BatchResult[]>;
  /** More statements inside the open transaction, in one exchange. */
  run(statements: readonly BatchStatement[]): Promise<BatchResult[]>;
  /** `statements` and COMMIT, in one exchange; a failure rolls everything back and is thrown. */
  commit(statements: readonly BatchStatement[]): Promise<BatchResult[]>;
  /** Undoes the transaction, if one is open. */
  rollback(): Promise<void>;
}

export interface PoolStats {
  /** Connections the pool may open at most (`DATABASE_POOL_SIZE`). */
  max: number;
  /** Connections open now, busy or idle. */
  total: number;
  idle: number;
  /** Queries waiting for a connection. */
  waiting: number;
}

/**
 * A read's rows as arrays of column values in the SELECT's order: the driver's `values` when it has one,
 * else its row objects' values (in column order, as long as the SELECT's column names are distinct and
 * none looks like an array index, which would be ordered first).
 */
export async function rowValues(db: Driver, sql: string, params?: readonly SqlParam[]): Promise<unknown[][]> {
  if (db.values) return db.values(sql, params);
  return (await db.all<Record<string, unknown>>(sql, params)).map((row) => Object.values(row));
}

/**
 * Booleans become 0/1; `undefined` is refused; so is a string holding U+0000 (`UnstorableTextError`):
 * PostgreSQL cannot store it, and SQLite refuses it too so both stores answer alike.
 */
export function normalizeParams(params: readonly SqlParam[] | undefined): Array<Exclude<SqlParam, boolean>> {
  if (!params) return [];
  return params.map((value, index) => {
    if (value === undefined) throw new TypeError(`SQL parameter ${index + 1} is undefined`);
    if (typeof value === 'boolean') return value ? 1 : 0;
    if (typeof value === 'string' && value.includes('\u0000')) throw new UnstorableTextError(index + 1);
    return value;
  });
}

/** Rewritten statements by their text: the repositories' SQL is a small fixed set, rewritten once each. */
const rewritten = new Map<string, string>();
const REWRITTEN_LIMIT = 2_000;

/**
 * Rewrites `?` placeholders to PostgreSQL's `$1..$n`, leaving string literals, quoted identifiers and
 * comments alone.
 */
export function toPostgresPlaceholders(sql: string): string {
  let out = rewritten.get(sql);
  if (out === undefined) {
    out = rewritePlaceholders(sql);
    // A bound on memory should some caller build statements with values in their text.
    if (rewritten.size >= REWRITTEN_LIMIT) rewritten.clear();
    rewritten.set(sql, out);
  }
  return out;
}

function rewritePlaceholders(sql: string): string {
  let out = '';
  let n = 0;
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i];
    const next = sql[i + 1];
    if (ch === "'" || ch === '"') {
      const end = closingQuote(sql, i, ch);
      out += sql.slice(i, end);
      i = end;
    } else if (ch === '-' && next === '-') {
      const nl = sql.indexOf('\n', i);
      const end = nl === -1 ? sql.length : nl;
      out += sql.slice(i, end);
      i = end;
    } else if (ch === '/' && next === '*') {
      const close = sql.indexOf('*/', i + 2);
      const end = close === -1 ? sql.length : close + 2;
      out += sql.slice(i, end);
      i = end;
    } else if (ch === '?') {
      n += 1;
      out += `$${n}`;
      i += 1;
    } else {
      out += ch;
      i += 1;
    }
  }
  return out;
}

function closingQuote(sql: string, start: number, quote: string): number {
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === quote) {
      if (sql[i + 1] === quote) {
        i += 2; // doubled quote is an escaped quote
        continue;
      }
      return i + 1;
    }
    i += 1;
  }
  return sql.length;
}
