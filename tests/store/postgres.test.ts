/**
 * What only PostgreSQL needs proving: several instances (each its own pool) on one database, row locks
 * with a bounded wait, int8 parsing, and how a PostgreSQL transaction fails. The behaviour both stores
 * share is tested on both by the other files of this folder.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  FileQuotaError,
  PostgresDriver,
  StoreBusyError,
  StoreClosedError,
  TransactionMisuseError,
  UniqueViolationError,
  openStore,
} from '../../server/store/index.js';
import type { JsonObject, RowKey, Store } from '../../server/store/index.js';
import { lockName } from '../../server/store/pg-locks.js';
import { ManualClock, POSTGRES_REQUIRED, POSTGRES_TARGET, POSTGRES_URL, postgresStatus, seedCourse } from './helpers.js';

const BIG = { maxBytes: 1_048_576 };

describe('PostgreSQL availability', () => {
  it.skipIf(!POSTGRES_REQUIRED && !postgresStatus.available)(
    'answers at TIS_TEST_DATABASE_URL (required in CI, where a missing server fails here)',
    () => {
      expect(postgresStatus.available, postgresStatus.reason).toBe(true);
    },
  );
});

describe.runIf(POSTGRES_TARGET)('PostgreSQL store', () => {
  const target = POSTGRES_TARGET!;

  it('is chosen by databaseUrl, and a URL of another kind is refused rather than falling back', async () => {
    const { location, done } = await target.emptyDatabase();
    try {
      if (location.kind !== 'postgres') throw new Error('expected PostgreSQL');
      const store = await openStore({ databaseUrl: location.databaseUrl, schema: location.schema });
      expect(store.dialect).toBe('postgres');
      expect(store.driver.forUpdate).toBe(' FOR UPDATE');
      await store.close();
      await expect(openStore({ databaseUrl: 'mysql://tis@127.0.0.1/tis' })).rejects.toThrow(/postgres/);
      expect(() => new PostgresDriver({ connectionString: POSTGRES_URL, schema: 'Bad Schema' })).toThrow(RangeError);
      expect(
        () => new PostgresDriver({ connectionString: `${POSTGRES_URL}?options=-c%20search_path%3Dother`, schema: 'tis' }),
      ).toThrow(/schema/);
    } finally {
      await done();
    }
  });

  it('returns int8 and numeric as numbers and refuses, loudly, an integer beyond 2^53', async () => {
    const { driver, done } = await target.freshDriver();
    try {
      expect(await driver.get('SELECT COUNT(*) AS n, 9007199254740991::bigint AS max, SUM(2::bigint) AS s FROM (VALUES (1), (2)) v(x)')).toEqual({
        n: 2,
        max: Number.MAX_SAFE_INTEGER,
        s: 4,
      });
      expect(await driver.get('SELECT ?::bigint AS us, 0.5::float8 AS f', [1_790_000_000_000_000])).toEqual({
        us: 1_790_000_000_000_000,
        f: 0.5,
      });
      await expect(driver.get('SELECT 9007199254740993::bigint AS n')).rejects.toThrow(/MAX_SAFE_INTEGER/);
      await expect(driver.get('SELECT -9007199254740993::numeric AS n')).rejects.toThrow(/MAX_SAFE_INTEGER/);
      // Inside a transaction the refusal ends it; the pool and the driver carry on.
      await expect(driver.transaction((tx) => tx.get('SELECT 9007199254740993::bigint AS n'))).rejects.toThrow(
        /MAX_SAFE_INTEGER/,
      );
      expect(await driver.get('SELECT 1 AS one')).toEqual({ one: 1 });
    } finally {
      await done();
    }
  });

  it('lands 100 concurrent patches of different keys from two instances on one row, under FOR UPDATE', async () => {
    const { store, openAnother, done } = await target.fresh();
    try {
      const second = await openAnother();
      const c = await seedCourse(store);
      const key: RowKey = { appId: c.appId, contextId: c.contextId, kind: 'location', locationId: c.locationId };
      await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          (i % 2 === 0 ? store : second).rows.patchRow(key, (row) => ({ ...row, [`k${i}`]: i }), BIG),
        ),
      );
      const row = JSON.parse(await second.rows.getRow(key)) as JsonObject;
      expect(Object.keys(row)).toHaveLength(100);
      for (let i = 0; i < 100; i += 1) expect(row[`k${i}`]).toBe(i);
    } finally {
      await done();
    }
  });

  it('answers StoreBusyError after the lock timeout while another instance holds the row, then goes through', async () => {
    const { store, openAnother, done } = await target.fresh();
    try {
      const impatient = await openAnother({ busyTimeoutMs: 300 });
      const c = await seedCourse(store);
      const key: RowKey = { appId: c.appId, contextId: c.contextId, kind: 'context' };
      await store.rows.putRow(key, { n: 0 }, BIG);

      let locked!: () => void;
      const lockedPromise = new Promise<void>((resolve) => (locked = resolve));
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const holder = store.transaction(async (tx) => {
        await tx.rows.patchRow(key, (row) => ({ ...row, holder: true }), BIG);
        locked();
        await released;
      });
      await lockedPromise;

      const started = Date.now();
      await expect(impatient.rows.patchRow(key, (row) => ({ ...row, late: true }), BIG)).rejects.toBeInstanceOf(StoreBusyError);
      const waited = Date.now() - started;
      expect(waited).toBeGreaterThanOrEqual(250);
      expect(waited).toBeLessThan(3000);
      // A lone statement (no transaction) is bounded the same way.
      await expect(impatient.rows.putRow(key, { replaced: true }, BIG)).rejects.toBeInstanceOf(StoreBusyError);

      release();
      await holder;
      await impatient.rows.patchRow(key, (row) => ({ ...row, late: true }), BIG);
      expect(JSON.parse(await impatient.rows.getRow(key))).toEqual({ n: 0, holder: true, late: true });
    } finally {
      await done();
    }
  });

  it('keeps `submitted` strictly increasing across three instances racing, with a frozen clock', async () => {
    const clock = new ManualClock();
    const { store, openAnother, done } = await target.fresh({ clock });
    try {
      const others = [await openAnother({ clock }), await openAnother({ clock })];
      const instances = [store, ...others];
      const c = await seedCourse(store);
      const base = { appId: c.appId, contextId: c.contextId, locationId: c.locationId, memberId: c.studentMemberId };
      const stamps = await Promise.all(
        Array.from({ length: 150 }, async (_, i) => {
          const instance = instances[i % 3]!;
          if (i % 5 === 0) return (await instance.attempts.reserveSubmitted(c.studentMemberId, c.locationId)).submittedUs;
          return (await instance.attempts.create({ ...base, score: 1, sourceType: 'api_key' })).submittedUs;
        }),
      );
      const sorted = [...stamps].sort((a, b) => a - b);
      expect(new Set(sorted).size).toBe(150);
      // One sequence with no gap: every instance saw every earlier reservation.
      expect(sorted[149]! - sorted[0]!).toBe(149);
      expect(sorted[0]).toBe(clock.ms * 1000);
    } finally {
      await done();
    }
  });

  it('gives the last file slots to exactly as many signings as fit when two instances race', async () => {
    const { store, openAnother, done } = await target.fresh();
    try {
      const second = await openAnother();
      const c = await seedCourse(store);
      const row: RowKey = { appId: c.appId, contextId: c.contextId, kind: 'member', memberId: c.studentMemberId };
      const limits = { maxFiles: 10, maxTotalBytes: 1_000_000, maxFileBytes: 1_000_000 };
      const sign = (s: Store, key: string) =>
        s.files.reserveUpload({ row, key, size: 1, contentType: 'text/plain', filename: key, attachment: false, limits });
      for (let i = 0; i < 5; i += 1) await sign(store, `existing-${i}`);
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) => sign(i % 2 === 0 ? store : second, `new-${i}`)),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(FileQuotaError);
      expect((await second.files.usage(row)).slots).toBe(10);
    } finally {
      await done();
    }
  });

  it('refuses a rotated API key and sees a suspension on every instance at once; agrees on one signing key', async () => {
    const { store, openAnother, done } = await target.fresh();
    try {
      const second = await openAnother();
      const { app, apiKey } = await store.apps.create({ name: 'Shared', hosting: 'self_hosted' });
      expect((await second.apps.verifyApiKey(apiKey!))?.id).toBe(app.id);
      const rotated = await second.apps.rotateApiKey(app.id);
      expect(await store.apps.verifyApiKey(apiKey!)).toBeNull();
      expect((await store.apps.verifyApiKey(rotated!.apiKey))?.id).toBe(app.id);
      await store.apps.setStatus(app.id, 'suspended');
      expect((await second.apps.get(app.id))?.status).toBe('suspended');

      const jwk = (n: string) => ({ privateJwk: { kty: 'RSA', d: n }, publicJwk: { kty: 'RSA', n } });
      const signers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? store : second).signingKeys.ensureSigner(jwk(`k${i}`))),
      );
      expect(new Set(signers.map((k) => k.kid)).size).toBe(1);
      expect(await store.driver.all('SELECT kid FROM signing_keys')).toHaveLength(1);
    } finally {
      await done();
    }
  });

  it('answers StoreBusyError to the victim of a deadlock, and lets the other transaction finish', async () => {
    const { driver, another, done } = await target.freshDriver();
    try {
      const other = another();
      await driver.run('CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER NOT NULL)');
      await driver.run("INSERT INTO t VALUES ('a', 0), ('b', 0)");
      let ready = 0;
      let bothLocked!: () => void;
      const both = new Promise<void>((resolve) => (bothLocked = resolve));
      const cross = (db: typeof driver, first: string, second: string) =>
        db.transaction(async (tx) => {
          await tx.run('UPDATE t SET n = n + 1 WHERE id = ?', [first]);
          ready += 1;
          if (ready === 2) bothLocked();
          await both;
          await tx.run('UPDATE t SET n = n + 1 WHERE id = ?', [second]);
        });
      const results = await Promise.allSettled([cross(driver, 'a', 'b'), cross(other, 'b', 'a')]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const failed = results.find((r) => r.status === 'rejected');
      expect(failed?.status === 'rejected' && failed.reason).toBeInstanceOf(StoreBusyError);
      expect(await driver.all('SELECT id, n FROM t ORDER BY id')).toEqual([
        { id: 'a', n: 1 },
        { id: 'b', n: 1 },
      ]);
    } finally {
      await done();
    }
  });

  it('rolls back, and says why, a transaction whose callback swallowed a failed statement', async () => {
    const { driver, done } = await target.freshDriver();
    try {
      await driver.run('CREATE TABLE t (id TEXT PRIMARY KEY)');
      await driver.run("INSERT INTO t VALUES ('a')");
      const swallowed = driver.transaction(async (tx) => {
        await tx.run("INSERT INTO t VALUES ('b')");
        await tx.run("INSERT INTO t VALUES ('a')").catch((err: unknown) => {
          expect(err).toBeInstanceOf(UniqueViolationError);
        });
        return 'resolved';
      });
      await expect(swallowed).rejects.toBeInstanceOf(TransactionMisuseError);
      // Going on after the failure is refused at once, with the reason, before the server says less.
      const goingOn = driver.transaction(async (tx) => {
        await tx.run("INSERT INTO t VALUES ('a')").catch(() => undefined);
        await tx.run("INSERT INTO t VALUES ('c')");
      });
      await expect(goingOn).rejects.toThrow(/nested tx\.transaction\(\)/);
      expect(await driver.all('SELECT id FROM t ORDER BY id')).toEqual([{ id: 'a' }]);
    } finally {
      await done();
    }
  });

  it('survives a connection killed in the middle of a transaction', async () => {
    const { driver, done } = await target.freshDriver();
    try {
      await driver.run('CREATE TABLE t (id TEXT PRIMARY KEY)');
      const killed = driver.transaction(async (tx) => {
        await tx.run("INSERT INTO t VALUES ('lost')");
        const pid = (await tx.get<{ pid: number }>('SELECT pg_backend_pid() AS pid'))!.pid;
        const admin = new pg.Client({ connectionString: POSTGRES_URL });
        await admin.connect();
        await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        await admin.end();
        await sleep(50);
        await tx.run("INSERT INTO t VALUES ('after')");
      });
      await expect(killed).rejects.toThrow();
      await driver.run("INSERT INTO t VALUES ('fine')");
      expect(await driver.all('SELECT id FROM t')).toEqual([{ id: 'fine' }]);
    } finally {
      await done();
    }
  });

  it('waits for a transaction in flight when closed, then refuses with StoreClosedError', async () => {
    const { driver, done } = await target.freshDriver();
    try {
      await driver.run('CREATE TABLE t (id TEXT PRIMARY KEY)');
      let inside!: () => void;
      const entered = new Promise<void>((resolve) => (inside = resolve));
      const tx = driver.transaction(async (t) => {
        inside();
        await sleep(100);
        await t.run("INSERT INTO t VALUES ('committed')");
      });
      await entered;
      const closing = driver.close();
      await expect(driver.get('SELECT 1 AS one')).rejects.toBeInstanceOf(StoreClosedError);
      await tx;
      await closing;
      await expect(driver.transaction(async () => 1)).rejects.toBeInstanceOf(StoreClosedError);
    } finally {
      await done();
    }
  });

  it('keeps schemas of one database apart, and serializes named locks only within a schema', async () => {
    const a = await target.fresh();
    const b = await target.fresh();
    try {
      await a.store.apps.create({ name: 'Only in A', hosting: 'hosted' });
      expect(await b.store.apps.list()).toEqual([]);
      let aHolds!: () => void;
      const held = new Promise<void>((resolve) => (aHolds = resolve));
      let finish!: () => void;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      const holder = a.store.driver.transaction(async (tx) => {
        await lockName(tx, 'x');
        aHolds();
        await finished;
      });
      await held;
      // Another schema's lock of the same name is free; the same schema's is not.
      await b.store.driver.transaction((tx) => lockName(tx, 'x'));
      const sameSchema = await a.openAnother({ busyTimeoutMs: 200 });
      await expect(sameSchema.driver.transaction((tx) => lockName(tx, 'x'))).rejects.toBeInstanceOf(StoreBusyError);
      await expect(lockName(sameSchema.driver, 'x')).rejects.toBeInstanceOf(TransactionMisuseError);
      finish();
      await holder;
    } finally {
      await Promise.all([a.done(), b.done()]);
    }
  });
});
