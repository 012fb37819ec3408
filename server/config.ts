/**
 * The service's configuration, read once from the environment at start and validated, so a typo
 * fails the start with a clear message instead of surfacing as odd behaviour later.
 */
import { isAbsolute, resolve } from 'node:path';
import { responses, schemas } from '../generated/2026-09-21/schemas.js';
import type { S3Settings } from './files/s3-settings.js';
import { readS3Settings } from './files/s3-settings.js';
import type { TrustProxy } from './http/client-address.js';
import { readTrustProxy } from './http/client-address.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** Where uploaded files' bytes live: `DATA_DIR/blobs`, the PostgreSQL database every instance shares, or a
 * bucket of an S3-compatible object store (decision OBJ-01). */
export type BlobStoreKind = 'local' | 'postgres' | 's3';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** Origin (scheme://host[:port], no path) used in `iss` and in every URL handed to tools (L-01, GAP-33). */
  publicUrl: string;
  apiTokenTtlSeconds: number;
  responseValidation: boolean;
  logLevel: LogLevel;
  /** Issue 4's development switch: lets tool endpoint URLs point at loopback. Never on in production. */
  allowLoopbackTools: boolean;
  /** `LOCATIONS_TIMEOUT_MS`: the whole locations request, at most the contract's 30 s. */
  locationsTimeoutMs: number;
  /** `PROVISION_TIMEOUT_MS`: the whole provision request, at most decision GAP-16's 10 s. */
  provisionTimeoutMs: number;
  /** Largest JSON request body read (413 above): room for a 1 MB row written with some white space. */
  httpBodyLimitBytes: number;
  /** How long a shutdown waits for requests in flight before closing their connections. */
  shutdownGraceMs: number;
  nodeEnv: string;
  /**
   * `DATABASE_URL`: the PostgreSQL database several instances share (decision S-33). Null keeps the
   * embedded SQLite file under `dataDir`.
   */
  databaseUrl: string | null;
  /** `DATABASE_SCHEMA`: the schema holding the tables; null uses the role's search path. */
  databaseSchema: string | null;
  /** `DATABASE_POOL_SIZE`: connections this instance opens to PostgreSQL at most. */
  databasePoolSize: number;
  /** `BLOB_STORE`: `local` (default), `postgres` (needs `DATABASE_URL`) or `s3`. */
  blobStore: BlobStoreKind;
  /** The bucket's settings when `BLOB_STORE=s3` (`S3_BUCKET`, `S3_REGION`, ...), null otherwise. */
  s3: S3Settings | null;
  /**
   * `PLATFORM_TOKEN`: the platform team's dashboard credential (decision S-07), at least 32 characters.
   * Null: generated at first start into `DATA_DIR/platform-token` and reused afterwards.
   */
  platformToken: string | null;
  /** `AUTH_FAILURES_PER_ADDRESS`: failed authentications from one client address per minute (H-05). */
  authFailuresPerAddress: number;
  /** `AUTH_FAILURES_PER_CREDENTIAL`: failed authentications naming one credential prefix per minute (H-05). */
  authFailuresPerCredential: number;
  /** `LMS_AUTO_ACTIVATE`: an LMS registration is active on arrival instead of pending (decision LTI-05). */
  lmsAutoActivate: boolean;
  /** `TRUST_PROXY`: the proxies whose `X-Forwarded-For` names the client (decisions H-20, H-21); none by default. */
  trustProxy: TrustProxy;
  /** `METRICS`: the Prometheus metrics and `GET /metrics` (decision OPS-10); on by default. */
  metrics: boolean;
  /** `METRICS_PORT`: a listener of its own serving `/metrics` without a credential (OPS-11); null: none. */
  metricsPort: number | null;
  /** `METRICS_HOST`: where that listener binds; `HOST` by default (OPS-11). */
  metricsHost: string;
}

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    // One line per problem, each naming its variable (OPS-30): a log collector keeps a line whole.
    super(problems.map((problem) => `invalid configuration: ${problem}`).join('\n'));
    this.name = 'ConfigError';
  }
}

/** Decision NS-14 default. */
export const DEFAULT_API_TOKEN_TTL_SECONDS = 14_400;
/** The spec's default for the 413 body limit (BodyTooLarge's `x-limits`, decision KIT-20). */
export const DEFAULT_HTTP_BODY_LIMIT_BYTES: number = responses.BodyTooLarge['x-limits'].default_bytes;

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

function parseBool(name: string, raw: string | undefined, fallback: boolean, problems: string[]): boolean {
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['0', 'false', 'no', 'off'].includes(value)) return false;
  problems.push(`${name} must be true or false (also 1/0, yes/no, on/off), got ${JSON.stringify(raw)}`);
  return fallback;
}

function parseIntIn(
  name: string,
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number,
  problems: string[],
): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) {
    problems.push(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
    return fallback;
  }
  const value = Number(raw.trim());
  if (value < min || value > max) {
    problems.push(`${name} must be between ${min} and ${max}, got ${value}`);
    return fallback;
  }
  return value;
}

/** A host the URL parser refuses (`999.1.1.1` reads as an IPv4 address out of range) cannot name the service's origin. */
function isUrlHost(host: string): boolean {
  try {
    new URL(originOf(host, 0));
    return true;
  } catch {
    return false;
  }
}

function originOf(host: string, port: number): string {
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  // A wildcard bind address is not something a tool can call; name the machine's loopback instead.
  const named = host === '0.0.0.0' || host === '::' ? 'localhost' : bracketed;
  return `http://${named}:${port}`;
}

/**
 * Reads the environment. `HOST` defaults to 127.0.0.1: a fresh checkout must not expose an API that
 * holds course data on every interface; deployments set `HOST=0.0.0.0` behind their proxy.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): Config {
  const problems: string[] = [];
  const nodeEnv = env['NODE_ENV']?.trim() || 'development';
  const port = parseIntIn('PORT', env['PORT'], 3000, 0, 65_535, problems);
  const host = env['HOST']?.trim() || '127.0.0.1';
  if (/[\s/]/.test(host) || !isUrlHost(host)) problems.push(`HOST must be a host name or IP address, got ${JSON.stringify(host)}`);
  const dataDirRaw = env['DATA_DIR']?.trim() || './data';
  const dataDir = isAbsolute(dataDirRaw) ? dataDirRaw : resolve(cwd, dataDirRaw);

  let publicUrl = originOf(host, port);
  const publicRaw = env['PUBLIC_URL']?.trim();
  if (publicRaw) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(publicRaw);
    } catch {
      problems.push(`PUBLIC_URL must be an absolute URL such as https://tis.example.edu, got ${JSON.stringify(publicRaw)}`);
    }
    if (parsed) {
      if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
        problems.push(`PUBLIC_URL must use https:// (or http:// for development), got ${parsed.protocol}`);
      } else if ((parsed.pathname !== '/' && parsed.pathname !== '') || parsed.search || parsed.hash) {
        // Every path of the API starts at the origin (L-01); a path prefix would break `{base_url}`.
        problems.push(`PUBLIC_URL must be an origin with no path, query or fragment, got ${JSON.stringify(publicRaw)}`);
      } else if (parsed.username || parsed.password) {
        problems.push('PUBLIC_URL must not carry credentials');
      } else {
        publicUrl = parsed.origin;
      }
    }
  }

  const apiTokenTtlSeconds = parseIntIn(
    'API_TOKEN_TTL_SECONDS',
    env['API_TOKEN_TTL_SECONDS'],
    DEFAULT_API_TOKEN_TTL_SECONDS,
    60,
    30 * 86_400,
    problems,
  );
  const responseValidation = parseBool('RESPONSE_VALIDATION', env['RESPONSE_VALIDATION'], nodeEnv !== 'production', problems);
  const levelRaw = (env['LOG_LEVEL']?.trim() || 'info').toLowerCase();
  let logLevel: LogLevel = 'info';
  if ((LOG_LEVELS as readonly string[]).includes(levelRaw)) logLevel = levelRaw as LogLevel;
  else problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(env['LOG_LEVEL'])}`);
  const allowLoopbackTools = parseBool('ALLOW_LOOPBACK_TOOLS', env['ALLOW_LOOPBACK_TOOLS'], false, problems);
  const lmsAutoActivate = parseBool('LMS_AUTO_ACTIVATE', env['LMS_AUTO_ACTIVATE'], false, problems);
  const httpBodyLimitBytes = parseIntIn(
    'HTTP_BODY_LIMIT_BYTES',
    env['HTTP_BODY_LIMIT_BYTES'],
    DEFAULT_HTTP_BODY_LIMIT_BYTES,
    // Below this the largest row the spec allows (its `x-limits`) could not be written.
    Math.max(...Object.values(schemas.Row['x-limits'].max_bytes)) + 1024,
    64 * 1_048_576,
    problems,
  );
  const shutdownGraceMs = parseIntIn('SHUTDOWN_GRACE_MS', env['SHUTDOWN_GRACE_MS'], 30_000, 0, 600_000, problems);
  // Shorter waits are the operator's choice; longer ones would break the contract's promise to instructors.
  const locationsTimeoutMs = parseIntIn('LOCATIONS_TIMEOUT_MS', env['LOCATIONS_TIMEOUT_MS'], 30_000, 100, 30_000, problems);
  const provisionTimeoutMs = parseIntIn('PROVISION_TIMEOUT_MS', env['PROVISION_TIMEOUT_MS'], 10_000, 100, 10_000, problems);
  const database = readDatabase(env, problems);
  const authFailuresPerAddress = parseIntIn('AUTH_FAILURES_PER_ADDRESS', env['AUTH_FAILURES_PER_ADDRESS'], 30, 1, 1_000_000, problems);
  const authFailuresPerCredential = parseIntIn('AUTH_FAILURES_PER_CREDENTIAL', env['AUTH_FAILURES_PER_CREDENTIAL'], 10, 1, 1_000_000, problems);
  const platformToken = env['PLATFORM_TOKEN']?.trim() || null;
  if (platformToken !== null && (platformToken.length < 32 || /[^\x21-\x7e]/.test(platformToken))) {
    // A short or oddly spelled operator credential is a typo or a weak secret; neither should start.
    problems.push('PLATFORM_TOKEN must be at least 32 printable ASCII characters with no spaces');
  }
  const trustProxy = readTrustProxy(env['TRUST_PROXY'], problems);
  const metrics = parseBool('METRICS', env['METRICS'], true, problems);
  const metricsPortRaw = env['METRICS_PORT']?.trim() ?? '';
  const metricsPort = metricsPortRaw === '' ? null : parseIntIn('METRICS_PORT', metricsPortRaw, 0, 0, 65_535, problems);
  const metricsHost = env['METRICS_HOST']?.trim() || host;
  if (/[\s/]/.test(metricsHost)) problems.push(`METRICS_HOST must be a host name or IP address, got ${JSON.stringify(metricsHost)}`);
  if (metricsPort !== null && !metrics) problems.push('METRICS_PORT is set but METRICS is off: there would be nothing to serve on it');
  if (metricsPort !== null && metricsPort !== 0 && metricsPort === port && metricsHost === host) {
    problems.push(`METRICS_PORT must differ from PORT (both ${port})`);
  }
  if (allowLoopbackTools && nodeEnv === 'production') {
    problems.push('ALLOW_LOOPBACK_TOOLS must not be on when NODE_ENV=production');
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    port,
    host,
    dataDir,
    publicUrl,
    apiTokenTtlSeconds,
    responseValidation,
    logLevel,
    allowLoopbackTools,
    locationsTimeoutMs,
    provisionTimeoutMs,
    httpBodyLimitBytes,
    shutdownGraceMs,
    nodeEnv,
    ...database,
    platformToken,
    authFailuresPerAddress,
    authFailuresPerCredential,
    lmsAutoActivate,
    trustProxy,
    metrics,
    metricsPort,
    metricsHost,
  };
}

const BLOB_STORES: readonly BlobStoreKind[] = ['local', 'postgres', 's3'];

/**
 * The store lines: `DATABASE_URL` picks PostgreSQL, and nothing falls back silently. A URL that is not
 * PostgreSQL's, or a shared blob store without the database to hold it, stops the start. Messages never
 * repeat the URL, which usually carries a password.
 */
function readDatabase(
  env: NodeJS.ProcessEnv,
  problems: string[],
): Pick<Config, 'databaseUrl' | 'databaseSchema' | 'databasePoolSize' | 'blobStore' | 's3'> {
  let databaseUrl: string | null = env['DATABASE_URL']?.trim() || null;
  // A bad URL is reported once, as itself, not again by every setting that needs it.
  const databaseUrlGiven = databaseUrl !== null;
  if (databaseUrl !== null) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(databaseUrl);
    } catch {
      problems.push('DATABASE_URL must be a URL such as postgres://tis:secret@db.example.edu:5432/tis (it could not be parsed)');
    }
    if (parsed && parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
      problems.push(`DATABASE_URL must start with postgres:// or postgresql://, got ${parsed.protocol}//...; leave it unset for SQLite under DATA_DIR`);
      parsed = null;
    }
    if (parsed === null) databaseUrl = null;
  }
  const schemaRaw = env['DATABASE_SCHEMA']?.trim() || null;
  let databaseSchema: string | null = null;
  if (schemaRaw !== null) {
    if (!databaseUrlGiven) {
      problems.push('DATABASE_SCHEMA is set but DATABASE_URL is not: the schema names where the PostgreSQL tables live');
    } else if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schemaRaw)) {
      problems.push(`DATABASE_SCHEMA must be a lower-case SQL identifier (letters, digits, _), got ${JSON.stringify(schemaRaw)}`);
    } else if (databaseUrl !== null && new URL(databaseUrl).searchParams.has('options')) {
      // The URL's `options` would replace the search path the schema sets, without a word.
      problems.push('DATABASE_SCHEMA and an `options` parameter in DATABASE_URL cannot be combined: name the schema in one place');
    } else {
      databaseSchema = schemaRaw;
    }
  }
  const databasePoolSize = parseIntIn('DATABASE_POOL_SIZE', env['DATABASE_POOL_SIZE'], 10, 1, 1000, problems);
  const blobRaw = (env['BLOB_STORE']?.trim() || 'local').toLowerCase();
  let blobStore: BlobStoreKind = 'local';
  if ((BLOB_STORES as readonly string[]).includes(blobRaw)) blobStore = blobRaw as BlobStoreKind;
  else problems.push(`BLOB_STORE must be one of ${BLOB_STORES.join(', ')}, got ${JSON.stringify(env['BLOB_STORE'])}`);
  if (blobStore === 'postgres' && !databaseUrlGiven) {
    problems.push('BLOB_STORE=postgres keeps files in the PostgreSQL database, so it needs DATABASE_URL');
  }
  const s3 = readS3Settings(env, blobStore === 's3', problems, parseBool);
  return { databaseUrl, databaseSchema, databasePoolSize, blobStore, s3 };
}

/** A configuration for tests and embedding, from explicit values over the defaults. */
export function configFrom(overrides: Partial<Config> & { dataDir: string }): Config {
  const base = loadConfig({ NODE_ENV: 'test' }, process.cwd());
  const merged: Config = { ...base, ...overrides };
  if (overrides.publicUrl === undefined) merged.publicUrl = originOf(merged.host, merged.port);
  return merged;
}
