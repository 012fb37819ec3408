/**
 * Test harness for the service: the REAL app (`server/app.ts`, real handlers, response validation ON)
 * on a real SQLite file in a temp `DATA_DIR`, listening on 127.0.0.1 with an ephemeral port. Tests talk
 * to it with `fetch` over real HTTP. The fixtures go through the real launch service, so the tokens they
 * hand out are the ones a tool would get.
 *
 * With `TIS_TEST_STORE=postgres` (the `postgres` vitest project) every server runs on PostgreSQL instead
 * (`TIS_TEST_DATABASE_URL`, see tests/store/helpers.ts), in a schema of its own created for its `DATA_DIR`
 * and dropped with it; a server started again on the same `dataDir` reopens the same schema, like a
 * restart on the same SQLite file. In a vitest run, a server on a harness-made `DATA_DIR` may get an
 * emptied, already migrated schema another server left (tests/server/schema-pool.ts). Blobs stay on the local disk under `DATA_DIR` unless
 * `TIS_TEST_BLOB_STORE=postgres`.
 *
 *   const server = await startServer();
 *   const tool = await createTool(server);
 *   const quiz = await placeLocation(server, { app: tool.app.id, type: 'assessment' });
 *   const student = await launch(server, { placed: quiz, groups: ['student'] });
 *   await fetch(student.claims.storage.member, { headers: { Authorization: `Bearer ${student.apiToken}` } });
 *   await server.stop();
 */
import { randomUUID } from 'node:crypto';
import type { Server as HttpServer } from 'node:http';
import type { Resolver } from '../../rules/endpoint-url.js';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunningService } from '../../server/app.js';
import { createHttpServer, openConfiguredStore, startService } from '../../server/app.js';
import type { Config } from '../../server/config.js';
import { configFrom } from '../../server/config.js';
import type { ContractDefinition } from '../../server/http/pipeline.js';
import { createLogger } from '../../server/http/log.js';
import type { Services } from '../../server/http/services.js';
import type { LaunchClaims } from '../../server/launches/claims.js';
import { isCurrentLaunchClaims } from '../../server/launches/claims.js';
import type { LaunchOutcome, OrganizationInput } from '../../server/launches/service.js';
import { AGS_MEDIA_TYPES, AGS_SCOPE, MAX_ASSERTION_LIFETIME_SECONDS } from '../../server/lti/vocabulary.js';
import { ensureSandbox } from '../../server/sandbox/courses.js';
import { SandboxLmsControlError } from '../../server/sandbox/lms-client.js';
import { ensureLmsLink, lmsGradebook } from '../../server/sandbox/lms-courses.js';
import { sandboxLmsClient } from '../../server/sandbox/lms-registration.js';
import { exists, sandboxDeploymentId, TRIAL_LIS_ROLES } from '../../server/sandbox/lms-sandbox.js';
import { scoresUrl } from '../../server/scores/ags.js';
import { poolRun } from './schema-pool.js';
import { seedDataDir } from './sqlite-template.js';
import type {
  AppRecord,
  AppStatus,
  Clock,
  ContextRecord,
  LocationRecord,
  LocationType,
  MemberGroup,
  OrganizationRecord,
  PlacementEntry,
  PlacementRecord,
  Store,
} from '../../server/store/index.js';

export interface StartServerOptions {
  /**
   * Overrides of the test configuration (`dataDir`, `port`, `host` are the harness's; the store lines come
   * from `TIS_TEST_STORE`, though e.g. `blobStore` may be overridden here).
   */
  config?: Partial<Omit<Config, 'dataDir'>>;
  clock?: Clock;
  /** Replaces the served contracts (pipeline tests with handlers of their own). Default: the real ones. */
  contracts?: readonly ContractDefinition[];
  /** Keep the data directory after `stop()` (a restart test reopens it). */
  dataDir?: string;
  /** Print log lines to stdout as well as capturing them. */
  echoLogs?: boolean;
  /**
   * How the service resolves tool host names for the endpoint URL rules (default: the system's DNS). A test
   * of those rules injects one, so no name is ever looked up beyond the machine.
   */
  toolResolver?: Resolver;
}

export interface TestServer {
  /** `http://127.0.0.1:<port>`; also the `PUBLIC_URL`, so every URL in a claim is callable. */
  url: string;
  services: Services;
  dataDir: string;
  /** Every log line the server wrote, parsed. */
  logs: Array<Record<string, unknown>>;
  /** The same lines as written (the text the stdout writer gets), for checks JSON.parse would hide. */
  lines: string[];
  running: RunningService;
  stop(): Promise<void>;
}

/** Picks a free port first so `PUBLIC_URL` can be the real origin (URLs in claims must be callable). */
async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// Which store the servers of this process run on.

export type TestStoreKind = 'sqlite' | 'postgres';

function readKind<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
  const raw = process.env[name]?.trim();
  if (!raw) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new Error(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(raw)}`);
  return raw as T;
}

export const TEST_STORE: TestStoreKind = readKind('TIS_TEST_STORE', ['sqlite', 'postgres'], 'sqlite');
export const TEST_BLOB_STORE: Config['blobStore'] = readKind('TIS_TEST_BLOB_STORE', ['local', 'postgres'], 'local');

/** Where a test server's PostgreSQL schema is named, inside its `DATA_DIR`. */
const SCHEMA_MARKER = 'test-database.json';

interface SchemaUse {
  users: number;
  /** The `DATA_DIR` that named it is gone: drop it once the last server on it stops. */
  orphaned: boolean;
}
const schemaUses = new Map<string, SchemaUse>();

let postgresAdmin: Promise<{ url: string; query: (sql: string) => Promise<void> }> | null = null;

/** The test database (created when missing, as the store tests do); fails loudly when unreachable. */
function postgres(): Promise<{ url: string; query: (sql: string) => Promise<void> }> {
  postgresAdmin ??= (async () => {
    const helpers = await import('../store/helpers.js');
    if (!helpers.postgresStatus.available) {
      throw new Error(`TIS_TEST_STORE=postgres, but ${helpers.postgresStatus.reason}`);
    }
    const { default: pg } = await import('pg');
    const url = helpers.POSTGRES_URL;
    return {
      url,
      query: async (sql: string) => {
        const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
        await client.connect();
        try {
          await client.query(sql);
        } finally {
          await client.end();
        }
      },
    };
  })();
  return postgresAdmin;
}

/**
 * Schemas are named `tsrv_<run>_<random>`: the run is the vitest run's (tests/server/postgres-setup.ts
 * drops what a run leaves behind, e.g. of a crashed test), or this process's outside vitest.
 */
function runName(): string {
  return poolRun();
}

function newSchemaName(): string {
  return `tsrv_${runName()}_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
}

const creating = new Map<string, Promise<string>>();

/** Schemas of harness-made `DATA_DIR`s: they go back to the pool (tests/server/schema-pool.ts) when released. */
const poolable = new Set<string>();

/**
 * The schema of `dataDir`, created with its marker on first use (once, when asked twice at once). A
 * harness-made `dataDir` (`pooled`) goes back to the pool when released, and (`claim`, unless the test has
 * a clock of its own) takes from it a schema emptied back to a first start's (CI-04, CI-56) when there is one.
 */
function schemaFor(dataDir: string, pooled = false, claim = pooled): Promise<string> {
  const marker = join(dataDir, SCHEMA_MARKER);
  if (existsSync(marker)) return Promise.resolve((JSON.parse(readFileSync(marker, 'utf8')) as { schema: string }).schema);
  let pending = creating.get(marker);
  if (!pending) {
    pending = (async () => {
      const schema = newSchemaName();
      const admin = await postgres();
      const claimed = claim && (await (await import('./schema-pool.js')).claimPooledSchema(admin.url, runName(), schema, 'server'));
      if (!claimed) await admin.query(`CREATE SCHEMA ${schema}`);
      if (pooled) poolable.add(schema);
      writeFileSync(marker, JSON.stringify({ schema }));
      return schema;
    })().finally(() => creating.delete(marker));
    creating.set(marker, pending);
  }
  return pending;
}

async function releaseSchema(schema: string, dataDirGone: boolean): Promise<void> {
  const use = schemaUses.get(schema);
  if (!use) return;
  use.users -= 1;
  if (dataDirGone) use.orphaned = true;
  if (use.users > 0 || !use.orphaned) return;
  schemaUses.delete(schema);
  const admin = await postgres();
  if (poolable.delete(schema) && (await (await import('./schema-pool.js')).poolSchema(admin.url, runName(), schema, 'server'))) return;
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
}

/** The store lines of a server's configuration for `dataDir` (SQLite needs none beyond `dataDir`). */
async function storeConfig(dataDir: string, pooled = false, claim = pooled): Promise<Partial<Config>> {
  if (TEST_STORE === 'sqlite') return {};
  const { url } = await postgres();
  return { databaseUrl: url, databaseSchema: await schemaFor(dataDir, pooled, claim), blobStore: TEST_BLOB_STORE };
}

/**
 * Environment for a child `server/main.ts` that must open the store a `startServer({dataDir})` opens
 * (restart and crash tests): `DATA_DIR`, plus `DATABASE_URL`, `DATABASE_SCHEMA` and `BLOB_STORE` on
 * PostgreSQL. Drop the schema with `dropTestStore(dataDir)` when the test started no harness server on it.
 */
export async function serviceStoreEnv(dataDir: string): Promise<Record<string, string>> {
  const config = await storeConfig(dataDir);
  const env: Record<string, string> = { DATA_DIR: dataDir };
  if (config.databaseUrl) env['DATABASE_URL'] = config.databaseUrl;
  if (config.databaseSchema) env['DATABASE_SCHEMA'] = config.databaseSchema;
  if (config.blobStore) env['BLOB_STORE'] = config.blobStore;
  return env;
}

/**
 * Opens the store a server on `dataDir` uses, as another instance would (the caller closes it, and drops
 * it with `dropTestStore` when no harness server owns the directory).
 */
export async function openTestStore(dataDir: string, options: { clock?: Clock } = {}): Promise<Store> {
  const config = await storeConfig(dataDir);
  return openConfiguredStore({ dataDir, databaseUrl: null, databaseSchema: null, databasePoolSize: 4, ...config }, options.clock);
}

/** Drops the PostgreSQL schema of a `dataDir` the test removes itself (no-op on SQLite). */
export async function dropTestStore(dataDir: string): Promise<void> {
  if (TEST_STORE === 'sqlite') return;
  const marker = join(dataDir, SCHEMA_MARKER);
  if (!existsSync(marker)) return;
  const schema = (JSON.parse(readFileSync(marker, 'utf8')) as { schema: string }).schema;
  const use = schemaUses.get(schema);
  if (use && use.users > 0) {
    use.orphaned = true;
    return;
  }
  schemaUses.delete(schema);
  poolable.delete(schema);
  await (await postgres()).query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
}

export async function startServer(options: StartServerOptions = {}): Promise<TestServer> {
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'tis-server-'));
  // A first start's migrations and keys, made once per run (CI-55, CI-56); a test's own dataDir or clock
  // starts empty (a pooled schema's keys were made at the real time).
  const fromTemplate = ownDir && !options.clock;
  const stores = await storeConfig(dataDir, ownDir, fromTemplate);
  if (fromTemplate && TEST_STORE === 'sqlite') await seedDataDir(dataDir);
  const schema = stores.databaseSchema ?? null;
  if (schema !== null) {
    const use = schemaUses.get(schema) ?? { users: 0, orphaned: false };
    use.users += 1;
    schemaUses.set(schema, use);
  }
  try {
    return await startOn(dataDir, ownDir, stores, options);
  } catch (err) {
    if (schema !== null) await releaseSchema(schema, ownDir);
    if (ownDir) rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}

async function startOn(dataDir: string, ownDir: boolean, stores: Partial<Config>, options: StartServerOptions): Promise<TestServer> {
  const logs: Array<Record<string, unknown>> = [];
  const lines: string[] = [];
  const log = createLogger({
    level: options.config?.logLevel ?? 'debug',
    sink: (line) => {
      lines.push(line);
      logs.push(JSON.parse(line) as Record<string, unknown>);
      if (options.echoLogs) process.stdout.write(`${line}\n`);
    },
  });
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const port = await freePort();
    const config = configFrom({
      responseValidation: true,
      // Suites that send many bad credentials on purpose (fuzzing, permission tables) are not guessing;
      // the throttle's own tests set real limits (tests/server/core/throttle.test.ts).
      authFailuresPerAddress: 1_000_000,
      authFailuresPerCredential: 1_000_000,
      ...stores,
      ...options.config,
      dataDir,
      host: '127.0.0.1',
      port,
      publicUrl: options.config?.publicUrl ?? `http://127.0.0.1:${port}`,
    });
    try {
      const running = await startService(config, {
        log,
        ...(options.clock ? { clock: options.clock } : {}),
        ...(options.contracts ? { contracts: options.contracts } : {}),
        ...(options.toolResolver ? { toolResolver: options.toolResolver } : {}),
      });
      let stopped = false;
      return {
        url: running.url,
        services: running.services,
        dataDir,
        logs,
        lines,
        running,
        stop: async () => {
          if (stopped) return;
          stopped = true;
          await running.stop();
          if (stores.databaseSchema) await releaseSchema(stores.databaseSchema, ownDir);
          if (ownDir) rmSync(dataDir, { recursive: true, force: true });
        },
      };
    } catch (err) {
      // Another process took the probed port between probe and listen: try another.
      if ((err as { code?: string }).code !== 'EADDRINUSE') throw err;
      lastError = err;
    }
  }
  throw lastError;
}

export interface Tool {
  app: AppRecord;
  apiKey: string;
}

export interface CreateToolOptions {
  name?: string;
  /** Default `active`: the status real courses need. */
  status?: AppStatus;
  contractVersion?: string;
}

/** A self-hosted tool with its API key (shown once, as at registration). */
export async function createTool(server: Pick<TestServer, 'services'>, options: CreateToolOptions = {}): Promise<Tool> {
  const store = server.services.store;
  const created = await store.apps.create({
    name: options.name ?? `Test tool ${randomUUID().slice(0, 8)}`,
    hosting: 'self_hosted',
    homeLocation: false,
    ...(options.contractVersion ? { contractVersion: options.contractVersion } : {}),
  });
  if (!created.apiKey) throw new Error('a self-hosted tool has an API key');
  const status = options.status ?? 'active';
  let app = created.app;
  if (status !== 'draft') {
    if (status === 'suspended') await store.apps.setStatus(app.id, 'active');
    app = (await store.apps.setStatus(app.id, status))?.app ?? app;
  }
  return { app, apiKey: created.apiKey };
}

export interface PlaceLocationOptions {
  /** The tool's ID. */
  app: string;
  /**
   * Default: the tool's Sandbox school, the deployment `sandbox-<app_id>` of the service's in-process
   * reference LMS (decision LTI-44): the course is made in that LMS too, an assessment's gradebook column
   * is an LMS column (its AGS URL the placement's line item, LTI-45) and `launch()` enrols the person
   * there, so scores round-trip for real over AGS. A school given here is the test's own: the placement
   * is made as `launches.place` makes it, nothing in any LMS.
   */
  organization?: OrganizationInput;
  /** An existing course, or the course to create/find by its LMS id. Default: a fresh course. */
  course?: { contextId: string } | { externalId: string; name?: string; label?: string | null };
  type?: LocationType;
  extid?: string;
  label?: string;
  points?: number;
  /** Whether the LMS makes a gradebook column for an assessment (default true). */
  lineItem?: boolean;
  /** Provision the course level (default true). */
  provisionContext?: boolean;
  /** Provision the location level (default true). */
  provisionLocation?: boolean;
}

export interface PlacedLocation {
  appId: string;
  organization: OrganizationRecord;
  organizationInput: OrganizationInput;
  context: ContextRecord;
  location: LocationRecord;
  placement: PlacementRecord;
}

/** A location of the tool, placed in a course (with a gradebook column for an assessment). */
export async function placeLocation(server: Pick<TestServer, 'services'>, options: PlaceLocationOptions): Promise<PlacedLocation> {
  const { store, launches } = server.services;
  const inLms = !options.organization;
  const organization = options.organization ? await store.organizations.upsert(options.organization) : await whileServed(server, () => sandboxSchool(server, options.app));
  const organizationInput: OrganizationInput = {
    issuer: organization.issuer,
    client: organization.client,
    deployment: organization.deployment,
    title: organization.title,
  };
  let context: ContextRecord;
  const course = options.course;
  if (course && 'contextId' in course) {
    const found = await store.contexts.get(course.contextId);
    if (!found) throw new Error(`no context ${course.contextId}`);
    context = found;
  } else {
    const externalId = course?.externalId ?? `course-${randomUUID()}`;
    context = await store.contexts.upsert({
      organizationId: organization.id,
      externalId,
      name: course?.name ?? 'Introduction to Statistics',
      label: course?.label === undefined ? 'STAT 101' : course.label,
    });
  }
  if (inLms) await whileServed(server, () => ensureLmsCourse(server, options.app, context));
  const type = options.type ?? 'assessment';
  const extid = options.extid ?? `${type}-${randomUUID().slice(0, 8)}`;
  // Keep the tool's other served locations visible: a locations response lists them all.
  const current = (await store.locations.listForApp(options.app)).filter((l) => !l.stored && !l.hidden && l.extid !== null);
  const entries = current
    .filter((l) => l.extid !== extid)
    .map((l) => ({ extid: l.extid as string, type: l.type, label: l.label, description: l.description, points: l.points }));
  const synced = await store.locations.syncServed(options.app, [
    ...entries,
    { extid, type, label: options.label ?? `Location ${extid}`, ...(options.points !== undefined ? { points: options.points } : {}) },
  ]);
  const location = synced.find((l) => l.extid === extid);
  if (!location) throw new Error('location not recorded');
  const entry: PlacementEntry = {
    extid,
    type,
    label: location.label,
    description: location.description,
    points: location.points,
  };
  let placement = await launches.place({
    appId: options.app,
    contextId: context.id,
    locationId: location.id,
    entry,
  });
  // In the Sandbox's LMS the column is the LMS's, made with the placement's resource link.
  if (inLms && type === 'assessment' && (options.lineItem ?? true)) placement = await whileServed(server, () => linkInLms(server, organization, context, placement));
  if (options.provisionContext ?? true) await store.provisioning.markProvisioned({ appId: options.app, contextId: context.id });
  if (options.provisionLocation ?? true) {
    await store.provisioning.markProvisioned({ appId: options.app, contextId: context.id, locationId: location.id });
  }
  return { appId: options.app, organization, organizationInput, context, location, placement };
}

export interface LaunchOptions {
  placed: PlacedLocation;
  /** Groups of the launching member (NS-07); default `['student']`. */
  groups?: readonly MemberGroup[];
  /** The LMS's id of the person; default: a fresh person. Reuse it to launch the same person again. */
  userExternalId?: string;
  givenName?: string;
  familyName?: string;
  email?: string;
}

export interface TestLaunch extends LaunchOutcome {
  claims: LaunchClaims;
  /** `Authorization` header value for the launch's `api.token`. */
  auth: string;
}

/**
 * A real launch of the placement by a user with the given groups. In the Sandbox's LMS the person is
 * made and enrolled in the LMS course too (the LMS takes scores of enrolled people only).
 */
export async function launch(server: Pick<TestServer, 'services'>, options: LaunchOptions): Promise<TestLaunch> {
  const externalId = options.userExternalId ?? `person-${randomUUID()}`;
  const given = options.givenName ?? 'Ada';
  const family = options.familyName ?? 'Lovelace';
  await enrolInLms(server, options.placed, externalId, options.groups ?? ['student'], { givenName: given, familyName: family, email: options.email });
  const outcome = await server.services.launches.launch({
    organization: options.placed.organizationInput,
    course: { contextId: options.placed.context.id },
    user: {
      externalId,
      givenName: given,
      familyName: family,
      fullName: `${given} ${family}`,
      email: options.email ?? `${externalId}@example.edu`,
      groups: options.groups ?? ['student'],
    },
    placement: {
      appId: options.placed.appId,
      locationId: options.placed.location.id,
      resourceLink: options.placed.placement.resourceLink,
    },
  });
  // The claims follow the tool's pin; this helper serves tools pinned to the current contract.
  if (!isCurrentLaunchClaims(outcome.claims)) throw new Error(`launch(): tool pinned to ${outcome.app.contractVersion}`);
  return { ...outcome, claims: outcome.claims, auth: `Bearer ${outcome.apiToken}` };
}

/** Reads a problem body and checks its envelope basics, for terse assertions. */
export async function problemOf(response: Response): Promise<{ status: number; code: string; detail: string; body: Record<string, unknown> }> {
  const body = (await response.json()) as Record<string, unknown>;
  return { status: response.status, code: String(body['code']), detail: String(body['detail']), body };
}

// ---------------------------------------------------------------------------------------------------------
// The Sandbox's LMS (decisions LTI-40 to LTI-48): the default school of `placeLocation`, through the same
// functions the Sandbox uses (`server/sandbox/`), over the LMS's controls and its AGS.

/** Services served for the time of a fixture's LMS calls (`whileServed`), with how many calls are under way. */
const serving = new WeakMap<object, { users: number; listening: Promise<HttpServer> }>();

/**
 * Runs `work` with the service answering at its public URL. A harness server listens already. Bare services
 * (`buildServices`, as the benches and the shutdown test make them, the service itself started later or
 * in another process on the same data directory) listen here on the public URL's port for the time of
 * the work: the Sandbox's LMS is the service itself at `{PUBLIC_URL}/lms` and registers through the
 * service's `/lti/register` (LTI-40), so both must answer. What they make is stored (the service's store,
 * the LMS's beside it, LTI-41), so the service started later finds it.
 */
async function whileServed<T>(server: Pick<TestServer, 'services'>, work: () => Promise<T>): Promise<T> {
  if ('running' in server) return work();
  const { services } = server;
  let use = serving.get(services);
  if (!use) {
    const url = new URL(services.config.publicUrl);
    const http = createHttpServer(services);
    const listening = new Promise<HttpServer>((resolve, reject) => {
      http.once('error', (err) => reject(new Error(`the harness could not serve ${url.origin} for the Sandbox's LMS: ${err.message}`)));
      http.listen(Number(url.port || (url.protocol === 'https:' ? 443 : 80)), '127.0.0.1', () => resolve(http));
    });
    use = { users: 0, listening };
    serving.set(services, use);
  }
  use.users += 1;
  const current = use;
  try {
    await current.listening;
    return await work();
  } finally {
    current.users -= 1;
    if (current.users === 0) {
      serving.delete(services);
      const http = await current.listening.catch(() => null);
      if (http) {
        http.closeAllConnections();
        await new Promise<void>((resolve) => http.close(() => resolve()));
        // One poll phase, so this process's fetch pool reads the FIN of the connections just closed: a
        // request of the next served span (same port) would otherwise take a dead pooled socket and fail
        // with "other side closed" (seen once the store's reads stopped taking extra turns, PERF-121).
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
  }
}

/** The tool's Sandbox school: the deployment `sandbox-<app_id>` of the service's registration with its LMS. */
export async function sandboxSchool(server: Pick<TestServer, 'services'>, appId: string): Promise<OrganizationRecord> {
  return (await ensureSandbox(server.services, appId)).school;
}

/** Whether a school is a deployment of the service's in-process Sandbox LMS. */
export function isSandboxLmsSchool(server: Pick<TestServer, 'services'>, organization: Pick<OrganizationRecord, 'issuer'>): boolean {
  return organization.issuer === server.services.sandboxLms.issuer();
}

/** LMS course IDs this process made, per LMS host: later placements in the course make no control call. */
const lmsCourses = new WeakMap<object, Set<string>>();

/**
 * The LMS course of a course of the tool's Sandbox school, under its external ID (what the LMS's launches
 * name as the context), made in the deployment `sandbox-<app_id>`. A 409 is a course already made; one of
 * another deployment (another tool's school) is refused, since its columns would be another school's.
 */
export async function ensureLmsCourse(server: Pick<TestServer, 'services'>, appId: string, context: ContextRecord): Promise<void> {
  const host = server.services.sandboxLms;
  let made = lmsCourses.get(host);
  if (!made) {
    made = new Set();
    lmsCourses.set(host, made);
  }
  if (made.has(context.externalId)) return;
  const lms = sandboxLmsClient(server.services);
  const deployment = sandboxDeploymentId(appId);
  try {
    // An LMS course always has a code; a course without a label takes its name as one in the LMS.
    await lms.createCourse({ id: context.externalId, deployment_id: deployment, title: context.name, label: context.label ?? context.name });
  } catch (err) {
    if (!(err instanceof SandboxLmsControlError && err.status === 409)) throw err;
    const found = await lms.course(context.externalId);
    if (found.deployment_id !== deployment) throw new Error(`LMS course ${context.externalId} is of deployment ${found.deployment_id}, not ${deployment}`);
  }
  made.add(context.externalId);
}

/**
 * The placement's LMS resource link with its gradebook column (`ensureLmsLink`, as the Sandbox places),
 * the column's AGS URL stored as the placement's line item. The course must be in the LMS (`ensureLmsCourse`).
 */
export async function linkInLms(
  server: Pick<TestServer, 'services'>,
  school: OrganizationRecord,
  context: ContextRecord,
  placement: PlacementRecord,
): Promise<PlacementRecord> {
  return (await ensureLmsLink(server.services, school, context, placement)).placement;
}

/** The LIS role the Sandbox enrols a person of each group with (its trial users', LTI-11). */
const LIS_ROLE_OF_GROUP: Readonly<Record<MemberGroup, string>> = {
  instructor: TRIAL_LIS_ROLES.instructor,
  assistant: TRIAL_LIS_ROLES.assistant,
  manager: TRIAL_LIS_ROLES.manager,
  student: TRIAL_LIS_ROLES.student_1,
};
/** LIS's Mentor maps to no group of the service (LTI-11): a member with no group is enrolled as one. */
const NO_GROUP_ROLE = 'http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor';

/**
 * Makes the person (`sub` = their LMS id) and enrols them in the placement's LMS course with the LIS roles
 * of their groups, when the placement's school is the Sandbox's LMS; nothing otherwise. Idempotent.
 */
export async function enrolInLms(
  server: Pick<TestServer, 'services'>,
  placed: Pick<PlacedLocation, 'organization' | 'context'>,
  sub: string,
  groups: readonly MemberGroup[],
  person: { givenName?: string; familyName?: string; email?: string | undefined } = {},
): Promise<void> {
  if (!isSandboxLmsSchool(server, placed.organization)) return;
  const lms = sandboxLmsClient(server.services);
  const roles = groups.length === 0 ? [NO_GROUP_ROLE] : groups.map((g) => LIS_ROLE_OF_GROUP[g]);
  await whileServed(server, async () => {
    await exists(() =>
      lms.createUser({ sub, given_name: person.givenName ?? 'Ada', family_name: person.familyName ?? 'Lovelace', email: person.email ?? `${sub}@example.edu` }),
    );
    await lms.enrol(placed.context.externalId, sub, roles);
  });
}

export interface LmsGradebookScore {
  /** The member of the scored person in the course (null for a person the service does not know). */
  member_id: string | null;
  /** The LMS's `userId`: the person's LMS id. */
  user_id: string;
  score_given: number | null;
  score_maximum: number | null;
  comment: string | null;
  activity_progress: string;
  grading_progress: string;
  timestamp: string;
  received: string;
}

export interface LmsGradebookColumn {
  /** The column's AGS URL: what a placement holds as its line item. */
  line_item_id: string;
  /** The placement holding the column, or null. */
  placement_id: string | null;
  label: string;
  score_maximum: number;
  scores: LmsGradebookScore[];
}

/**
 * A course's gradebook as the Sandbox LMS holds it (`lmsGradebook`, what the Grades tab reads, LTI-48),
 * every person's score with their member in the course: the harness's courses have more people than the
 * Grades tab's five trial users.
 */
export async function readLmsGradebook(
  server: Pick<TestServer, 'services'>,
  context: Pick<ContextRecord, 'id' | 'externalId' | 'organizationId'>,
): Promise<{ context_id: string; columns: LmsGradebookColumn[] }> {
  const { store } = server.services;
  const book = await lmsGradebook(server.services, context as ContextRecord);
  const placements = await store.placements.listByContext(context.id);
  const members = new Map<string, string | null>();
  const memberOf = async (sub: string): Promise<string | null> => {
    if (!members.has(sub)) {
      const user = await store.users.findByExternal(context.organizationId, sub);
      members.set(sub, user ? ((await store.members.find(context.id, user.id))?.id ?? null) : null);
    }
    return members.get(sub) ?? null;
  };
  const columns: LmsGradebookColumn[] = [];
  for (const column of book.columns) {
    const scores: LmsGradebookScore[] = [];
    for (const s of column.scores) {
      scores.push({
        member_id: await memberOf(s.userId),
        user_id: s.userId,
        score_given: s.scoreGiven,
        score_maximum: s.scoreMaximum,
        comment: s.comment === '' ? null : s.comment,
        activity_progress: s.activityProgress,
        grading_progress: s.gradingProgress,
        timestamp: s.timestamp,
        received: s.received,
      });
    }
    columns.push({
      line_item_id: column.id,
      placement_id: placements.find((p) => p.lineItemId === column.id)?.id ?? null,
      label: column.label,
      score_maximum: column.scoreMaximum,
      scores,
    });
  }
  return { context_id: context.id, columns };
}

/** The gradebook column of a placement and one member's score in it (null when the column holds none). */
export async function lmsScoreOf(
  server: Pick<TestServer, 'services'>,
  placed: Pick<PlacedLocation, 'context' | 'placement'>,
  memberId: string,
): Promise<{ column: LmsGradebookColumn | undefined; score: LmsGradebookScore | null }> {
  const book = await readLmsGradebook(server, placed.context);
  const column = book.columns.find((c) => c.line_item_id === placed.placement.lineItemId);
  return { column, score: column?.scores.find((s) => s.member_id === memberId) ?? null };
}

/**
 * An AGS access token of the Sandbox LMS for the service's registration, asked as the publisher asks one
 * (client credentials, a client assertion signed with the service's keys), for tests that speak AGS to
 * the LMS themselves. Also answers the LMS URL's transport (where this process reaches it).
 */
export async function lmsAgsToken(
  server: Pick<TestServer, 'services'>,
  appId: string,
  scopes: readonly string[] = [AGS_SCOPE.score],
): Promise<{ token: string; fetch: (url: string, init?: RequestInit) => Promise<Response> }> {
  const { services } = server;
  const { registration } = (await ensureSandbox(services, appId)).lms;
  const iat = Math.floor(Date.now() / 1000);
  const assertion = await services.signer.sign({
    iss: registration.clientId,
    sub: registration.clientId,
    aud: registration.tokenAudience ?? registration.tokenUrl,
    iat,
    exp: iat + MAX_ASSERTION_LIFETIME_SECONDS,
    jti: randomUUID(),
  });
  const send = (url: string, init?: RequestInit) => fetch(services.sandboxLms.transport(url), init);
  const res = await send(registration.tokenUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: assertion,
      scope: scopes.join(' '),
    }).toString(),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`the Sandbox LMS refused a token: ${res.status} ${text}`);
  return { token: (JSON.parse(text) as { access_token: string }).access_token, fetch: send };
}

/** Puts a score in the LMS column as the LMS's AGS takes one (`userId` = the person's LMS id). */
export async function postLmsScore(
  server: Pick<TestServer, 'services'>,
  appId: string,
  lineItemUrl: string,
  score: { userId: string; scoreGiven?: number; scoreMaximum?: number; timestamp: string; activityProgress?: string; gradingProgress?: string },
): Promise<Response> {
  const { token, fetch: send } = await lmsAgsToken(server, appId);
  return send(scoresUrl(lineItemUrl), {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': AGS_MEDIA_TYPES.score },
    body: JSON.stringify({ activityProgress: 'Completed', gradingProgress: 'FullyGraded', ...score }),
  });
}
