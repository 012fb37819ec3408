import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import {
  ForeignKeyViolationError,
  MIGRATIONS,
  MigrationError,
  SqliteDriver,
  StoreBusyError,
  StoreClosedError,
  TransactionMisuseError,
  UniqueViolationError,
  migrate,
  migrationChecksum,
  newId,
  normalizeParams,
  parseApiKey,
  rowValues,
  systemClock,
  toPostgresPlaceholders,
} from '../../server/store/index.js';
import type { Migration, RootDriver } from '../../server/store/index.js';
import { STORE_TARGETS, openAt, tempDir } from './helpers.js';

/** Tables of the store's schema, in either dialect. */
async function tableNames(driver: RootDriver): Promise<string[]> {
  const rows =
    driver.dialect === 'sqlite'
      ? await driver.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      : await driver.all<{ name: string }>(
          'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name',
        );
  return rows.map((r) => r.name);
}

describe.each(STORE_TARGETS)('migrations ($name)', (target) => {
  it('apply on a fresh database and are idempotent on reopen', async () => {
    const { location, done } = await target.emptyDatabase();
    try {
      const first = await openAt(location);
      expect(first.migrations.applied).toEqual(MIGRATIONS.map((m) => m.id));
      expect(await tableNames(first.driver)).toEqual(
        expect.arrayContaining(['apps', 'storage_rows', 'files', 'upload_reservations', 'grade_attempts', 'schema_migrations']),
      );
      await first.close();

      const second = await openAt(location);
      expect(second.migrations.applied).toEqual([]);
      const recorded = await second.driver.all<{ id: string; checksum: string }>('SELECT id, checksum FROM schema_migrations ORDER BY id');
      expect(recorded.map((r) => r.id)).toEqual(MIGRATIONS.map((m) => m.id));
      expect(recorded.every((r) => /^[0-9a-f]{64}$/.test(r.checksum))).toBe(true);
      // Both dialects record the same checksums wherever a migration's statements are the same.
      for (const m of MIGRATIONS) {
        expect(recorded.find((r) => r.id === m.id)?.checksum).toBe(migrationChecksum(m, target.name));
      }
      await second.close();
    } finally {
      await done();
    }
  });

  it('let several stores start together on a fresh database: one applies, none fails', async () => {
    const { location, done } = await target.emptyDatabase();
    try {
      const stores = await Promise.all(Array.from({ length: 4 }, () => openAt(location)));
      const applied = stores.map((s) => s.migrations.applied).filter((a) => a.length > 0);
      expect(applied).toEqual([MIGRATIONS.map((m) => m.id)]);
      await Promise.all(stores.map((s) => s.close()));
    } finally {
      await done();
    }
  });

  it('apply a later migration on upgrade, and roll a failing one back entirely', async () => {
    const { driver, done } = await target.freshDriver();
    try {
      await migrate(driver, systemClock);
      const extra: Migration = {
        id: '9000_extra',
        sql: { sqlite: ['CREATE TABLE extra (id TEXT PRIMARY KEY)'], postgres: ['CREATE TABLE extra (id TEXT PRIMARY KEY)'] },
      };
      expect((await migrate(driver, systemClock, [...MIGRATIONS, extra])).applied).toEqual(['9000_extra']);

      const broken: Migration = {
        id: '9001_broken',
        sql: {
          sqlite: ['CREATE TABLE half (id TEXT)', 'CREATE TABLE nonsense ('],
          postgres: ['CREATE TABLE half (id TEXT)', 'CREATE TABLE nonsense ('],
        },
      };
      await expect(migrate(driver, systemClock, [...MIGRATIONS, extra, broken])).rejects.toThrow();
      expect(await tableNames(driver)).not.toContain('half');
      const recorded = await driver.get("SELECT id FROM schema_migrations WHERE id = '9001_broken'");
      expect(recorded).toBeUndefined();
      expect((await migrate(driver, systemClock, [...MIGRATIONS, extra])).applied).toEqual([]);
    } finally {
      await done();
    }
  });

  it('refuse a database whose applied migration was edited, or that a newer version migrated', async () => {
    const { store, location, done } = await target.fresh();
    try {
      await store.driver.run("UPDATE schema_migrations SET checksum = 'edited' WHERE id = '0001_initial'");
      await expect(openAt(location)).rejects.toBeInstanceOf(MigrationError);

      await store.driver.run("DELETE FROM schema_migrations WHERE id = '0001_initial'");
      await store.driver.run("INSERT INTO schema_migrations (id, checksum, applied_at) VALUES ('9999_future', 'x', 0)");
      await expect(openAt(location)).rejects.toThrow(/newer version/);
    } finally {
      await done();
    }
  });
});

describe('SQLite driver', () => {
  it('opens in WAL mode with synchronous=NORMAL (its own fsync barrier makes commits durable), foreign keys on and no blocking busy handler', async () => {
    const { dir, cleanup } = tempDir();
    const driver = new SqliteDriver({ path: join(dir, 'x', 'db.sqlite'), busyTimeoutMs: 1234 });
    try {
      expect(driver.pragma('journal_mode')).toBe('wal');
      expect(driver.pragma('synchronous')).toBe(1); // NORMAL
      expect(driver.pragma('foreign_keys')).toBe(1);
      // The busy timeout is waited out by async retries, never by SQLite's handler on the event loop.
      expect(driver.pragma('busy_timeout')).toBe(0);
    } finally {
      await driver.close();
      cleanup();
    }
  });

  it('waits for another connection’s write lock without blocking the event loop, and gives up after the busy timeout', async () => {
    const { dir, cleanup } = tempDir();
    const path = join(dir, 'db.sqlite');
    const a = new SqliteDriver({ path });
    const b = new SqliteDriver({ path, busyTimeoutMs: 2000 });
    const impatient = new SqliteDriver({ path, busyTimeoutMs: 30 });
    try {
      await a.run('CREATE TABLE t (id TEXT PRIMARY KEY)');
      let ticks = 0;
      const timer = setInterval(() => (ticks += 1), 5);
      let locked!: () => void;
      const lockedPromise = new Promise<void>((resolve) => (locked = resolve));
      const holder = a.transaction(async (tx) => {
        await tx.run("INSERT INTO t VALUES ('a')");
        locked();
        await sleep(150);
      });
      await lockedPromise;
      await expect(impatient.run("INSERT INTO t VALUES ('c')")).rejects.toBeInstanceOf(StoreBusyError);
      await b.run("INSERT INTO t VALUES ('b')");
      await holder;
      clearInterval(timer);
      expect(ticks).toBeGreaterThan(5);
      expect(await b.all('SELECT id FROM t ORDER BY id')).toEqual([{ id: 'a' }, { id: 'b' }]);
    } finally {
      await Promise.all([a.close(), b.close(), impatient.close()]);
      cleanup();
    }
  });
});

describe('SQLite group commit', () => {
  it('answers each write only after an fsync of the WAL, and concurrent writes share one', async () => {
    const { dir, cleanup } = tempDir();
    const path = join(dir, 'db.sqlite');
    const driver = new SqliteDriver({ path });
    try {
      await driver.run('CREATE TABLE t (id INTEGER PRIMARY KEY)');
      const before = driver.durability();
      expect(before.syncs).toBeGreaterThanOrEqual(1);
      expect(before.syncs).toBeLessThanOrEqual(before.commits);
      // Every acknowledged write has had an fsync that started after its commit.
      await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          await driver.run('INSERT INTO t VALUES (?)', [i]);
          const now = driver.durability();
          expect(now.syncs).toBeGreaterThan(before.syncs);
        }),
      );
      const after = driver.durability();
      expect(after.commits - before.commits).toBe(50);
      // 50 commits issued together: one fsync covers all those committed while the previous one ran.
      expect(after.syncs - before.syncs).toBeLessThan(50);
      // A read-only transaction commits nothing and waits for no fsync.
      await driver.transaction((tx) => tx.get('SELECT COUNT(*) AS n FROM t'));
      expect(driver.durability()).toEqual(after);
    } finally {
      await driver.close();
      cleanup();
    }
  });
});

describe.each(STORE_TARGETS)('driver semantics ($name)', (target) => {
  it('commits when the callback resolves and rolls back when it throws', async () => {
    const { store, done } = await target.fresh();
    const db = store.driver;
    try {
      await db.run('CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER)');
      await db.transaction(async (tx) => {
        await tx.run('INSERT INTO t VALUES (?, ?)', ['a', 1]);
      });
      await expect(
        db.transaction(async (tx) => {
          await tx.run('INSERT INTO t VALUES (?, ?)', ['b', 2]);
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect(await db.all('SELECT id FROM t ORDER BY id')).toEqual([{ id: 'a' }]);
    } finally {
      await done();
    }
  });

  it('turns a nested transaction into a savepoint that rolls back alone', async () => {
    const { store, done } = await target.fresh();
    const db = store.driver;
    try {
      await db.run('CREATE TABLE t (id TEXT PRIMARY KEY)');
      await db.transaction(async (tx) => {
        await tx.run("INSERT INTO t VALUES ('outer')");
        await expect(
          tx.transaction(async (inner) => {
            await inner.run("INSERT INTO t VALUES ('inner')");
            throw new Error('inner fails');
          }),
        ).rejects.toThrow('inner fails');
        await tx.transaction(async (inner) => {
          await inner.run("INSERT INTO t VALUES ('inner2')");
        });
      });
      expect(await db.all('SELECT id FROM t ORDER BY id')).toEqual([{ id: 'inner2' }, { id: 'outer' }]);
    } finally {
      await done();
    }
  });

  it('goes on after a failed statement when it ran in a nested transaction (the portable way to recover)', async () => {
    const { store, done } = await target.fresh();
    const db = store.driver;
    try {
      await db.run('CREATE TABLE t (id TEXT PRIMARY KEY)');
      await db.transaction(async (tx) => {
        await tx.run("INSERT INTO t VALUES ('a')");
        await expect(tx.transaction((inner) => inner.run("INSERT INTO t VALUES ('a')"))).rejects.toBeInstanceOf(
          UniqueViolationError,
        );
        await tx.run("INSERT INTO t VALUES ('b')");
      });
      expect(await db.all('SELECT id FROM t ORDER BY id')).toEqual([{ id: 'a' }, { id: 'b' }]);
    } finally {
      await done();
    }
  });

  it('refuses, instead of deadlocking, the store itself or an outer handle used inside a transaction', async () => {
    const { store, done } = await target.fresh();
    const db = store.driver;
    try {
      await db.run('CREATE TABLE t (id TEXT PRIMARY KEY)');
      await expect(db.transaction(async () => db.get('SELECT 1 AS one'))).rejects.toBeInstanceOf(TransactionMisuseError);
      await expect(db.transaction(async () => db.transaction(async () => 1))).rejects.toBeInstanceOf(TransactionMisuseError);
      await expect(db.transaction(async () => store.apps.list())).rejects.toBeInstanceOf(TransactionMisuseError);
      await expect(
        db.transaction(async (tx) => tx.transaction(async () => tx.run("INSERT INTO t VALUES ('x')"))),
      ).rejects.toBeInstanceOf(TransactionMisuseError);
      let leaked: { run: (sql: string) => Promise<unknown> } | undefined;
      await db.transaction(async (tx) => {
        leaked = tx;
      });
      await expect(leaked?.run("INSERT INTO t VALUES ('late')")).rejects.toBeInstanceOf(TransactionMisuseError);
      // The store is still usable afterwards.
      expect(await db.all('SELECT id FROM t')).toEqual([]);
    } finally {
      await done();
    }
  });

  it('runs parallel statements of one transaction one after another', async () => {
    const { store, done } = await target.fresh();
    const db = store.driver;
    try {
      await db.run('CREATE TABLE t (id INTEGER PRIMARY KEY)');
      await db.transaction(async (tx) => {
        await Promise.all(Array.from({ length: 20 }, (_, i) => tx.run('INSERT INTO t VALUES (?)', [i])));
        await Promise.all([
          tx.transaction(async (inner) => inner.run('INSERT INTO t VALUES (100)')),
          tx.run('INSERT INTO t VALUES (101)'),
          tx.transaction(async (inner) => inner.run('INSERT INTO t VALUES (102)')),
        ]);
      });
      expect((await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM t'))?.n).toBe(23);
    } finally {
      await done();
    }
  });

  it('never lets a read outside a transaction see its uncommitted writes', async () => {
    const { store, done } = await target.fresh();
    const db = store.driver;
    try {
      await db.run('CREATE TABLE t (id TEXT PRIMARY KEY)');
      let inserted!: () => void;
      const insertedPromise = new Promise<void>((resolve) => (inserted = resolve));
      const writer = db
        .transaction(async (tx) => {
          await tx.run("INSERT INTO t VALUES ('ghost')");
          inserted();
          await sleep(50);
          throw new Error('rolled back');
        })
        .catch(() => 'rolled back');
      await insertedPromise;
      const read = await db.get("SELECT id FROM t WHERE id = 'ghost'");
      expect(read).toBeUndefined();
      expect(await writer).toBe('rolled back');
    } finally {
      await done();
    }
  });

  it('maps constraint failures to typed errors and refuses undefined parameters', async () => {
    const { store, done } = await target.fresh();
    const db = store.driver;
    try {
      await db.run('CREATE TABLE p (id TEXT PRIMARY KEY)');
      await db.run('CREATE TABLE c (id TEXT PRIMARY KEY, p TEXT REFERENCES p (id))');
      await db.run("INSERT INTO p VALUES ('x')");
      await expect(db.run("INSERT INTO p VALUES ('x')")).rejects.toBeInstanceOf(UniqueViolationError);
      await expect(db.run("INSERT INTO c VALUES ('1', 'missing')")).rejects.toBeInstanceOf(ForeignKeyViolationError);
      await expect(db.run('INSERT INTO p VALUES (?)', [undefined as unknown as string])).rejects.toThrow(/undefined/);
      expect(normalizeParams([true, false, 'a', 1, null])).toEqual([1, 0, 'a', 1, null]);
    } finally {
      await done();
    }
  });

  it('routes a writing statement given to get() through a transaction', async () => {
    const { store, done } = await target.fresh();
    const db = store.driver;
    try {
      await db.run('CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER)');
      const row = await db.get<{ id: string }>("INSERT INTO t VALUES ('r', 1) RETURNING id");
      expect(row).toEqual({ id: 'r' });
    } finally {
      await done();
    }
  });

  it('reads rows as arrays of column values in SELECT order, and the same statement as objects afterwards', async () => {
    const { store, done } = await target.fresh();
    const db = store.driver;
    try {
      await db.run('CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER, note TEXT)');
      await db.run('INSERT INTO t VALUES (?, ?, ?), (?, ?, ?)', ['a', 1, null, 'b', 2, 'x']);
      const sql = 'SELECT note AS z_note, id AS a_id, n AS m_n FROM t WHERE n >= ? ORDER BY id';
      const expected = [
        [null, 'a', 1],
        ['x', 'b', 2],
      ];
      expect(await rowValues(db, sql, [1])).toEqual(expected);
      // The statement the array read used still answers objects to `all` and `get` (SQLite's raw mode is put back).
      expect(await db.all(sql, [1])).toEqual([
        { z_note: null, a_id: 'a', m_n: 1 },
        { z_note: 'x', a_id: 'b', m_n: 2 },
      ]);
      expect(await db.transaction((tx) => rowValues(tx, sql, [2]))).toEqual([['x', 'b', 2]]);
      expect(await db.get(sql, [2])).toEqual({ z_note: 'x', a_id: 'b', m_n: 2 });
      if (db.values) await expect(db.values('INSERT INTO t VALUES (?, ?, ?)', ['c', 3, null])).rejects.toThrow(TypeError);
      expect(await rowValues(db, 'SELECT id FROM t WHERE id = ?', ['nothing'])).toEqual([]);
    } finally {
      await done();
    }
  });

  it('answers StoreClosedError after close', async () => {
    const { store, done } = await target.fresh();
    await done();
    await expect(store.apps.list()).rejects.toBeInstanceOf(StoreClosedError);
    await expect(store.driver.run('SELECT 1')).rejects.toBeInstanceOf(StoreClosedError);
    await store.close(); // idempotent
  });
});

describe('portability helpers and IDs', () => {
  it('translates ? placeholders to $n outside literals, identifiers and comments', () => {
    expect(toPostgresPlaceholders('SELECT a FROM t WHERE a = ? AND b = ?')).toBe('SELECT a FROM t WHERE a = $1 AND b = $2');
    expect(toPostgresPlaceholders(`SELECT '?', "we?rd", 'it''s ?' -- what?\n, ? /* ? */ , ?`)).toBe(
      `SELECT '?', "we?rd", 'it''s ?' -- what?\n, $1 /* ? */ , $2`,
    );
  });

  it('makes prefixed IDs with 26 characters of base32', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newId('att')));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^att_[a-z2-7]{26}$/);
  });

  it('parses the app ID out of a key whose secret contains underscores', () => {
    const appId = newId('app');
    expect(parseApiKey(`ltiaas_${appId}_${'_'.repeat(20)}${'a'.repeat(23)}`)).toEqual({ appId });
    expect(parseApiKey(`ltiaas_${appId}_short`)).toBeNull();
    expect(parseApiKey('Bearer nonsense')).toBeNull();
  });
});
