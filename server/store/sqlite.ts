import { mkdirSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { setImmediate, setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import type { Driver, RootDriver, RunResult, SqlParam } from './driver.js';
import { normalizeParams } from './driver.js';
import {
  ForeignKeyViolationError,
  StoreBusyError,
  StoreClosedError,
  TransactionMisuseError,
  UniqueViolationError,
} from './errors.js';
import { AsyncMutex } from './mutex.js';
import { TransactionContext } from './transaction-context.js';

export interface SqliteDriverOptions {
  /** Database file; its directory is created if missing. */
  path: string;
  /** How long a writer waits for another connection's write lock before `StoreBusyError`. Default 5000. */
  busyTimeoutMs?: number;
}

/**
 * One open transaction or savepoint. Statements on a scope are serialized by its mutex; a nested
 * savepoint holds its parent's mutex for its whole life, so the parent's other flows wait instead of
 * writing into the savepoint.
 */
interface Scope {
  readonly parent: Scope | null;
  readonly mutex: AsyncMutex;
  readonly depth: number;
  active: boolean;
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * Async facade over the synchronous better-sqlite3 library.
 *
 * Durability (decision PERF-03): `journal_mode=WAL` with `synchronous=NORMAL` plus a group-commit barrier.
 * A COMMIT appends the transaction to the WAL without an fsync (NORMAL); the transaction's promise then
 * resolves only once an fsync of the WAL that started after that COMMIT has completed. The fsync runs on
 * libuv's thread pool, so the event loop keeps serving while it runs, and every transaction that commits
 * while one fsync is in flight shares the next one: under concurrent writes one fsync makes a whole group
 * durable. An acknowledged write therefore survives power loss and a kernel crash, as with FULL (which
 * fsyncs inside every COMMIT, on the event loop). SQLite itself syncs the WAL before each checkpoint and
 * the database after it, so frames the WAL reuses are already safe in the database file. A read outside a
 * transaction that may have seen a commit not yet durable waits for that commit's fsync too, so nothing a
 * crash could take back is ever shown.
 *
 * Concurrency: one connection per driver. Transactions are serialized by an async mutex and open with
 * `BEGIN IMMEDIATE`, which takes SQLite's write lock up front, so a read-modify-write inside is race-free
 * against this process and against other processes (or other drivers) on the same file. Waiting for the
 * write lock is done with async retries, never with SQLite's synchronous busy handler: a busy handler
 * would block the event loop, and if the lock holder is another driver in the same process, the holder
 * could never finish. Reads outside a transaction wait for the mutex so they never see another flow's
 * uncommitted writes on the shared connection.
 */
/**
 * better-sqlite3's addon where `npm ci` puts it (prebuilt or compiled), named directly (PERF-192): without it
 * the package's `bindings` helper tries a dozen paths before that one, a few milliseconds of every start.
 * Elsewhere (a debug build), the package finds it as before.
 */
const NATIVE_BINDING: string | undefined = (() => {
  try {
    return createRequire(import.meta.url).resolve('better-sqlite3/build/Release/better_sqlite3.node');
  } catch {
    return undefined;
  }
})();

export class SqliteDriver implements RootDriver {
  readonly dialect = 'sqlite' as const;
  readonly forUpdate = '';
  readonly path: string;
  readonly #db: Database.Database;
  readonly #busyTimeoutMs: number;
  readonly #mutex = new AsyncMutex();
  readonly #context = new TransactionContext<Scope>();
  readonly #statements = new Map<string, Database.Statement>();
  #closed = false;
  /** Whether the open transaction has run a statement that writes (only those need the barrier). */
  #dirty = false;
  /** Transactions that wrote and committed, and how many of them an fsync of the WAL covers. */
  #committed = 0;
  #durable = 0;
  #syncs = 0;
  #syncing: Promise<void> | null = null;
  /** Whether `#syncing` has fixed the commits it covers and is in its fsync (PERF-141). */
  #syncRunning = false;
  #wal: FileHandle | null = null;

  constructor(options: SqliteDriverOptions) {
    this.path = options.path;
    this.#busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true });
    this.#db = new Database(options.path, { timeout: this.#busyTimeoutMs, ...(NATIVE_BINDING ? { nativeBinding: NATIVE_BINDING } : {}) });
    try {
      const mode = this.#db.pragma('journal_mode = WAL', { simple: true });
      if (mode !== 'wal' && options.path !== ':memory:') {
        throw new Error(`SQLite refused WAL mode on ${options.path} (got ${String(mode)})`);
      }
      this.#db.pragma(options.path === ':memory:' ? 'synchronous = FULL' : 'synchronous = NORMAL');
      this.#db.pragma('foreign_keys = ON');
      // Waiting for another connection's write lock is done by async retries in `#beginImmediate`, never by
      // SQLite's busy handler, which would block the event loop (set once here, not per transaction).
      this.#db.pragma('busy_timeout = 0');
    } catch (err) {
      this.#db.close();
      throw err;
    }
  }

  /** Current value of a pragma, for diagnostics and tests. */
  pragma(name: string): unknown {
    return this.#db.pragma(name, { simple: true });
  }

  /**
   * A statement that writes (`INSERT ... RETURNING`) is routed through a transaction, like `run`. Not
   * `async`, nor is `#outside`'s free path: a read answered at once takes one promise instead of three
   * (each with the promise hooks of the transactions' AsyncLocalStorage), PERF-121.
   */
  get<T extends object>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined> {
    let statement: Database.Statement;
    try {
      // Prepared (or found) once per read: it was looked up, and its place refreshed, twice (PERF-121).
      statement = this.#preparedOrMapped(sql);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    if (!statement.readonly) return this.transaction((tx) => tx.get<T>(sql, params));
    return this.#outside(() => this.#getWith<T>(statement, params));
  }

  all<T extends object>(sql: string, params?: readonly SqlParam[]): Promise<T[]> {
    let statement: Database.Statement;
    try {
      statement = this.#preparedOrMapped(sql);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    if (!statement.readonly) return this.transaction((tx) => tx.all<T>(sql, params));
    return this.#outside(() => this.#allWith<T>(statement, params));
  }

  /** `all`'s rows as arrays (better-sqlite3's raw mode): a read only, outside or inside a transaction (PERF-140). */
  values(sql: string, params?: readonly SqlParam[]): Promise<unknown[][]> {
    let statement: Database.Statement;
    try {
      statement = this.#preparedOrMapped(sql);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    if (!statement.readonly) return Promise.reject(new TypeError('values() is for statements that only read'));
    return this.#outside(() => rawRows(statement, params));
  }

  /** A lone write is a one-statement transaction, so it waits for the write lock asynchronously too. */
  run(sql: string, params?: readonly SqlParam[]): Promise<RunResult> {
    return this.transaction((tx) => tx.run(sql, params));
  }

  async transaction<T>(fn: (tx: Driver) => Promise<T>): Promise<T> {
    this.#assertOpen();
    this.#assertNotInside('transaction');
    let commit = 0;
    // A free connection is taken, and the write lock tried, without a promise each (PERF-80).
    const release = this.#mutex.tryAcquire() ?? (await this.#mutex.acquire());
    let result: T;
    try {
      this.#assertOpen();
      if (!this.#tryBeginImmediate()) await this.#beginImmediate();
      this.#dirty = false;
      const scope: Scope = { parent: null, mutex: new AsyncMutex(), depth: 0, active: true };
      try {
        result = await this.#context.runRoot(scope, () => fn(new SqliteTransaction(this, scope)));
      } catch (err) {
        scope.active = false;
        this.#rollback();
        throw err;
      }
      scope.active = false;
      try {
        this.#execute('COMMIT');
      } catch (err) {
        this.#rollback();
        throw mapSqliteError(err);
      }
      if (this.#dirty) {
        this.#committed += 1;
        commit = this.#committed;
      }
    } finally {
      release();
    }
    // Outside the mutex: the next transactions commit while this one's fsync runs, and share the next.
    if (commit > 0) await this.#durableThrough(commit);
    return result;
  }

  /** Commits and the fsyncs that made them durable, since the driver opened (group commit, PERF-03). */
  durability(): { commits: number; syncs: number } {
    return { commits: this.#committed, syncs: this.#syncs };
  }

  /** Resolves once commit number `commit` is on disk: waits for an fsync that started after it. */
  async #durableThrough(commit: number): Promise<void> {
    while (this.#durable < commit) {
      this.#syncing ??= this.#syncWal();
      await this.#syncing;
    }
  }

  async #syncWal(): Promise<void> {
    try {
      // Not at once, but after this turn of the event loop has run what is ready: requests woken together
      // (by the previous fsync, or by a burst of arrivals) commit in the same turn and share this fsync,
      // where starting it at the first commit left the others the whole next one to wait for (PERF-81).
      if (this.path !== ':memory:') await setImmediate();
      const through = this.#committed;
      this.#syncRunning = true;
      if (this.path !== ':memory:') {
        if (!this.#wal) {
          // The WAL's directory entry and the database file's header must be durable too: once, here.
          for (const path of [dirname(this.path), this.path]) {
            const handle = await open(path, 'r');
            try {
              await handle.sync();
            } finally {
              await handle.close();
            }
          }
          this.#wal = await open(`${this.path}-wal`, 'r+');
        }
        await this.#wal.datasync();
        this.#syncs += 1;
      }
      this.#durable = Math.max(this.#durable, through);
    } finally {
      this.#syncing = null;
      this.#syncRunning = false;
    }
  }

  /**
   * The WAL's fsync running now, once it has fixed the commits it covers (not while it waits for its
   * turn, when a commit still rides on it): a commit made before it settles needs the next one.
   */
  syncRunning(): Promise<void> | null {
    return this.#syncRunning ? this.#syncing : null;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#assertNotInside('close');
    const release = await this.#mutex.acquire();
    try {
      if (this.#closed) return;
      // Transactions still waiting for their fsync get it before the connection goes away.
      await this.#durableThrough(this.#committed);
      this.#closed = true;
      this.#statements.clear();
      this.#db.close();
      await this.#wal?.close();
      this.#wal = null;
    } finally {
      release();
    }
  }

  /** @internal used by SqliteTransaction */
  async inScope<T>(scope: Scope, op: () => T): Promise<T> {
    this.#assertCallerMayUse(scope);
    if (!scope.mutex.locked) {
      // A statement is synchronous: with no other flow of this scope waiting or running, nothing can start
      // between this check and its end, so it needs no turn of the mutex (as reads outside, PERF-23; PERF-32).
      assertActive(scope);
      return op();
    }
    const release = await scope.mutex.acquire();
    try {
      assertActive(scope);
      return op();
    } finally {
      release();
    }
  }

  /** @internal used by SqliteTransaction */
  async savepoint<T>(parent: Scope, fn: (tx: Driver) => Promise<T>): Promise<T> {
    this.#assertCallerMayUse(parent);
    const release = await parent.mutex.acquire();
    try {
      assertActive(parent);
      const depth = parent.depth + 1;
      const name = `sp_${depth}`;
      this.#execute(`SAVEPOINT ${name}`);
      const scope: Scope = { parent, mutex: new AsyncMutex(), depth, active: true };
      let result: T;
      try {
        result = await this.#context.run(scope, () => fn(new SqliteTransaction(this, scope)));
      } catch (err) {
        scope.active = false;
        if (this.#db.inTransaction) {
          this.#execute(`ROLLBACK TO ${name}`);
          this.#execute(`RELEASE ${name}`);
        }
        throw err;
      }
      scope.active = false;
      this.#execute(`RELEASE ${name}`);
      return result;
    } finally {
      release();
    }
  }

  /** @internal */
  getSync<T extends object>(sql: string, params?: readonly SqlParam[]): T | undefined {
    return this.#get<T>(sql, params);
  }

  /** @internal */
  allSync<T extends object>(sql: string, params?: readonly SqlParam[]): T[] {
    return this.#all<T>(sql, params);
  }

  /** @internal */
  valuesSync(sql: string, params?: readonly SqlParam[]): unknown[][] {
    let statement: Database.Statement;
    try {
      statement = this.#prepare(sql);
    } catch (err) {
      throw mapSqliteError(err);
    }
    if (!statement.readonly) throw new TypeError('values() is for statements that only read');
    return rawRows(statement, params);
  }

  /** @internal */
  runSync(sql: string, params?: readonly SqlParam[]): RunResult {
    try {
      const statement = this.#prepare(sql);
      if (!statement.readonly) this.#dirty = true;
      const info = statement.run(...normalizeParams(params));
      return { changes: info.changes };
    } catch (err) {
      throw mapSqliteError(err);
    }
  }

  #get<T extends object>(sql: string, params?: readonly SqlParam[]): T | undefined {
    try {
      const statement = this.#prepare(sql);
      if (!statement.readonly) this.#dirty = true;
      return statement.get(...normalizeParams(params)) as T | undefined;
    } catch (err) {
      throw mapSqliteError(err);
    }
  }

  #all<T extends object>(sql: string, params?: readonly SqlParam[]): T[] {
    try {
      const statement = this.#prepare(sql);
      if (!statement.readonly) this.#dirty = true;
      return statement.all(...normalizeParams(params)) as T[];
    } catch (err) {
      throw mapSqliteError(err);
    }
  }

  #outside<T>(op: () => T): Promise<T> {
    let result: T;
    let seen: number;
    try {
      this.#assertOpen();
      this.#assertNotInside('query');
      if (this.#mutex.locked) return this.#outsideQueued(op);
      // Nothing holds the connection, and a read is synchronous: nothing can start between this check
      // and its end, so it needs no turn of the mutex (an await per statement, PERF-23).
      seen = this.#committed;
      result = op();
    } catch (err) {
      return Promise.reject(err as Error);
    }
    // Every commit this read could have seen; it answers only once they are durable.
    if (this.#durable < seen) return this.#durableThrough(seen).then(() => result);
    return Promise.resolve(result);
  }

  async #outsideQueued<T>(op: () => T): Promise<T> {
    let result: T;
    let seen: number;
    const release = await this.#mutex.acquire();
    try {
      this.#assertOpen();
      seen = this.#committed;
      result = op();
    } finally {
      release();
    }
    if (this.#durable < seen) await this.#durableThrough(seen);
    return result;
  }

  #preparedOrMapped(sql: string): Database.Statement {
    try {
      return this.#prepare(sql);
    } catch (err) {
      throw mapSqliteError(err);
    }
  }

  /** A read statement outside a transaction (it writes nothing, so `#dirty` stays as it is). */
  #getWith<T extends object>(statement: Database.Statement, params?: readonly SqlParam[]): T | undefined {
    try {
      return statement.get(...normalizeParams(params)) as T | undefined;
    } catch (err) {
      throw mapSqliteError(err);
    }
  }

  #allWith<T extends object>(statement: Database.Statement, params?: readonly SqlParam[]): T[] {
    try {
      return statement.all(...normalizeParams(params)) as T[];
    } catch (err) {
      throw mapSqliteError(err);
    }
  }

  #prepare(sql: string): Database.Statement {
    this.#assertOpen();
    let statement = this.#statements.get(sql);
    if (statement) {
      // Refresh its place so the cache evicts the least recently used statement.
      this.#statements.delete(sql);
      this.#statements.set(sql, statement);
      return statement;
    }
    statement = this.#db.prepare(sql);
    this.#statements.set(sql, statement);
    if (this.#statements.size > STATEMENT_CACHE_SIZE) {
      const oldest = this.#statements.keys().next().value;
      if (oldest !== undefined) this.#statements.delete(oldest);
    }
    return statement;
  }

  #execute(sql: string): void {
    const statement = this.#prepare(sql);
    if (statement.reader) statement.get();
    else statement.run();
  }

  /** `BEGIN IMMEDIATE` once: false when another connection holds the write lock. */
  #tryBeginImmediate(): boolean {
    try {
      this.#execute('BEGIN IMMEDIATE');
      return true;
    } catch (err) {
      if (!isBusy(err)) throw mapSqliteError(err);
      return false;
    }
  }

  /** Waits for another connection's write lock with short async retries (the first try has failed). */
  async #beginImmediate(): Promise<void> {
    const deadline = Date.now() + this.#busyTimeoutMs;
    let delay = 1;
    for (;;) {
      if (Date.now() >= deadline) throw new StoreBusyError();
      // Short, jittered polls: SQLite keeps no queue of waiters, so a long sleep lets a busy writer in
      // another process win the lock again and again.
      await sleep(delay + Math.random() * delay);
      delay = Math.min(delay * 2, 8);
      if (this.#tryBeginImmediate()) return;
    }
  }

  #rollback(): void {
    if (this.#closed || !this.#db.inTransaction) return;
    try {
      this.#execute('ROLLBACK');
    } catch {
      // SQLite may already have rolled back (e.g. after SQLITE_FULL); nothing is left to undo.
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreClosedError();
  }

  /** Called on the root driver from inside one of its own transactions, a call would wait forever for
   * the mutex that transaction holds (or, for a query, read around it). */
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

class SqliteTransaction implements Driver {
  readonly dialect = 'sqlite' as const;
  readonly forUpdate = '';
  readonly #driver: SqliteDriver;
  readonly #scope: Scope;

  constructor(driver: SqliteDriver, scope: Scope) {
    this.#driver = driver;
    this.#scope = scope;
  }

  get<T extends object>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined> {
    return this.#driver.inScope(this.#scope, () => this.#driver.getSync<T>(sql, params));
  }

  all<T extends object>(sql: string, params?: readonly SqlParam[]): Promise<T[]> {
    return this.#driver.inScope(this.#scope, () => this.#driver.allSync<T>(sql, params));
  }

  values(sql: string, params?: readonly SqlParam[]): Promise<unknown[][]> {
    return this.#driver.inScope(this.#scope, () => this.#driver.valuesSync(sql, params));
  }

  run(sql: string, params?: readonly SqlParam[]): Promise<RunResult> {
    return this.#driver.inScope(this.#scope, () => this.#driver.runSync(sql, params));
  }

  transaction<T>(fn: (tx: Driver) => Promise<T>): Promise<T> {
    return this.#driver.savepoint(this.#scope, fn);
  }
}

/**
 * A statement's rows as arrays. The statement is shared with `get`/`all` through the cache, so its raw
 * mode is set for this one synchronous call and always put back.
 */
function rawRows(statement: Database.Statement, params?: readonly SqlParam[]): unknown[][] {
  try {
    statement.raw(true);
    try {
      return statement.all(...normalizeParams(params)) as unknown[][];
    } finally {
      statement.raw(false);
    }
  } catch (err) {
    throw mapSqliteError(err);
  }
}

function assertActive(scope: Scope): void {
  if (!scope.active) {
    throw new TransactionMisuseError('this transaction has already ended; its handle cannot be used any more');
  }
}

function isLive(scope: Scope): boolean {
  for (let s: Scope | null = scope; s; s = s.parent) if (!s.active) return false;
  return true;
}

function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || code === 'SQLITE_LOCKED');
}

export function mapSqliteError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    const constraint = err.message.replace(/^UNIQUE constraint failed: /, '');
    return new UniqueViolationError(constraint, { cause: err });
  }
  if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return new ForeignKeyViolationError({ cause: err });
  if (isBusy(err)) return new StoreBusyError(undefined, { cause: err });
  return err;
}
