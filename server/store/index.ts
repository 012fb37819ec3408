/**
 * The service's data layer. Every read and write of the service goes through the `Store` this module
 * opens; the repositories are written once against the `Driver` seam, over SQLite (the embedded default)
 * or PostgreSQL (several instances of the service on one database).
 *
 * Usage:
 *   const store = await openStore({ dataDir: process.env.DATA_DIR ?? 'data' });
 *   // or, on PostgreSQL: openStore({ databaseUrl: process.env.DATABASE_URL })
 *   const app = await store.apps.get(appId);
 *   await store.transaction(async (tx) => { ... tx.rows ... tx.files ... });   // all or nothing
 *   await store.close();
 */
import { join } from 'node:path';
import type { Dialect, Driver, RootDriver } from './driver.js';
import type { MigrateResult } from './migrations.js';
import { migrate } from './migrations.js';
import { AppsRepo } from './repos/apps.js';
import { AttemptsRepo } from './repos/attempts.js';
import { AuthFailuresRepo } from './repos/auth-failures.js';
import { CredentialEpochRepo } from './repos/credential-epoch.js';
import { ColumnPointsRepo } from './repos/column-points.js';
import { ScoreIdempotencyRepo } from './repos/score-idempotency.js';
import { AuditRepo } from './repos/audit.js';
import { BuildersRepo } from './repos/builders.js';
import { ContextsRepo, MembersRepo, OrganizationsRepo, UsersRepo } from './repos/directory.js';
import { FilesRepo } from './repos/files.js';
import { GradebookRepo } from './repos/gradebook.js';
import { LaunchGradesRepo } from './repos/grades.js';
import { LaunchesRepo } from './repos/launches.js';
import { LocationsRepo } from './repos/locations.js';
import { PickerAnswersRepo } from './repos/picker-answers.js';
import { LtiRepo } from './repos/lti.js';
import { LtiRefusalsRepo } from './repos/lti-refusals.js';
import { PlacementsRepo } from './repos/placements.js';
import { ProvisioningRepo } from './repos/provisioning.js';
import { RowsRepo } from './repos/rows.js';
import { SecretsRepo } from './repos/secrets.js';
import { SandboxMoveRepo } from './repos/sandbox-move.js';
import { SigningKeysRepo } from './repos/signing-keys.js';
import { ApiTokensRepo } from './repos/tokens.js';
import { PostgresDriver } from './postgres.js';
import type { PostgresDriverOptions } from './postgres.js';
import { SqliteDriver } from './sqlite.js';
import type { Clock } from './time.js';
import { systemClock } from './time.js';
import type { PipelinedStore as PipelinedStoreOf } from './pipelined-store.js';
import { pipelinedStore } from './pipelined-store.js';

export interface Repositories {
  apps: AppsRepo;
  builders: BuildersRepo;
  organizations: OrganizationsRepo;
  contexts: ContextsRepo;
  users: UsersRepo;
  members: MembersRepo;
  locations: LocationsRepo;
  placements: PlacementsRepo;
  provisioning: ProvisioningRepo;
  apiTokens: ApiTokensRepo;
  launches: LaunchesRepo;
  rows: RowsRepo;
  secrets: SecretsRepo;
  files: FilesRepo;
  attempts: AttemptsRepo;
  launchGrades: LaunchGradesRepo;
  signingKeys: SigningKeysRepo;
  gradebook: GradebookRepo;
  sandboxMove: SandboxMoveRepo;
  pickerAnswers: PickerAnswersRepo;
  columnPoints: ColumnPointsRepo;
  scoreIdempotency: ScoreIdempotencyRepo;
  authFailures: AuthFailuresRepo;
  credentialEpoch: CredentialEpochRepo;
  audit: AuditRepo;
  lti: LtiRepo;
  ltiRefusals: LtiRefusalsRepo;
}

export interface Store extends Repositories {
  readonly dialect: Dialect;
  /** The driver beneath, for what no repository covers (health checks, operator tooling). */
  readonly driver: RootDriver;
  /** Migrations applied when this store was opened. */
  readonly migrations: MigrateResult;
  /**
   * Runs `fn` with repositories bound to one transaction: everything commits together or not at all.
   * Inside, use only `tx`; calling the store itself from `fn` is refused (it would wait for `fn`).
   */
  transaction<T>(fn: (tx: Repositories) => Promise<T>): Promise<T>;
  /**
   * PostgreSQL: `fn` with one transaction on a connection of its own, sent in few exchanges: its first
   * statements with BEGIN, its writes with COMMIT (PERF-170). Absent on SQLite.
   */
  pipelined?<T>(fn: (tx: PipelinedStore) => Promise<T>): Promise<T>;
  /**
   * Discards what a tool keeps in a course (rows, files, pending uploads, provisioning state) and
   * revokes the tokens issued there, keeping the course's IDs: the Sandbox reset (decision GAP-39).
   * Returns the blob IDs to delete once this resolves.
   */
  discardContextData(appId: string, contextId: string): Promise<{ blobIds: string[] }>;
  close(): Promise<void>;
}

export type OpenStoreOptions = (
  | { dataDir: string }
  | { sqlitePath: string }
  /**
   * PostgreSQL (`postgres://` or `postgresql://`), the service's `DATABASE_URL`. `schema` names the
   * schema holding the tables (default: the role's search path); `maxConnections` sizes this
   * instance's pool (default 10).
   */
  | { databaseUrl: string; schema?: string; maxConnections?: number }
  /** An already open driver; the store takes ownership and closes it. */
  | { driver: RootDriver }
) & {
  /**
   * How long a write waits for another connection's lock before `StoreBusyError`: SQLite's write lock,
   * PostgreSQL's row and table locks (`lock_timeout`). Default 5000 ms.
   */
  busyTimeoutMs?: number;
  clock?: Clock;
};

/** Name of the SQLite file inside `dataDir`. */
export const SQLITE_FILE_NAME = 'tis.sqlite';

export function createRepositories(db: Driver, clock: Clock = systemClock): Repositories {
  const ctx = { db, clock };
  return {
    apps: new AppsRepo(ctx),
    builders: new BuildersRepo(ctx),
    organizations: new OrganizationsRepo(ctx),
    contexts: new ContextsRepo(ctx),
    users: new UsersRepo(ctx),
    members: new MembersRepo(ctx),
    locations: new LocationsRepo(ctx),
    placements: new PlacementsRepo(ctx),
    provisioning: new ProvisioningRepo(ctx),
    apiTokens: new ApiTokensRepo(ctx),
    launches: new LaunchesRepo(ctx),
    rows: new RowsRepo(ctx),
    secrets: new SecretsRepo(ctx),
    files: new FilesRepo(ctx),
    attempts: new AttemptsRepo(ctx),
    launchGrades: new LaunchGradesRepo(ctx),
    signingKeys: new SigningKeysRepo(ctx),
    gradebook: new GradebookRepo(ctx),
    sandboxMove: new SandboxMoveRepo(ctx),
    pickerAnswers: new PickerAnswersRepo(ctx),
    columnPoints: new ColumnPointsRepo(ctx),
    scoreIdempotency: new ScoreIdempotencyRepo(ctx),
    authFailures: new AuthFailuresRepo(ctx),
    credentialEpoch: new CredentialEpochRepo(ctx),
    audit: new AuditRepo(ctx),
    lti: new LtiRepo(ctx),
    ltiRefusals: new LtiRefusalsRepo(ctx),
  };
}

/** Refuses anything but a PostgreSQL URL: a typo in `DATABASE_URL` must not fall back to another store. */
function postgresOptions(options: {
  databaseUrl: string;
  schema?: string;
  maxConnections?: number;
  busyTimeoutMs?: number;
}): PostgresDriverOptions {
  if (!/^postgres(?:ql)?:\/\//i.test(options.databaseUrl)) {
    throw new TypeError('databaseUrl must be a postgres:// or postgresql:// URL');
  }
  const result: PostgresDriverOptions = { connectionString: options.databaseUrl };
  if (options.schema !== undefined) result.schema = options.schema;
  if (options.maxConnections !== undefined) result.maxConnections = options.maxConnections;
  if (options.busyTimeoutMs !== undefined) result.lockTimeoutMs = options.busyTimeoutMs;
  return result;
}

/** Opens the store and brings its schema up to date. */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  const clock = options.clock ?? systemClock;
  let driver: RootDriver;
  if ('driver' in options) {
    driver = options.driver;
  } else if ('databaseUrl' in options) {
    driver = new PostgresDriver(postgresOptions(options));
  } else {
    const path = 'sqlitePath' in options ? options.sqlitePath : join(options.dataDir, SQLITE_FILE_NAME);
    driver = new SqliteDriver(
      options.busyTimeoutMs === undefined ? { path } : { path, busyTimeoutMs: options.busyTimeoutMs },
    );
  }
  let migrations: MigrateResult;
  try {
    migrations = await migrate(driver, clock);
  } catch (err) {
    await driver.close();
    throw err;
  }
  const repositories = createRepositories(driver, clock);
  return {
    ...repositories,
    dialect: driver.dialect,
    driver,
    migrations,
    transaction: (fn) => driver.transaction((tx) => fn(createRepositories(tx, clock))),
    ...(driver.pipelined
      ? { pipelined: <T>(fn: (tx: PipelinedStore) => Promise<T>) => driver.pipelined!((tx) => fn(pipelinedStore(tx, clock, createRepositories))) }
      : {}),
    discardContextData: (appId, contextId) =>
      driver.transaction(async (tx) => {
        const repos = createRepositories(tx, clock);
        await repos.rows.deleteForContext(appId, contextId);
        const blobIds = await repos.files.deleteForContext(appId, contextId);
        await repos.provisioning.resetContext(appId, contextId);
        await repos.apiTokens.revokeForContext(contextId, appId);
        return { blobIds };
      }),
    close: () => driver.close(),
  };
}

export type { Dialect, Driver, RootDriver, RunResult, SqlParam } from './driver.js';
/** PostgreSQL's pipelined transaction with the repositories (PERF-170). */
export type PipelinedStore = PipelinedStoreOf<Repositories>;
export type { BatchResult, BatchStatement } from './driver.js';
export { normalizeParams, rowValues, toPostgresPlaceholders } from './driver.js';
export * from './errors.js';
export { SqliteDriver } from './sqlite.js';
export type { SqliteDriverOptions } from './sqlite.js';
export { PostgresDriver, mapPostgresError } from './postgres.js';
export type { PostgresDriverOptions } from './postgres.js';
export { MIGRATIONS, migrate, migrationChecksum } from './migrations.js';
export type { Migration, MigrateResult } from './migrations.js';
export type { Clock } from './time.js';
export { systemClock, isoFromUs, isoFromMs, nowUs } from './time.js';
export { newId, apiKeyHint, parseApiKey } from './ids.js';
export type { IdPrefix } from './ids.js';
export type { JsonObject, JsonValue, RowKey, RowKind, RepoContext } from './repos/common.js';
export * from './repos/apps.js';
export * from './repos/attempts.js';
export * from './repos/audit.js';
export * from './repos/builders.js';
export * from './repos/directory.js';
export * from './repos/files.js';
export * from './repos/gradebook.js';
export * from './repos/grades.js';
export * from './repos/launches.js';
export * from './repos/locations.js';
export * from './repos/picker-answers.js';
export * from './repos/lti.js';
export * from './repos/lti-refusals.js';
export * from './repos/placements.js';
export * from './repos/provisioning.js';
export * from './repos/rows.js';
export * from './repos/secrets.js';
export * from './repos/sandbox-move.js';
export * from './repos/signing-keys.js';
export * from './repos/tokens.js';
