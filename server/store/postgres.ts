import { setTimeout as sleep } from 'node:timers/promises';
import { createRequire } from 'node:module';
import type pg from 'pg';
import type { Driver, PoolStats, RootDriver, RunResult, SqlParam } from './driver.js';
import { normalizeParams, toPostgresPlaceholders } from './driver.js';
import {
  ForeignKeyViolationError,
  StoreBusyError,
  StoreClosedError,
  TransactionMisuseError,
  UniqueViolationError,
} from './errors.js';
import { AsyncMutex } from './mutex.js';
import { TransactionContext } from './transaction-context.js';
import { statementConfig } from './pg-statements.js';
import { PipelinedTransaction, runNamed } from './pg-batch.js';

// `pg` is loaded when a PostgreSQL store is first opened, not at start: a service on SQLite never needs it,
// and loading it was a tenth of a second of every cold start (PERF-31). `pg` here names its types only;
// `pgLib()` is the module.
let loaded: typeof pg | undefined;
const pgLib = (): typeof pg => (loaded ??= createRequire(import.meta.url)('pg') as typeof pg);

export interface PostgresDriverOptions {
  /** `postgres://user:password@host:port/database?...`, as libpq and `pg` read it. */
  connectionString: string;
  /**
   * Schema that holds the service's tables (the connections' `search_path`); default: the role's own
   * search path, usually `public`. Lets several deployments, or parallel tests, share one database.
   */
  schema?: string;
  /** How long a statement waits for a row or table lock before `StoreBusyError`. Default 5000. */
  lockTimeoutMs?: number;
  /** Connections of this instance's pool. Default 10. */
  maxConnections?: number;
  /** How long a statement waits for a free pooled connection before `StoreBusyError`. Default 10000. */
  connectTimeoutMs?: number;
  /** Shown in `pg_stat_activity`. Default `tis`. */
  applicationName?: string;
  /**
   * Errors of connections not in use (the server restarted, an operator ended the backend). The pool
   * drops such a connection and opens another when needed; default: a process warning.
   */
  onIdleError?: (err: Error) => void;
}

/** One open transaction or savepoint on a pooled connection; see SqliteDriver for the mutex rules. */
interface Scope {
  readonly parent: Scope | null;
  readonly client: pg.PoolClient;
  readonly mutex: AsyncMutex;
  readonly depth: number;
  active: boolean;
  /**
   * The server error of a statement that failed in this scope. PostgreSQL refuses every later statement
   * of the transaction until it rolls back to a savepoint, so the scope refuses them first, clearly.
   */
  failed: unknown;
  /** The connection broke (or returned something unusable): it is destroyed instead of pooled again. */
  broken: boolean;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const INT8_OID = 20;
const NUMERIC_OID = 1700;
/** Attempts of a lone statement that lost a deadlock or a serialization conflict (it was rolled back whole). */
const LONE_STATEMENT_ATTEMPTS = 3;

/**
 * int8 (COUNT, BIGINT columns) as a JS number, like SQLite hands it out. Every integer the store keeps,
 * microseconds since the epoch included, is below 2^53; a larger one would be silently rounded, so it is
 * refused loudly instead.
 */
function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) {
    throw new RangeError(`PostgreSQL returned the integer ${text}, beyond Number.MAX_SAFE_INTEGER`);
  }
  return value;
}

/** NUMERIC (e.g. SUM over BIGINT) as a JS number, refusing integers that a number cannot hold exactly. */
function parseNumeric(text: string): number {
  const value = Number(text);
  if (/^-?\d+$/.test(text) && !Number.isSafeInteger(value)) {
    throw new RangeError(`PostgreSQL returned the numeric ${text}, beyond Number.MAX_SAFE_INTEGER`);
  }
  return value;
}

/** Per-pool parsers, so the process-wide `pg.types` stays as other code expects it. */
const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (format !== 'binary') {
      if (oid === INT8_OID) return parseInt8;
      if (oid === NUMERIC_OID) return parseNumeric;
    }
    return format === 'binary' ? pgLib().types.getTypeParser(oid, 'binary') : pgLib().types.getTypeParser(oid, 'text');
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/**
 * The store over PostgreSQL, for operators who run several instances of the service on one database.
 * Repositories are the same as on SQLite; this driver supplies what SQLite gives for free:
 *
 * - Isolation: transactions run at READ COMMITTED, set explicitly so a server whose default is
 *   stricter does not turn the repositories' lock-then-read sequences into serialization failures.
 *   A read-modify-write locks its row with `SELECT ... FOR UPDATE` (`forUpdate`); each statement
 *   after the lock sees every commit made before it was granted.
 * - Bounded waits: `lock_timeout` is set for the connection and again with `SET LOCAL` in every
 *   transaction (a pooler in transaction mode drops connection settings), so a row held by a stuck
 *   transaction answers `StoreBusyError` after `lockTimeoutMs` instead of hanging the request.
 * - Same rules as SQLite: a transaction lives on one pooled connection; a nested transaction is a
 *   SAVEPOINT; the store itself, or an outer handle, used inside a transaction is refused
 *   (`TransactionMisuseError`), since on PostgreSQL it would take a second connection and could wait
 *   for a lock its own transaction holds.
 * - A failed statement aborts a PostgreSQL transaction, where SQLite carries on. To recover from a
 *   statement's failure inside a transaction, run it in a nested `tx.transaction()`: its savepoint is
 *   rolled back and the outer transaction continues. A transaction whose callback swallowed a failed
 *   statement and resolved is rolled back and answers `TransactionMisuseError`, never a silent
 *   "COMMIT" that PostgreSQL would have turned into a rollback.
 * - Deadlock and serialization failures answer `StoreBusyError`; a lone statement outside a
 *   transaction is retried first, since the server rolled it back whole.
 */
export class PostgresDriver implements RootDriver {
  readonly dialect = 'postgres' as const;
  readonly forUpdate = ' FOR UPDATE';
  readonly schema: string | null;
  readonly lockTimeoutMs: number;
  readonly #pool: pg.Pool;
  readonly #context = new TransactionContext<Scope>();
  readonly #begin: string;
  #closed = false;
  #ending: Promise<void> | null = null;

  constructor(options: PostgresDriverOptions) {
    const lockTimeoutMs = options.lockTimeoutMs ?? 5000;
    if (!Number.isSafeInteger(lockTimeoutMs) || lockTimeoutMs < 1) {
      throw new RangeError('lockTimeoutMs must be a positive integer (0 would mean waiting forever)');
    }
    if (options.schema !== undefined && !SCHEMA_NAME.test(options.schema)) {
      throw new RangeError(`schema must be a lower-case SQL identifier, got ${JSON.stringify(options.schema)}`);
    }
    if (options.schema !== undefined && urlHasOptions(options.connectionString)) {
      // pg lets the URL's `options` replace ours wholesale: the schema would be dropped without a word.
      throw new RangeError('give the schema either as the schema option or in the URL options, not both');
    }
    this.schema = options.schema ?? null;
    this.lockTimeoutMs = lockTimeoutMs;
    this.#begin = `BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = ${lockTimeoutMs}`;
    const config: pg.PoolConfig = {
      connectionString: options.connectionString,
      max: options.maxConnections ?? 10,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
      application_name: options.applicationName ?? 'tis',
      lock_timeout: lockTimeoutMs,
      types: TYPES,
    };
    if (this.schema !== null) config.options = `-c search_path=${this.schema}`;
    this.#pool = new (pgLib().Pool)(config);
    const onIdleError =
      options.onIdleError ??
      ((err: Error) => process.emitWarning(`PostgreSQL connection error (idle pooled connection): ${err.message}`));
    this.#pool.on('error', onIdleError);
  }

  async get<T extends object>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined> {
    return (await this.#lone<T>(sql, params)).rows[0];
  }

  async all<T extends object>(sql: string, params?: readonly SqlParam[]): Promise<T[]> {
    return (await this.#lone<T>(sql, params)).rows;
  }

  async run(sql: string, params?: readonly SqlParam[]): Promise<RunResult> {
    return { changes: (await this.#lone(sql, params)).rowCount ?? 0 };
  }

  async transaction<T>(fn: (tx: Driver) => Promise<T>): Promise<T> {
    this.#assertOpen();
    this.#assertNotInside('transaction');
    const client = await this.#connect();
    const scope: Scope = {
      parent: null,
      client,
      mutex: new AsyncMutex(),
      depth: 0,
      active: true,
      failed: null,
      broken: false,
    };
    const onError = (): void => {
      scope.broken = true;
    };
    client.on('error', onError);
    try {
      try {
        await client.query(this.#begin);
      } catch (err) {
        scope.broken = true;
        throw mapPostgresError(err);
      }
      let result: T;
      try {
        result = await this.#context.runRoot(scope, () => fn(new PostgresTransaction(this, scope)));
      } catch (err) {
        scope.active = false;
        await this.#rollback(scope);
        throw err;
      }
      scope.active = false;
      // Statements the callback started without awaiting finish before the transaction ends.
      const release = await scope.mutex.acquire();
      release();
      if (scope.failed !== null) {
        await this.#rollback(scope);
        throw swallowedFailure(scope.failed);
      }
      try {
        await client.query('COMMIT');
      } catch (err) {
        await this.#rollback(scope);
        throw mapPostgresError(err);
      }
      return result;
    } finally {
      client.removeListener('error', onError);
      client.release(scope.broken ? new Error('connection left in an unknown state') : undefined);
    }
  }

  /**
   * `fn` with a pooled connection of its own, for a transaction sent in few exchanges (`pg-batch.ts`,
   * PERF-170). An open transaction left by `fn` is rolled back; a broken connection is destroyed.
   */
  async pipelined<T>(fn: (tx: PipelinedTransaction) => Promise<T>): Promise<T> {
    this.#assertOpen();
    this.#assertNotInside('transaction');
    const client = await this.#connect();
    const tx = new PipelinedTransaction(client, {
      lockTimeoutMs: this.lockTimeoutMs,
      mapError: mapPostgresError,
      isServerError: (err) => err instanceof pgLib().DatabaseError,
    });
    const onError = (): void => {
      tx.broken = true;
    };
    client.on('error', onError);
    try {
      try {
        return await fn(tx);
      } finally {
        await tx.rollback();
      }
    } finally {
      client.removeListener('error', onError);
      client.release(tx.broken ? new Error('connection left in an unknown state') : undefined);
    }
  }

  poolStats(): PoolStats {
    const pool = this.#pool;
    return { max: pool.options.max ?? 10, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
  }

  /** Ends the pool once every transaction in flight has finished; statements after that are refused. */
  async close(): Promise<void> {
    if (this.#ending) return this.#ending;
    this.#assertNotInside('close');
    this.#closed = true;
    this.#ending = this.#pool.end();
    return this.#ending;
  }

  /** @internal used by PostgresTransaction */
  async inScope(scope: Scope, sql: string, params: readonly SqlParam[] | undefined): Promise<pg.QueryResult> {
    this.#assertCallerMayUse(scope);
    const text = toPostgresPlaceholders(sql);
    const values = normalizeParams(params);
    const release = await scope.mutex.acquire();
    try {
      assertUsable(scope);
      return await this.#query(scope, statementConfig(text, values));
    } finally {
      release();
    }
  }

  /** @internal used by PostgresTransaction */
  async savepoint<T>(parent: Scope, fn: (tx: Driver) => Promise<T>): Promise<T> {
    this.#assertCallerMayUse(parent);
    const release = await parent.mutex.acquire();
    try {
      assertUsable(parent);
      const depth = parent.depth + 1;
      const name = `sp_${depth}`;
      await this.#query(parent, { text: `SAVEPOINT ${name}` });
      const scope: Scope = {
        parent,
        client: parent.client,
        mutex: new AsyncMutex(),
        depth,
        active: true,
        failed: null,
        broken: false,
      };
      let result: T;
      try {
        result = await this.#context.run(scope, () => fn(new PostgresTransaction(this, scope)));
      } catch (err) {
        scope.active = false;
        await this.#rollbackTo(parent, name);
        throw err;
      }
      scope.active = false;
      const inner = await scope.mutex.acquire();
      inner();
      if (scope.failed !== null) {
        await this.#rollbackTo(parent, name);
        throw swallowedFailure(scope.failed);
      }
      await this.#query(parent, { text: `RELEASE SAVEPOINT ${name}` });
      return result;
    } finally {
      release();
    }
  }

  /** A statement on a transaction's connection; a failure marks the scope as PostgreSQL sees it. */
  async #query(scope: Scope, statement: pg.QueryConfig): Promise<pg.QueryResult> {
    try {
      return await scope.client.query(statement);
    } catch (err) {
      if (err instanceof pgLib().DatabaseError) scope.failed = err;
      else {
        // Not the server's answer (lost connection, a value refused while parsing the result): the
        // connection's state is unknown, so the transaction cannot go on and the connection is dropped.
        scope.failed = err;
        rootOf(scope).broken = true;
      }
      throw mapPostgresError(err);
    }
  }

  /** A statement outside any transaction: PostgreSQL runs it as its own transaction. */
  async #lone<T extends object>(sql: string, params: readonly SqlParam[] | undefined): Promise<{ rows: T[]; rowCount: number | null }> {
    this.#assertOpen();
    this.#assertNotInside('query');
    const text = toPostgresPlaceholders(sql);
    const values = normalizeParams(params);
    const config = statementConfig(text, values);
    for (let attempt = 1; ; attempt += 1) {
      try {
        if (config.name === undefined) return await this.#pool.query<T>(config);
        return (await this.#named(text, values, config.name)) as { rows: T[]; rowCount: number };
      } catch (err) {
        if (attempt < LONE_STATEMENT_ATTEMPTS && isRetryable(err)) {
          await sleep(5 * attempt + Math.random() * 10);
          continue;
        }
        throw this.#closed && isPoolEnded(err) ? new StoreClosedError() : mapPostgresError(err);
      }
    }
  }

  /**
   * A named statement on a pooled connection, in the pipelined exchange's form (PERF-213), so that its columns
   * are described once per process (PERF-212) instead of on every execution. A connection whose state is
   * unknown afterwards (it broke, or an answer was not the server's) is destroyed instead of pooled again.
   */
  async #named(text: string, values: unknown[], name: string): Promise<{ rows: unknown[]; rowCount: number }> {
    const client = await this.#connect();
    let broken: Error | undefined;
    const onError = (err: Error): void => {
      broken = err;
    };
    client.on('error', onError);
    try {
      return await runNamed(client, text, values, name);
    } catch (err) {
      if (!(err instanceof pgLib().DatabaseError)) broken ??= err instanceof Error ? err : new Error(String(err));
      throw err;
    } finally {
      client.removeListener('error', onError);
      client.release(broken);
    }
  }

  async #connect(): Promise<pg.PoolClient> {
    try {
      return await this.#pool.connect();
    } catch (err) {
      if (this.#closed && isPoolEnded(err)) throw new StoreClosedError();
      throw mapPostgresError(err);
    }
  }

  async #rollback(scope: Scope): Promise<void> {
    if (scope.broken) return; // the connection is destroyed on release, which rolls back on the server
    try {
      await scope.client.query('ROLLBACK');
    } catch {
      scope.broken = true;
    }
  }

  /** Undoes a savepoint so its parent can carry on; if even that fails, the parent is unusable too. */
  async #rollbackTo(parent: Scope, name: string): Promise<void> {
    if (rootOf(parent).broken) {
      parent.failed ??= new Error('the connection broke');
      return;
    }
    try {
      await parent.client.query(`ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`);
    } catch (err) {
      parent.failed = err;
      rootOf(parent).broken = true;
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreClosedError();
  }

  /** Called on the root driver from inside one of its own transactions, a statement would run outside
   * that transaction, on another connection, and could wait for a lock the transaction holds. */
  #assertNotInside(what: string): void {
    const current = this.#context.current();
    if (current && isLive(current)) {
      throw new TransactionMisuseError(
        `${what} on the store itself inside one of its transactions; use the transaction handle passed to the callback`,
      );
    }
  }

  /** A statement on an outer handle from inside a nested savepoint would wait for the savepoint that
   * waits for it; refuse instead of deadlocking. */
  #assertCallerMayUse(scope: Scope): void {
    const current = this.#context.current();
    if (!current || current === scope || !isLive(current)) return;
    for (let s = current.parent; s; s = s.parent) {
      if (s === scope) {
        throw new TransactionMisuseError(
          'an outer transaction handle was used inside a nested transaction; use the handle passed to the nested callback',
        );
      }
    }
  }
}

class PostgresTransaction implements Driver {
  readonly dialect = 'postgres' as const;
  readonly forUpdate = ' FOR UPDATE';
  readonly #driver: PostgresDriver;
  readonly #scope: Scope;

  constructor(driver: PostgresDriver, scope: Scope) {
    this.#driver = driver;
    this.#scope = scope;
  }

  async get<T extends object>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined> {
    return (await this.#driver.inScope(this.#scope, sql, params)).rows[0] as T | undefined;
  }

  async all<T extends object>(sql: string, params?: readonly SqlParam[]): Promise<T[]> {
    return (await this.#driver.inScope(this.#scope, sql, params)).rows as T[];
  }

  async run(sql: string, params?: readonly SqlParam[]): Promise<RunResult> {
    return { changes: (await this.#driver.inScope(this.#scope, sql, params)).rowCount ?? 0 };
  }

  transaction<T>(fn: (tx: Driver) => Promise<T>): Promise<T> {
    return this.#driver.savepoint(this.#scope, fn);
  }
}

function assertUsable(scope: Scope): void {
  if (!scope.active) {
    throw new TransactionMisuseError('this transaction has already ended; its handle cannot be used any more');
  }
  if (scope.failed !== null) {
    throw new TransactionMisuseError(
      'a statement failed earlier in this transaction and PostgreSQL has aborted it; to go on after a failure, ' +
        'run the statement that may fail in a nested tx.transaction()',
    );
  }
}

function swallowedFailure(cause: unknown): TransactionMisuseError {
  const err = new TransactionMisuseError(
    'a statement failed inside this transaction and the callback went on; PostgreSQL aborted the transaction, ' +
      'so it was rolled back. Run a statement whose failure you handle in a nested tx.transaction()',
  );
  Object.defineProperty(err, 'cause', { value: cause, enumerable: false, configurable: true, writable: true });
  return err;
}

function rootOf(scope: Scope): Scope {
  let s = scope;
  while (s.parent) s = s.parent;
  return s;
}

function isLive(scope: Scope): boolean {
  for (let s: Scope | null = scope; s; s = s.parent) if (!s.active) return false;
  return true;
}

function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Deadlock or serialization failure: the server rolled the work back and it may simply be tried again. */
function isRetryable(err: unknown): boolean {
  const code = sqlState(err);
  return code === '40P01' || code === '40001';
}

function urlHasOptions(connectionString: string): boolean {
  try {
    return new URL(connectionString).searchParams.has('options');
  } catch {
    return false;
  }
}

function isPoolEnded(err: unknown): boolean {
  return err instanceof Error && /after calling end on the pool|pool is ending/i.test(err.message);
}

export function mapPostgresError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  // No `pg` loaded, no error of its kind exists.
  if (loaded !== undefined && err instanceof loaded.DatabaseError) {
    switch (err.code) {
      case '23505':
        return new UniqueViolationError(err.constraint ?? err.detail ?? 'unique constraint', { cause: err });
      case '23503':
        return new ForeignKeyViolationError({ cause: err });
      case '55P03':
        return new StoreBusyError('a row or table stayed locked by another transaction beyond the lock timeout', {
          cause: err,
        });
      case '40P01':
        return new StoreBusyError('the transaction was chosen as the victim of a deadlock', { cause: err });
      case '40001':
        return new StoreBusyError('the transaction conflicted with a concurrent one (serialization failure)', {
          cause: err,
        });
      default:
        return err;
    }
  }
  // pg-pool: every connection stayed busy for longer than connectTimeoutMs.
  if (/timeout exceeded when trying to connect/i.test(err.message)) {
    return new StoreBusyError('no database connection became free within the connect timeout', { cause: err });
  }
  return err;
}
