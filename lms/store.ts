/**
 * The reference LMS's own store (decisions LTI-30, LTI-80): its tables, prefixed `lms_`, in one of two
 * dialects behind one async interface.
 *
 * - SQLite through better-sqlite3: a file when the LMS must outlive a restart (`LMS_DB_FILE`, the
 *   Sandbox's `DATA_DIR/sandbox-lms.sqlite` beside the service's SQLite store) or `:memory:` for a test.
 * - PostgreSQL through `pg`: tables in a schema the caller names (the connections' `search_path`), so
 *   several LMS processes on one database are one LMS (the Sandbox's LMS when the service runs on
 *   PostgreSQL: every instance answers for it, with its store in the service's database).
 *
 * It shares nothing with the service's store but, on PostgreSQL, the database: the platform and the tool
 * only meet over HTTP. What must be single-use or ordered across processes is one SQL statement (a
 * conditional DELETE, UPDATE or upsert whose `changes` says who won), never a check in process memory.
 */
import { mkdirSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';

/** Every table, in creation order (foreign keys point backwards). */
export const LMS_TABLES = [
  'lms_platform_keys',
  'lms_settings',
  'lms_registration_tokens',
  'lms_registrations',
  'lms_deployments',
  'lms_deployment_settings',
  'lms_users',
  'lms_courses',
  'lms_enrolments',
  'lms_resource_links',
  'lms_line_items',
  'lms_scores',
  'lms_messages',
  'lms_deep_link_requests',
  'lms_access_tokens',
  'lms_used_assertions',
  'lms_counters',
] as const;

// One text for both dialects: BIGINT and DOUBLE PRECISION have SQLite's INTEGER and REAL affinities, and
// PostgreSQL's INTEGER would overflow on milliseconds and its REAL lose a score's digits.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS lms_platform_keys (
  kid TEXT PRIMARY KEY,
  private_jwk TEXT NOT NULL,
  public_jwk TEXT NOT NULL,
  created BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS lms_settings (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS lms_registration_tokens (
  token TEXT PRIMARY KEY,
  expires BIGINT NOT NULL,
  client_id TEXT
);
CREATE TABLE IF NOT EXISTS lms_registrations (
  client_id TEXT PRIMARY KEY,
  client_name TEXT NOT NULL,
  initiate_login_uri TEXT NOT NULL,
  redirect_uris TEXT NOT NULL,
  jwks_uri TEXT NOT NULL,
  target_link_uri TEXT NOT NULL,
  domain TEXT NOT NULL,
  scopes TEXT NOT NULL,
  grants_line_item_scope INTEGER NOT NULL DEFAULT 1,
  custom_parameters TEXT NOT NULL,
  messages TEXT NOT NULL,
  claims TEXT NOT NULL,
  document TEXT NOT NULL,
  created BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS lms_deployments (
  deployment_id TEXT PRIMARY KEY,
  client_id TEXT NOT NULL REFERENCES lms_registrations(client_id),
  title TEXT NOT NULL,
  created BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS lms_deployment_settings (
  deployment_id TEXT PRIMARY KEY REFERENCES lms_deployments(deployment_id),
  settings TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS lms_users (
  sub TEXT PRIMARY KEY,
  given_name TEXT NOT NULL,
  family_name TEXT NOT NULL,
  email TEXT NOT NULL,
  created BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS lms_courses (
  id TEXT PRIMARY KEY,
  deployment_id TEXT NOT NULL REFERENCES lms_deployments(deployment_id),
  title TEXT NOT NULL,
  label TEXT NOT NULL,
  history TEXT NOT NULL,
  created BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS lms_enrolments (
  course_id TEXT NOT NULL REFERENCES lms_courses(id),
  sub TEXT NOT NULL REFERENCES lms_users(sub),
  roles TEXT NOT NULL,
  PRIMARY KEY (course_id, sub)
);
CREATE TABLE IF NOT EXISTS lms_resource_links (
  id TEXT PRIMARY KEY,
  course_id TEXT NOT NULL REFERENCES lms_courses(id),
  title TEXT NOT NULL,
  url TEXT,
  custom TEXT NOT NULL,
  created BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS lms_line_items (
  id TEXT PRIMARY KEY,
  seq BIGINT NOT NULL,
  course_id TEXT NOT NULL REFERENCES lms_courses(id),
  label TEXT NOT NULL,
  score_maximum DOUBLE PRECISION NOT NULL,
  resource_id TEXT,
  resource_link_id TEXT,
  tag TEXT,
  start_date_time TEXT,
  end_date_time TEXT,
  refuses_scores_with INTEGER,
  created BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS lms_scores (
  line_item_id TEXT NOT NULL REFERENCES lms_line_items(id),
  sub TEXT NOT NULL,
  score_given DOUBLE PRECISION,
  score_maximum DOUBLE PRECISION,
  comment TEXT,
  activity_progress TEXT NOT NULL,
  grading_progress TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  timestamp_us BIGINT NOT NULL,
  received BIGINT NOT NULL,
  PRIMARY KEY (line_item_id, sub)
);
CREATE TABLE IF NOT EXISTS lms_messages (
  hint TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  client_id TEXT NOT NULL,
  deployment_id TEXT NOT NULL,
  course_id TEXT NOT NULL,
  resource_link_id TEXT,
  sub TEXT NOT NULL,
  target_link_uri TEXT NOT NULL,
  storage_target TEXT,
  return_url TEXT,
  data TEXT,
  expires BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS lms_deep_link_requests (
  data TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  deployment_id TEXT NOT NULL,
  course_id TEXT NOT NULL,
  expires BIGINT NOT NULL,
  answered INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS lms_access_tokens (
  token_hash TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  scopes TEXT NOT NULL,
  expires BIGINT NOT NULL,
  issued BIGINT
);
CREATE TABLE IF NOT EXISTS lms_used_assertions (
  client_id TEXT NOT NULL,
  jti TEXT NOT NULL,
  expires BIGINT NOT NULL,
  PRIMARY KEY (client_id, jti)
);
CREATE TABLE IF NOT EXISTS lms_counters (
  name TEXT PRIMARY KEY,
  value BIGINT NOT NULL
);
`;

/**
 * Columns added to a table after it first shipped (LTI-30's rule: additive changes only), each made on a
 * store of before it: `CREATE TABLE IF NOT EXISTS` leaves an existing table as it was.
 */
const ADDED_COLUMNS: readonly { table: (typeof LMS_TABLES)[number]; column: string; type: string }[] = [
  // When an access token was issued: a deployment's own lifetime counts from it (decision LTI-71).
  { table: 'lms_access_tokens', column: 'issued', type: 'BIGINT' },
];

export type LmsParam = string | number | null;

export interface LmsRunResult {
  /** Rows the statement inserted, updated or deleted: 0 when a conditional write lost. */
  changes: number;
}

/**
 * The store, or one transaction of it. Statements use `?` placeholders. Inside `transaction`, use only the
 * handle it gives (a `Platform` copy whose `db` is that handle): the store itself would wait for the
 * transaction on SQLite, and take another connection on PostgreSQL. A failed statement ends the
 * transaction (PostgreSQL refuses the rest), so nothing inside one catches and carries on.
 */
export interface LmsDb {
  readonly dialect: 'sqlite' | 'postgres';
  get<T extends object>(sql: string, params?: readonly LmsParam[]): Promise<T | undefined>;
  all<T extends object>(sql: string, params?: readonly LmsParam[]): Promise<T[]>;
  run(sql: string, params?: readonly LmsParam[]): Promise<LmsRunResult>;
  /** All or nothing; inside a transaction, runs `fn` as part of it. */
  transaction<T>(fn: (tx: LmsDb) => Promise<T>): Promise<T>;
}

export interface LmsStore extends LmsDb {
  close(): Promise<void>;
}

/** Where the LMS keeps its store: a SQLite file (or `:memory:`), or a PostgreSQL database and schema. */
export type LmsStoreLocation =
  | { file: string }
  | {
      databaseUrl: string;
      /** The schema of the `lms_` tables; default: the role's search path, usually `public`. */
      schema?: string;
      /** Connections of this process's pool (default 4: the LMS shares the database with the service). */
      maxConnections?: number;
    };

export async function openLmsStore(location: LmsStoreLocation): Promise<LmsStore> {
  if ('file' in location) return SqliteLmsStore.open(location.file);
  return PostgresLmsStore.open(location);
}

// ---------------------------------------------------------------------------------------------------------
// SQLite

const NO_PARAMS: readonly LmsParam[] = [];

/** `undefined` bound as NULL; a list without one (every call of the LMS's own code) is bound as it is. */
function sqliteParams(params: readonly LmsParam[] | undefined): readonly LmsParam[] {
  if (!params) return NO_PARAMS;
  return params.includes(undefined as unknown as LmsParam) ? params.map((p) => (p === undefined ? null : p)) : params;
}

/**
 * One connection: statements run synchronously, and a transaction holds the connection until it ends.
 *
 * Durability (PERF-74, as the service's store has it, PERF-03): a file store runs WAL with
 * `synchronous=NORMAL`, so a commit appends to the WAL without an fsync inside the statement (FULL's
 * fsync blocked the event loop on every write: the Sandbox's LMS shares it with the service); a write is
 * answered only once an fsync of the WAL that started after its commit has completed, on libuv's thread
 * pool, and writes committing meanwhile share the next fsync. Reads do not wait for fsyncs in flight (the
 * service's store makes them wait): a score is 4 reads and a write, and under steady writes each read would
 * wait for one or two fsyncs, which cost more throughput than the fsync on the loop did. So a reader may see
 * a write a few milliseconds before it is durable; its writer has not been answered yet.
 */
class SqliteLmsStore implements LmsStore {
  readonly dialect = 'sqlite' as const;
  readonly #db: Database.Database;
  readonly #file: string;
  readonly #onFile: boolean;
  readonly #statements = new Map<string, Database.Statement>();
  /** Settled when the open transaction ends; other statements wait for it, so none slips into it. */
  #busy: Promise<void> | null = null;
  /** Writes committed, and how many of them an fsync has made durable (group commit). */
  #committed = 0;
  #durable = 0;
  #syncs = 0;
  #syncing: Promise<void> | null = null;
  #wal: FileHandle | null = null;

  private constructor(db: Database.Database, file: string) {
    this.#db = db;
    this.#file = file;
    this.#onFile = file !== ':memory:';
  }

  static open(file: string): SqliteLmsStore {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    const db = new Database(file);
    try {
      if (file !== ':memory:') {
        db.pragma('journal_mode = WAL');
        db.pragma('synchronous = NORMAL');
      }
      db.pragma('foreign_keys = ON');
      db.pragma('busy_timeout = 5000');
      db.transaction(() => {
        renameUnprefixedTables(db);
        db.exec(SCHEMA);
        addSqliteColumns(db);
      }).immediate();
    } catch (err) {
      db.close();
      throw err;
    }
    return new SqliteLmsStore(db, file);
  }

  #prepare(sql: string): Database.Statement {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  async #idle(): Promise<void> {
    while (this.#busy) await this.#busy;
  }

  /** After a write outside a transaction: it waits for its fsync (a read does not, see above). */
  async #settled(): Promise<void> {
    this.#committed += 1;
    await this.#durableThrough(this.#committed);
  }

  /** Whether a statement just run outside a transaction must wait for an fsync: a write to a file. */
  #mustSettle(statement: Database.Statement): boolean {
    return this.#onFile && !statement.readonly;
  }

  /** Writes committed and the fsyncs that made them durable, since the store opened (PERF-74). */
  durability(): { commits: number; syncs: number } {
    return { commits: this.#committed, syncs: this.#syncs };
  }

  async #durableThrough(commit: number): Promise<void> {
    while (this.#durable < commit) {
      this.#syncing ??= this.#syncWal();
      await this.#syncing;
    }
  }

  async #syncWal(): Promise<void> {
    const through = this.#committed;
    try {
      if (!this.#wal) {
        // The WAL's directory entry and the database file's header must be durable too: once, here.
        for (const path of [dirname(this.#file), this.#file]) {
          const handle = await open(path, 'r');
          try {
            await handle.sync();
          } finally {
            await handle.close();
          }
        }
        this.#wal = await open(`${this.#file}-wal`, 'r+');
      }
      await this.#wal.datasync();
      this.#syncs += 1;
      this.#durable = Math.max(this.#durable, through);
    } finally {
      this.#syncing = null;
    }
  }

  /** @internal the statements of the store and of its transaction */
  getNow<T>(sql: string, params?: readonly LmsParam[]): T | undefined {
    return this.#prepare(sql).get(...sqliteParams(params)) as T | undefined;
  }

  /** @internal */
  allNow<T>(sql: string, params?: readonly LmsParam[]): T[] {
    return this.#prepare(sql).all(...sqliteParams(params)) as T[];
  }

  /** @internal */
  runNow(sql: string, params?: readonly LmsParam[]): LmsRunResult {
    return { changes: this.#prepare(sql).run(...sqliteParams(params)).changes };
  }

  // Outside a transaction each statement waits only when it must (an open transaction, a write's fsync):
  // every `await` is a turn of the microtask queue on a score's path (PERF-113).
  async get<T extends object>(sql: string, params?: readonly LmsParam[]): Promise<T | undefined> {
    while (this.#busy) await this.#busy;
    const statement = this.#prepare(sql);
    const row = statement.get(...sqliteParams(params)) as T | undefined;
    if (this.#mustSettle(statement)) await this.#settled();
    return row;
  }

  async all<T extends object>(sql: string, params?: readonly LmsParam[]): Promise<T[]> {
    while (this.#busy) await this.#busy;
    const statement = this.#prepare(sql);
    const rows = statement.all(...sqliteParams(params)) as T[];
    if (this.#mustSettle(statement)) await this.#settled();
    return rows;
  }

  async run(sql: string, params?: readonly LmsParam[]): Promise<LmsRunResult> {
    while (this.#busy) await this.#busy;
    const statement = this.#prepare(sql);
    const result = { changes: statement.run(...sqliteParams(params)).changes };
    if (this.#mustSettle(statement)) await this.#settled();
    return result;
  }

  async transaction<T>(fn: (tx: LmsDb) => Promise<T>): Promise<T> {
    await this.#idle();
    let release: () => void = () => undefined;
    this.#busy = new Promise<void>((resolve) => (release = resolve));
    let result: T;
    try {
      this.#db.exec('BEGIN IMMEDIATE');
      try {
        result = await fn(new SqliteLmsTransaction(this));
        this.#db.exec('COMMIT');
      } catch (err) {
        if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
        throw err;
      }
    } finally {
      this.#busy = null;
      release();
    }
    // Outside the transaction's hold: the next statements run while this commit's fsync does.
    if (this.#file !== ':memory:') {
      this.#committed += 1;
      await this.#durableThrough(this.#committed);
    }
    return result;
  }

  async close(): Promise<void> {
    await this.#idle();
    // Writes still waiting for their fsync get it before the connection goes away.
    if (this.#file !== ':memory:' && this.#db.open) await this.#durableThrough(this.#committed);
    if (this.#db.open) this.#db.close();
    await this.#wal?.close();
    this.#wal = null;
  }
}

class SqliteLmsTransaction implements LmsDb {
  readonly dialect = 'sqlite' as const;
  constructor(private readonly store: SqliteLmsStore) {}
  get<T extends object>(sql: string, params?: readonly LmsParam[]): Promise<T | undefined> {
    return Promise.resolve(this.store.getNow<T>(sql, params));
  }
  all<T extends object>(sql: string, params?: readonly LmsParam[]): Promise<T[]> {
    return Promise.resolve(this.store.allNow<T>(sql, params));
  }
  run(sql: string, params?: readonly LmsParam[]): Promise<LmsRunResult> {
    return Promise.resolve(this.store.runNow(sql, params));
  }
  transaction<T>(fn: (tx: LmsDb) => Promise<T>): Promise<T> {
    return fn(this);
  }
}

function addSqliteColumns(db: Database.Database): void {
  for (const { table, column, type } of ADDED_COLUMNS) {
    const columns = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
    if (!columns.some((c) => c.name === column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
  }
}

/**
 * A file made before the tables were prefixed (LTI-80) keeps its data: each old table is renamed, and
 * SQLite rewrites the foreign keys that name it.
 */
function renameUnprefixedTables(db: Database.Database): void {
  const existing = new Set((db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name));
  for (const table of LMS_TABLES) {
    const old = table.slice('lms_'.length);
    if (existing.has(old) && !existing.has(table)) db.exec(`ALTER TABLE "${old}" RENAME TO ${table}`);
  }
}

// ---------------------------------------------------------------------------------------------------------
// PostgreSQL

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const INT8_OID = 20;

/** BIGINT as a JS number, as SQLite hands it out; every integer the LMS keeps is below 2^53. */
function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RangeError(`PostgreSQL returned the integer ${text}, beyond Number.MAX_SAFE_INTEGER`);
  return value;
}

/** Per-pool parsers, so the process-wide `pg.types` stays as other code (the service's store) expects it. */
const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (format !== 'binary' && oid === INT8_OID) return parseInt8;
    return format === 'binary' ? pg.types.getTypeParser(oid, 'binary') : pg.types.getTypeParser(oid, 'text');
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/** `?` placeholders as `$1, $2, …`; the LMS's SQL has no `?` inside a literal. */
function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/** Above this many texts the rest run unnamed: each name costs every pooled connection a kept plan. */
const NAMED_LIMIT = 300;
/** `*` as a row's columns (`SELECT *`, `RETURNING *`), not `count(*)`. */
const WHOLE_ROW = /(?<!count\()\*/i;
/** Each text's numbered form, and its name (null: it stays unnamed). */
const prepared = new Map<string, { text: string; name: string | null }>();
let named = 0;

/**
 * A statement with parameters runs as a named prepared statement, as the service's do (PERF-130): parsed
 * once per pooled connection and its plan kept, instead of parsed and planned on every execution.
 * Unnamed: texts without parameters (the schema's DDL, for the simple protocol), and texts reading whole
 * rows, whose kept plan PostgreSQL refuses once a newer LMS sharing the schema adds a column.
 */
function statement(sql: string, params: readonly LmsParam[] | undefined): pg.QueryConfig {
  const values = pgParams(params);
  let known = prepared.get(sql);
  if (known === undefined) {
    const text = numbered(sql);
    if (prepared.size >= NAMED_LIMIT * 4) return { text, values };
    known = { text, name: values.length > 0 && named < NAMED_LIMIT && !WHOLE_ROW.test(sql) ? `lms_${named++}` : null };
    prepared.set(sql, known);
  }
  return known.name === null || values.length === 0 ? { text: known.text, values } : { name: known.name, text: known.text, values };
}

function pgParams(params: readonly LmsParam[] | undefined): LmsParam[] {
  return params ? params.map((p) => (p === undefined ? null : p)) : [];
}

/**
 * A pool on the database; transactions at READ COMMITTED, so every single-use or ordered write is one
 * conditional statement whose row lock makes a racing process wait and then find it taken.
 */
class PostgresLmsStore implements LmsStore {
  readonly dialect = 'postgres' as const;
  readonly #pool: pg.Pool;

  private constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  static async open(location: { databaseUrl: string; schema?: string; maxConnections?: number }): Promise<PostgresLmsStore> {
    const { schema } = location;
    if (schema !== undefined && !SCHEMA_NAME.test(schema)) throw new RangeError(`schema must be a lower-case SQL identifier, got ${JSON.stringify(schema)}`);
    if (schema !== undefined && new URL(location.databaseUrl).searchParams.has('options')) {
      // pg lets the URL's `options` replace ours wholesale: the schema would be dropped without a word.
      throw new RangeError('give the schema either as the schema option or in the URL options, not both');
    }
    const config: pg.PoolConfig = {
      connectionString: location.databaseUrl,
      max: location.maxConnections ?? 4,
      connectionTimeoutMillis: 10_000,
      application_name: 'tis-lms',
      types: TYPES,
    };
    if (schema !== undefined) config.options = `-c search_path=${schema}`;
    const pool = new pg.Pool(config);
    pool.on('error', (err) => process.emitWarning(`reference LMS: PostgreSQL connection error (idle pooled connection): ${err.message}`));
    const store = new PostgresLmsStore(pool);
    try {
      // Two processes starting at once on a new schema: CREATE TABLE IF NOT EXISTS alone can still collide
      // in the catalogue, so the first takes a lock (per schema) and the second finds the tables made.
      await store.transaction(async (tx) => {
        await tx.get("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.lms_schema'))");
        for (const statement of SCHEMA.split(';').map((s) => s.trim()).filter(Boolean)) await tx.run(statement);
        for (const { table, column, type } of ADDED_COLUMNS) {
          // Asked first: ALTER TABLE takes the table's strongest lock even when the column is there.
          const there = await tx.get('SELECT 1 AS found FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?', [table, column]);
          if (!there) await tx.run(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
        }
      });
    } catch (err) {
      await pool.end();
      throw err;
    }
    return store;
  }

  async get<T extends object>(sql: string, params?: readonly LmsParam[]): Promise<T | undefined> {
    return (await this.#pool.query<T & pg.QueryResultRow>(statement(sql, params))).rows[0];
  }

  async all<T extends object>(sql: string, params?: readonly LmsParam[]): Promise<T[]> {
    return (await this.#pool.query<T & pg.QueryResultRow>(statement(sql, params))).rows;
  }

  async run(sql: string, params?: readonly LmsParam[]): Promise<LmsRunResult> {
    return { changes: (await this.#pool.query(statement(sql, params))).rowCount ?? 0 };
  }

  async transaction<T>(fn: (tx: LmsDb) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
      try {
        const result = await fn(new PostgresLmsTransaction(client));
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {
          broken = true;
        });
        throw err;
      }
    } finally {
      client.release(broken ? new Error('connection left in an unknown state') : undefined);
    }
  }

  #ending: Promise<void> | null = null;

  /** Ends the pool once; a second close (the host's, then the service's) waits for the first. */
  close(): Promise<void> {
    this.#ending ??= this.#pool.end();
    return this.#ending;
  }
}

class PostgresLmsTransaction implements LmsDb {
  readonly dialect = 'postgres' as const;
  constructor(private readonly client: pg.PoolClient) {}
  async get<T extends object>(sql: string, params?: readonly LmsParam[]): Promise<T | undefined> {
    return (await this.client.query<T & pg.QueryResultRow>(statement(sql, params))).rows[0];
  }
  async all<T extends object>(sql: string, params?: readonly LmsParam[]): Promise<T[]> {
    return (await this.client.query<T & pg.QueryResultRow>(statement(sql, params))).rows;
  }
  async run(sql: string, params?: readonly LmsParam[]): Promise<LmsRunResult> {
    return { changes: (await this.client.query(statement(sql, params))).rowCount ?? 0 };
  }
  transaction<T>(fn: (tx: LmsDb) => Promise<T>): Promise<T> {
    return fn(this);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Rows and the reads every part shares

/** The next value of a named counter: small integers where a profile wants them (Moodle's IDs). */
export async function nextCounter(db: LmsDb, name: string): Promise<number> {
  const row = await db.get<{ value: number }>(
    'INSERT INTO lms_counters (name, value) VALUES (?, 1) ON CONFLICT (name) DO UPDATE SET value = lms_counters.value + 1 RETURNING value',
    [name],
  );
  if (!row) throw new Error(`counter ${name} returned no value`);
  return row.value;
}

export async function getSetting(db: LmsDb, name: string): Promise<string | null> {
  return (await db.get<{ value: string }>('SELECT value FROM lms_settings WHERE name = ?', [name]))?.value ?? null;
}

export async function putSetting(db: LmsDb, name: string, value: string): Promise<void> {
  await db.run('INSERT INTO lms_settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value', [name, value]);
}

export interface RegistrationRow {
  client_id: string;
  client_name: string;
  initiate_login_uri: string;
  redirect_uris: string;
  jwks_uri: string;
  target_link_uri: string;
  domain: string;
  scopes: string;
  grants_line_item_scope: number;
  custom_parameters: string;
  messages: string;
  claims: string;
  document: string;
  created: number;
}

export interface DeploymentRow {
  deployment_id: string;
  client_id: string;
  title: string;
  created: number;
}

export interface UserRow {
  sub: string;
  given_name: string;
  family_name: string;
  email: string;
  created: number;
}

export interface CourseRow {
  id: string;
  deployment_id: string;
  title: string;
  label: string;
  history: string;
  created: number;
}

export interface ResourceLinkRow {
  id: string;
  course_id: string;
  title: string;
  url: string | null;
  custom: string;
  created: number;
}

export interface LineItemRow {
  id: string;
  seq: number;
  course_id: string;
  label: string;
  score_maximum: number;
  resource_id: string | null;
  resource_link_id: string | null;
  tag: string | null;
  start_date_time: string | null;
  end_date_time: string | null;
  refuses_scores_with: number | null;
  created: number;
}

export interface ScoreRow {
  line_item_id: string;
  sub: string;
  score_given: number | null;
  score_maximum: number | null;
  comment: string | null;
  activity_progress: string;
  grading_progress: string;
  timestamp: string;
  timestamp_us: number;
  received: number;
}

export interface MessageRow {
  hint: string;
  kind: 'LtiResourceLinkRequest' | 'LtiDeepLinkingRequest';
  client_id: string;
  deployment_id: string;
  course_id: string;
  resource_link_id: string | null;
  sub: string;
  target_link_uri: string;
  storage_target: string | null;
  return_url: string | null;
  data: string | null;
  expires: number;
}

export async function registrationOf(db: LmsDb, clientId: string): Promise<RegistrationRow | null> {
  return (await db.get<RegistrationRow>('SELECT * FROM lms_registrations WHERE client_id = ?', [clientId])) ?? null;
}

export async function deploymentOf(db: LmsDb, deploymentId: string): Promise<DeploymentRow | null> {
  return (await db.get<DeploymentRow>('SELECT * FROM lms_deployments WHERE deployment_id = ?', [deploymentId])) ?? null;
}

export async function userOf(db: LmsDb, sub: string): Promise<UserRow | null> {
  return (await db.get<UserRow>('SELECT * FROM lms_users WHERE sub = ?', [sub])) ?? null;
}

export async function courseOf(db: LmsDb, id: string): Promise<CourseRow | null> {
  return (await db.get<CourseRow>('SELECT * FROM lms_courses WHERE id = ?', [id])) ?? null;
}

export async function resourceLinkOf(db: LmsDb, id: string): Promise<ResourceLinkRow | null> {
  return (await db.get<ResourceLinkRow>('SELECT * FROM lms_resource_links WHERE id = ?', [id])) ?? null;
}

export async function lineItemOf(db: LmsDb, id: string): Promise<LineItemRow | null> {
  return (await db.get<LineItemRow>('SELECT * FROM lms_line_items WHERE id = ?', [id])) ?? null;
}

export async function enrolmentRoles(db: LmsDb, courseId: string, sub: string): Promise<string[] | null> {
  const row = await db.get<{ roles: string }>('SELECT roles FROM lms_enrolments WHERE course_id = ? AND sub = ?', [courseId, sub]);
  return row ? (JSON.parse(row.roles) as string[]) : null;
}
