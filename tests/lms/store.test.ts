/**
 * The LMS's SQLite file made before its tables were prefixed `lms_` (LTI-80) keeps its data: the old tables
 * are renamed at open, their foreign keys with them. Writes to a file store are answered after an fsync
 * that concurrent writes share (PERF-74).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openLmsStore } from '../../lms/store.ts';
import { LMS_POSTGRES, lmsStoreFor } from './stores.ts';

describe('the LMS store on a SQLite file of before the lms_ prefix', () => {
  it('renames the old tables and keeps their rows and foreign keys', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tis-lms-store-'));
    try {
      const file = join(dir, 'lms.sqlite');
      const old = new Database(file);
      old.exec(`CREATE TABLE platform_keys (kid TEXT PRIMARY KEY, private_jwk TEXT NOT NULL, public_jwk TEXT NOT NULL, created INTEGER NOT NULL);
        CREATE TABLE registrations (client_id TEXT PRIMARY KEY, client_name TEXT NOT NULL, initiate_login_uri TEXT NOT NULL, redirect_uris TEXT NOT NULL,
          jwks_uri TEXT NOT NULL, target_link_uri TEXT NOT NULL, domain TEXT NOT NULL, scopes TEXT NOT NULL, grants_line_item_scope INTEGER NOT NULL DEFAULT 1,
          custom_parameters TEXT NOT NULL, messages TEXT NOT NULL, claims TEXT NOT NULL, document TEXT NOT NULL, created INTEGER NOT NULL);
        CREATE TABLE deployments (deployment_id TEXT PRIMARY KEY, client_id TEXT NOT NULL REFERENCES registrations(client_id), title TEXT NOT NULL, created INTEGER NOT NULL);
        INSERT INTO platform_keys VALUES ('kid-1', '{}', '{}', 1);
        INSERT INTO registrations VALUES ('client-1', 'Tool', 'u', '[]', 'j', 't', 'd', '[]', 1, '{}', '[]', '[]', '{}', 1);
        INSERT INTO deployments VALUES ('deployment-1', 'client-1', 'School', 1);`);
      old.close();
      const store = await openLmsStore({ file });
      try {
        expect(await store.all('SELECT kid FROM lms_platform_keys')).toEqual([{ kid: 'kid-1' }]);
        expect(await store.all('SELECT deployment_id, client_id FROM lms_deployments')).toEqual([{ deployment_id: 'deployment-1', client_id: 'client-1' }]);
        // The foreign key follows the renamed table: a deployment of an unknown client is still refused.
        await expect(store.run("INSERT INTO lms_deployments VALUES ('deployment-2', 'nobody', 'x', 2)")).rejects.toThrow(/FOREIGN KEY/);
        await store.run("INSERT INTO lms_deployments VALUES ('deployment-2', 'client-1', 'x', 2)");
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the LMS store on a SQLite file: group commit (PERF-74)', () => {
  it('answers each write after an fsync, shares fsyncs between concurrent writes, and keeps every answered write', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tis-lms-store-'));
    try {
      const file = join(dir, 'lms.sqlite');
      const store = await openLmsStore({ file });
      const durability = (): { commits: number; syncs: number } => (store as unknown as { durability(): { commits: number; syncs: number } }).durability();
      try {
        const before = durability();
        await Promise.all(
          Array.from({ length: 40 }, (_, i) => store.run('INSERT INTO lms_settings (name, value) VALUES (?, ?)', [`k${i}`, String(i)])),
        );
        await store.transaction(async (tx) => {
          await tx.run('INSERT INTO lms_settings (name, value) VALUES (?, ?)', ['in-tx', 'x']);
        });
        const after = durability();
        expect(after.commits - before.commits).toBe(41);
        // Every answered write was behind an fsync, and the concurrent ones shared theirs.
        expect(after.syncs - before.syncs).toBeGreaterThan(0);
        expect(after.syncs - before.syncs).toBeLessThan(41);
        // A read is not a commit.
        await store.get('SELECT value FROM lms_settings WHERE name = ?', ['k1']);
        expect(durability().commits).toBe(after.commits);
      } finally {
        await store.close();
      }
      // Another connection to the file sees every answered write.
      const again = new Database(file, { readonly: true });
      try {
        expect((again.prepare("SELECT COUNT(*) AS n FROM lms_settings WHERE name LIKE 'k%' OR name = 'in-tx'").get() as { n: number }).n).toBe(41);
      } finally {
        again.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.runIf(LMS_POSTGRES)('the LMS store on PostgreSQL: named statements (PERF-130)', () => {
  it('prepares a statement with parameters once per connection and answers it as before', async () => {
    const stores = lmsStoreFor('postgres');
    await stores.open();
    const store = await openLmsStore(stores.location());
    try {
      const prepared = await store.transaction(async (tx) => {
        for (let i = 0; i < 3; i += 1) expect(await tx.get<{ n: number }>('SELECT CAST(? AS integer) + 1 AS n', [i])).toEqual({ n: i + 1 });
        return tx.all('SELECT name FROM pg_prepared_statements WHERE statement LIKE ?', ['SELECT CAST($1 AS integer) + 1%']);
      });
      expect(prepared).toHaveLength(1);
      await expect(store.get('SELECT CAST(? AS integer) AS n', ['not a number'])).rejects.toThrow(/invalid input syntax/);
      expect(await store.get<{ n: number }>('SELECT CAST(? AS integer) AS n', ['7'])).toEqual({ n: 7 });
    } finally {
      await store.close();
      await stores.drop();
    }
  });
});
