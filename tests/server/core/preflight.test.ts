/**
 * The start's checks of its environment (decision OPS-30): each problem one line naming its variable, and
 * nothing left behind by a check, whether it passes or not. The process-level refusal (stderr, exit code 2)
 * is tests/ops/start.test.ts's.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { configFrom } from '../../../server/config.js';
import type { Config } from '../../../server/config.js';
import { checkEnvironment } from '../../../server/startup/preflight.js';

const root = mkdtempSync(join(tmpdir(), 'tis-preflight-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** No name leaves the machine: anything but `tis.test` is unknown, as the system resolver says it. */
const lookup = async (host: string): Promise<string> => {
  if (host === 'tis.test') return '127.0.0.1';
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND', syscall: 'getaddrinfo' });
};

function check(overrides: Partial<Config> & { dataDir: string }): Promise<string[]> {
  return checkEnvironment(configFrom({ port: 0, ...overrides }), { lookup, databaseTimeoutMs: 3000 });
}

const DATABASE_URL = process.env['TIS_TEST_DATABASE_URL'] || 'postgres://tis:tis@127.0.0.1:5432/tis_test';
async function postgresAnswers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}
const withPostgres = Boolean(process.env['CI']) || (await postgresAnswers());

describe('checkEnvironment', () => {
  it('passes a usable environment, leaving DATA_DIR as it found it (absent stays absent, empty stays empty)', async () => {
    const empty = join(root, 'empty');
    mkdirSync(empty);
    expect(await check({ dataDir: empty, host: 'tis.test' })).toEqual([]);
    expect(readdirSync(empty)).toEqual([]);
    expect(await check({ dataDir: join(root, 'not-yet', 'data') })).toEqual([]);
    expect(readdirSync(root).sort()).toEqual(['empty']);
  });

  it('names DATA_DIR when it is a file, lies under a file, cannot be made or holds a bad platform-token file', async () => {
    const file = join(root, 'a-file');
    writeFileSync(file, 'x');
    expect(await check({ dataDir: file })).toEqual([`DATA_DIR ${file} is a file, not a folder`]);
    expect(await check({ dataDir: join(file, 'data') })).toEqual([`DATA_DIR ${join(file, 'data')} cannot be created: ${file} is a file, not a folder`]);
    // /proc takes no new folder, even from root; Node's recursive mkdir never returns there.
    expect(await check({ dataDir: '/proc/nope' })).toEqual(['DATA_DIR /proc/nope cannot be created: /proc is not writable (ENOENT)']);
    expect(await check({ dataDir: '/proc/1' })).toEqual(['DATA_DIR /proc/1 is not writable (ENOENT)']);
    const tokenDir = join(root, 'bad-token');
    mkdirSync(tokenDir);
    writeFileSync(join(tokenDir, 'platform-token'), 'short\n');
    expect(await check({ dataDir: tokenDir })).toEqual([
      `DATA_DIR: ${join(tokenDir, 'platform-token')} does not hold a platform token; delete it to have a new one generated, or set PLATFORM_TOKEN`,
    ]);
    // With PLATFORM_TOKEN set the file is never read.
    expect(await check({ dataDir: tokenDir, platformToken: 'p'.repeat(40) })).toEqual([]);
  });

  it('names PORT when it is taken and HOST when it does not resolve or is not this machine, all at once', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const dataDir = join(root, 'listen');
      expect(await check({ dataDir, port })).toEqual([
        `PORT ${port} is already in use on 127.0.0.1: stop what listens there, or choose another PORT`,
      ]);
      expect(await check({ dataDir, host: 'nohost.example' })).toEqual(['HOST nohost.example cannot be resolved to an address (ENOTFOUND)']);
      // TEST-NET-1 (RFC 5737): never an address of this machine.
      expect(await check({ dataDir, host: '192.0.2.1' })).toEqual(['HOST 192.0.2.1 is not an address of this machine']);
      expect(await check({ dataDir: '/proc/nope', port })).toHaveLength(2);
    } finally {
      taken.close();
    }
  });

  it('names DATABASE_URL when PostgreSQL does not answer, without repeating the password', async () => {
    const problems = await check({ dataDir: join(root, 'db'), databaseUrl: 'postgres://tis:s3cret@127.0.0.1:1/tis', blobStore: 'postgres', platformToken: 'p'.repeat(40) });
    expect(problems).toEqual([expect.stringMatching(/^DATABASE_URL: cannot connect to PostgreSQL at 127\.0\.0\.1:1: .*ECONNREFUSED/)]);
    expect(problems[0]).not.toContain('s3cret');
    // PostgreSQL for the store, the files and the token: DATA_DIR is not looked at.
    expect(readdirSync(root)).not.toContain('db');
  });

  it.runIf(withPostgres)('names DATABASE_SCHEMA when the schema does not exist, and passes the real database', async () => {
    const base = { dataDir: join(root, 'pg'), databaseUrl: DATABASE_URL, blobStore: 'postgres' as const, platformToken: 'p'.repeat(40) };
    expect(await check(base)).toEqual([]);
    expect(await check({ ...base, databaseSchema: 'tis_no_such_schema' })).toEqual([
      expect.stringMatching(/^DATABASE_SCHEMA tis_no_such_schema does not exist in the database at .*CREATE SCHEMA tis_no_such_schema/),
    ]);
  });
});
