/**
 * The checks a start makes of its environment before it writes anything (decision OPS-30): `DATA_DIR` can
 * hold the store, `HOST` resolves and `HOST:PORT` can be bound, `DATABASE_URL` answers. Each problem is one
 * line naming the variable; the start stops on any with exit code 2, with no store, key or platform-token
 * file made. Every check only reads, or makes something it removes at once, so a refused start leaves the
 * machine as it found it.
 */
import { lstatSync, mkdtempSync, rmdirSync, statSync } from 'node:fs';
import { lookup as dnsLookup } from 'node:dns/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import { dirname, join } from 'node:path';
import type pg from 'pg';
import type { Config } from '../config.js';
import { PLATFORM_TOKEN_FILE, storedPlatformTokenProblem } from '../dashboard/credentials.js';

/** How a host name becomes the address to bind; tests inject one so no name leaves the machine. */
export type HostLookup = (host: string) => Promise<string>;

export interface PreflightOptions {
  lookup?: HostLookup;
  /** How long the PostgreSQL check waits for a connection before calling the database unreachable. */
  databaseTimeoutMs?: number;
}

const systemLookup: HostLookup = async (host) => (await dnsLookup(host)).address;

/** Every problem with the environment, one line each; empty when the start may go on. */
export async function checkEnvironment(config: Config, options: PreflightOptions = {}): Promise<string[]> {
  const checks: Promise<string | null>[] = [checkListen(config.host, config.port, options.lookup ?? systemLookup)];
  if (needsDataDir(config)) checks.push(Promise.resolve(checkDataDir(config)));
  if (config.databaseUrl !== null) checks.push(checkDatabase(config.databaseUrl, config.databaseSchema, options.databaseTimeoutMs ?? 10_000));
  return (await Promise.all(checks)).filter((problem): problem is string => problem !== null);
}

/** DATA_DIR holds the SQLite file, the local blobs and a generated platform token; PostgreSQL for all three needs none. */
function needsDataDir(config: Config): boolean {
  return config.databaseUrl === null || config.blobStore === 'local' || config.platformToken === null;
}

function reason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EROFS') return 'read-only file system';
  return code ?? (err instanceof Error ? err.message : String(err));
}

/**
 * DATA_DIR, or the nearest folder above it that exists, must be a folder this process can write in. Written
 * to, not judged by its mode bits: root passes every `access` check yet cannot write on a read-only mount or
 * in `/proc` (where Node's recursive mkdir never returns).
 */
function checkDataDir(config: Config): string | null {
  const dir = config.dataDir;
  let existing = dir;
  for (;;) {
    try {
      lstatSync(existing);
      break;
    } catch (err) {
      // ENOTDIR: a file stands somewhere above; the walk up finds it and says so.
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') return `DATA_DIR ${dir} cannot be used: ${reason(err)}`;
      const parent = dirname(existing);
      if (parent === existing) return `DATA_DIR ${dir} cannot be created: no folder above it exists`;
      existing = parent;
    }
  }
  let isDirectory: boolean;
  try {
    isDirectory = statSync(existing).isDirectory();
  } catch (err) {
    return `DATA_DIR ${dir} cannot be used: ${existing} cannot be read (${reason(err)})`;
  }
  if (!isDirectory) {
    return existing === dir
      ? `DATA_DIR ${dir} is a file, not a folder`
      : `DATA_DIR ${dir} cannot be created: ${existing} is a file, not a folder`;
  }
  try {
    rmdirSync(mkdtempSync(join(existing, '.tis-write-check-')));
  } catch (err) {
    return existing === dir
      ? `DATA_DIR ${dir} is not writable (${reason(err)})`
      : `DATA_DIR ${dir} cannot be created: ${existing} is not writable (${reason(err)})`;
  }
  if (existing === dir && config.platformToken === null) return storedPlatformTokenProblem(join(dir, PLATFORM_TOKEN_FILE));
  return null;
}

/** The one line for a failed listen, shared by the probe and by the real listen if the port was taken between them. */
export function listenProblem(err: unknown, host: string, port: number): string {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  switch (code) {
    case 'EADDRINUSE':
      return `PORT ${port} is already in use on ${host}: stop what listens there, or choose another PORT`;
    case 'EACCES':
      return `PORT ${port} on ${host} needs privileges this process lacks (ports below 1024 need root or CAP_NET_BIND_SERVICE)`;
    case 'EADDRNOTAVAIL':
      return `HOST ${host} is not an address of this machine`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
    case 'ENODATA':
      return `HOST ${host} cannot be resolved to an address (${code})`;
    default:
      return `HOST ${host}, PORT ${port}: cannot listen there (${reason(err)})`;
  }
}

/** Resolves HOST and binds HOST:PORT once, then releases it (decision OPS-30). */
async function checkListen(host: string, port: number, lookup: HostLookup): Promise<string | null> {
  let address: string;
  try {
    address = net.isIP(host) ? host : await lookup(host);
  } catch (err) {
    return listenProblem(err, host, port);
  }
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', (err) => resolve(listenProblem(err, host, port)));
    probe.listen({ host: address, port, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}

/** `pg` loads only when PostgreSQL is configured, as in the store (PERF-31). */
const pgLib = (): typeof pg => createRequire(import.meta.url)('pg') as typeof pg;

/**
 * Connects once as the store will (same URL, same search path) and asks which schema the tables would
 * land in. Messages name the server, never the URL, which usually carries the password.
 */
async function checkDatabase(databaseUrl: string, schema: string | null, timeoutMs: number): Promise<string | null> {
  const url = new URL(databaseUrl);
  const where = url.hostname ? `${url.hostname}:${url.port || '5432'}` : 'its local socket';
  const client = new (pgLib().Client)({
    connectionString: databaseUrl,
    connectionTimeoutMillis: timeoutMs,
    application_name: 'tis',
    ...(schema === null ? {} : { options: `-c search_path=${schema}` }),
  });
  // A server that drops the connection after the check must not crash the start with an unhandled 'error'.
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    return `DATABASE_URL: cannot connect to PostgreSQL at ${where}: ${err instanceof Error ? err.message : String(err)}`;
  }
  try {
    const result = await client.query<{ schema: string | null }>('SELECT current_schema() AS schema');
    if ((result.rows[0]?.schema ?? null) !== null) return null;
    return schema === null
      ? `DATABASE_URL: the role's search path names no schema that exists at ${where}; create one or set DATABASE_SCHEMA`
      : `DATABASE_SCHEMA ${schema} does not exist in the database at ${where}; create it (CREATE SCHEMA ${schema}) or unset DATABASE_SCHEMA`;
  } catch (err) {
    return `DATABASE_URL: PostgreSQL at ${where} refused a first query: ${err instanceof Error ? err.message : String(err)}`;
  } finally {
    await client.end().catch(() => {});
  }
}
