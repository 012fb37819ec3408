import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  ForeignKeyViolationError,
  InvalidRowBodyError,
  MEMBER_ROW_MAX_BYTES,
  RowTooLargeError,
  SHARED_ROW_MAX_BYTES,
  UnstorableTextError,
  openStore,
  rowMaxBytes,
} from '../../server/store/index.js';
import type { JsonObject, RowKey, RowMemberSet, RowPatchFn, RowRequestRead } from '../../server/store/index.js';
import { applyPatch, type PatchOperation } from '../../rules/json-patch.js';
import { STORE_TARGETS, seedCourse, tempDir } from './helpers.js';

const BIG = { maxBytes: SHARED_ROW_MAX_BYTES };

/** What `run` answered, and the texts of the statements PostgreSQL was sent meanwhile (none on SQLite). */
async function watchStatements<T>(run: () => Promise<T>): Promise<[T, string[]]> {
  const statements: string[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    statements.push(String((args[0] as { text?: string }).text ?? args[0]));
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  try {
    return [await run(), statements];
  } finally {
    pg.Client.prototype.query = query;
  }
}

describe.each(STORE_TARGETS)('storage rows ($name)', (target) => {
  it('reads a never-written row as {} and returns what was written, as compact JSON in write order', async () => {
    const { store, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      const key: RowKey = { appId: c.appId, contextId: c.contextId, kind: 'context' };
      expect(await store.rows.getRow(key)).toBe('{}');
      expect(await store.rows.getRecord(key)).toBeNull();
      const { size } = await store.rows.putRow(key, { zeta: 1, alpha: { 'ü': 'ß' }, '10': true, '2': null }, BIG);
      const text = await store.rows.getRow(key);
      expect(text).toBe('{"2":null,"10":true,"zeta":1,"alpha":{"ü":"ß"}}');
      expect(size).toBe(Buffer.byteLength(text, 'utf8'));
      expect((await store.rows.getRecord(key))?.size).toBe(size);
    } finally {
      await done();
    }
  });

  it('keeps the four rows of a course apart', async () => {
    const { store, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      const base = { appId: c.appId, contextId: c.contextId };
      const keys: RowKey[] = [
        { ...base, kind: 'context' },
        { ...base, kind: 'location', locationId: c.locationId },
        { ...base, kind: 'member', memberId: c.studentMemberId },
        { ...base, kind: 'member_location', locationId: c.locationId, memberId: c.studentMemberId },
        { ...base, kind: 'member', memberId: c.teacherMemberId },
      ];
      for (const [i, key] of keys.entries()) await store.rows.putRow(key, { i }, BIG);
      for (const [i, key] of keys.entries()) expect(await store.rows.getRow(key)).toBe(`{"i":${i}}`);
      await expect(store.rows.getRow({ ...base, kind: 'location', locationId: '' })).rejects.toThrow(/locationId/);
      expect(rowMaxBytes('member')).toBe(MEMBER_ROW_MAX_BYTES);
      expect(rowMaxBytes('member_location')).toBe(524_288);
      expect(rowMaxBytes('context')).toBe(1_048_576);
      expect(rowMaxBytes('location')).toBe(SHARED_ROW_MAX_BYTES);
    } finally {
      await done();
    }
  });

  it('lands 60 concurrent patches of different keys of one row', async () => {
    const { store, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      const key: RowKey = { appId: c.appId, contextId: c.contextId, kind: 'member', memberId: c.studentMemberId };
      await store.rows.putRow(key, { keep: 'me' }, BIG);
      await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          store.rows.patchRow(key, (row) => ({ ...row, [`k${i}`]: i }), { maxBytes: MEMBER_ROW_MAX_BYTES }),
        ),
      );
      const row = JSON.parse(await store.rows.getRow(key)) as JsonObject;
      expect(Object.keys(row)).toHaveLength(61);
      expect(row['keep']).toBe('me');
      for (let i = 0; i < 60; i += 1) expect(row[`k${i}`]).toBe(i);
    } finally {
      await done();
    }
  });

  it('lands concurrent patches from two stores on one database', async () => {
    const { store, openAnother, done } = await target.fresh();
    const second = await openAnother();
    try {
      const c = await seedCourse(store);
      const key: RowKey = { appId: c.appId, contextId: c.contextId, kind: 'context' };
      await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          (i % 2 === 0 ? store : second).rows.patchRow(key, (row) => ({ ...row, [`k${i}`]: i }), BIG),
        ),
      );
      expect(Object.keys(JSON.parse(await second.rows.getRow(key)) as JsonObject)).toHaveLength(60);
    } finally {
      await second.close();
      await done();
    }
  });

  it('reads the epoch, the caller\'s membership and the row in one statement for the row guard (PERF-180)', async () => {
    const { store, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      const key: RowKey = { appId: c.appId, contextId: c.contextId, kind: 'member', memberId: c.studentMemberId };
      const epoch = await store.credentialEpoch.read();
      const unwritten = await store.rows.readForRequest(key, { userId: c.studentUserId, row: true });
      expect(unwritten).toEqual({ epoch, member: await store.members.find(c.contextId, c.studentUserId), body: null });
      await store.rows.putRow(key, { a: 1 }, BIG);
      const read = await store.rows.readForRequest(key, { userId: c.teacherUserId, row: true });
      expect(read.member?.id).toBe(c.teacherMemberId);
      expect(read.body).toBe('{"a":1}');
      // No user, no row asked for: the epoch alone, and a member of no course is none.
      expect(await store.rows.readForRequest(key, { userId: null, row: false })).toEqual({ epoch, member: null });
      expect((await store.rows.readForRequest({ ...key, contextId: 'ctx_none' }, { userId: c.studentUserId, row: true })).member).toBeNull();
      // A change of a tool moves the epoch the statement reads.
      await store.apps.setStatus(c.appId, 'suspended');
      expect((await store.rows.readForRequest(key, { userId: null, row: false })).epoch.generation).toBeGreaterThan(epoch.generation);
    } finally {
      await done();
    }
  });

  it('patches from the text the request read, and from the row as it is when that text is stale (PERF-182, PERF-184)', async () => {
    const { store, openAnother, done } = await target.fresh();
    const second = await openAnother();
    try {
      const c = await seedCourse(store);
      const key: RowKey = { appId: c.appId, contextId: c.contextId, kind: 'context' };
      const add = (name: string): RowPatchFn => (row) => ({ ...row, [name]: true });
      // Never written, read as such: the patch inserts it.
      await store.rows.patchRow(key, add('first'), { ...BIG, read: null });
      const read = await store.rows.getRow(key);
      // Another writer lands after the read: the write from the stale text misses and the patch reads again.
      await second.rows.patchRow(key, add('other'), BIG);
      await store.rows.patchRow(key, add('mine'), { ...BIG, read });
      expect(JSON.parse(await store.rows.getRow(key))).toEqual({ first: true, other: true, mine: true });
      // "Never written" when it has been: the insert finds the row and the patch reads it.
      await store.rows.patchRow(key, add('late'), { ...BIG, read: null });
      // Concurrent patches of this process, each with the text read before any of them ran: none is lost.
      // On PostgreSQL the first starts from the text the one before it wrote (PERF-184), and the nine queued
      // behind it go together, in one conditional write (PERF-211).
      const before = await store.rows.getRow(key);
      const [records, statements] = await watchStatements(() =>
        Promise.all(Array.from({ length: 10 }, (_, i) => store.rows.patchRow(key, add(`c${i}`), { ...BIG, read: before }))),
      );
      // Each is answered with the row as its own patch left it.
      expect(records.map((record) => Object.keys(JSON.parse(record.body) as JsonObject).length)).toEqual(
        Array.from({ length: 10 }, (_, i) => 5 + i),
      );
      expect(Object.keys(JSON.parse(await second.rows.getRow(key)) as JsonObject)).toHaveLength(14);
      if (store.dialect === 'postgres') expect(statements.map((text) => text.split(' ')[0])).toEqual(['UPDATE', 'UPDATE']);
      // A patch that wrote nothing (its function refused) leaves the next one to read the row.
      const refused = store.rows.patchRow(key, () => { throw new Error('refused'); }, { ...BIG, read: before });
      const after = store.rows.patchRow(key, add('after'), { ...BIG, read: before });
      await expect(refused).rejects.toThrow('refused');
      await after;
      expect(Object.keys(JSON.parse(await store.rows.getRow(key)) as JsonObject)).toHaveLength(15);
      // Queued together, a refused patch and a too large one fail alone; the next runs on the row before them.
      const outcomes = await Promise.allSettled([
        store.rows.patchRow(key, add('g0'), { ...BIG, read: await store.rows.getRow(key) }),
        store.rows.patchRow(key, add('g1'), BIG),
        store.rows.patchRow(key, () => { throw new Error('refused'); }, BIG),
        store.rows.patchRow(key, (row) => ({ ...row, big: true }), { maxBytes: 50 }),
        store.rows.patchRow(key, add('g2'), BIG),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected', 'fulfilled']);
      expect(outcomes[3]).toMatchObject({ reason: expect.any(RowTooLargeError) });
      const last = outcomes[4] as PromiseFulfilledResult<{ body: string }>;
      expect(last.value.body).toBe(await store.rows.getRow(key));
      expect(Object.keys(JSON.parse(last.value.body) as JsonObject).slice(-3)).toEqual(['g0', 'g1', 'g2']);
    } finally {
      await second.close();
      await done();
    }
  });

  it('answers each of many concurrent PUTs with its own outcome, the last to arrive landing last (PERF-183)', async () => {
    const { store, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      const base = { appId: c.appId, contextId: c.contextId };
      const one: RowKey = { ...base, kind: 'context' };
      const member: RowKey = { ...base, kind: 'member', memberId: c.studentMemberId };
      const nowhere: RowKey = { ...base, contextId: 'ctx_gone', kind: 'context' };
      const [, statements] = await watchStatements(() =>
        Promise.all([...Array.from({ length: 20 }, (_, i) => store.rows.putRow(one, { i }, BIG)), store.rows.putRow(member, { n: 1 }, BIG)]),
      );
      expect(await store.rows.getRow(one)).toBe('{"i":19}');
      expect(await store.rows.getRow(member)).toBe('{"n":1}');
      // On PostgreSQL the first went alone and the other twenty waited for it and went together.
      if (store.dialect === 'postgres') expect(statements).toHaveLength(2);

      // One PUT that fails among others: it alone is refused, the others land, the last of one row last.
      const outcomes = await Promise.allSettled([
        ...Array.from({ length: 20 }, (_, i) => store.rows.putRow(one, { j: i }, BIG)),
        store.rows.putRow(nowhere, { lost: true }, BIG),
        store.rows.putRow(member, { mine: true }, BIG),
      ]);
      expect(outcomes.slice(0, 20).every((o) => o.status === 'fulfilled')).toBe(true);
      expect(outcomes[20]).toMatchObject({ status: 'rejected', reason: expect.any(ForeignKeyViolationError) });
      expect(outcomes[21]?.status).toBe('fulfilled');
      expect(await store.rows.getRow(one)).toBe('{"j":19}');
      expect(await store.rows.getRow(member)).toBe('{"mine":true}');
      expect(await store.rows.getRecord(nowhere)).toBeNull();
    } finally {
      await done();
    }
  });

  it('answers many concurrent row guard reads each with its own membership and row, as one read alone would (PERF-210)', async () => {
    const { store, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      const base = { appId: c.appId, contextId: c.contextId };
      const mine: RowKey = { ...base, kind: 'member', memberId: c.studentMemberId };
      const shared: RowKey = { ...base, kind: 'location', locationId: c.locationId };
      await store.rows.putRow(mine, { mine: 1 }, BIG);
      const asks: [RowKey, { userId: string | null; row: boolean }][] = [
        [mine, { userId: c.studentUserId, row: true }],
        [mine, { userId: c.teacherUserId, row: false }],
        [shared, { userId: c.teacherUserId, row: true }], // never written
        [{ ...base, contextId: 'ctx_gone', kind: 'context' }, { userId: c.studentUserId, row: true }],
        [mine, { userId: null, row: true }],
        [mine, { userId: 'usr_stranger', row: false }],
      ];
      const alone: RowRequestRead[] = [];
      for (const [key, options] of asks) alone.push(await store.rows.readForRequest(key, options));
      expect(alone.map((read) => [read.member?.id ?? null, read.body])).toEqual([
        [c.studentMemberId, '{"mine":1}'],
        [c.teacherMemberId, undefined],
        [c.teacherMemberId, null],
        [null, null],
        [null, '{"mine":1}'],
        [null, undefined],
      ]);

      const [together, statements] = await watchStatements(() =>
        Promise.all(Array.from({ length: 5 }, () => asks).flat().map(([key, options]) => store.rows.readForRequest(key, options))),
      );
      expect(together).toEqual(Array.from({ length: 5 }, () => alone).flat());
      // On PostgreSQL they went together: in one statement, or two when the first found nothing in flight.
      if (store.dialect === 'postgres') expect(statements.length).toBeLessThanOrEqual(2);

      // A read the store refuses (text PostgreSQL cannot hold) fails alone; the reads beside it are answered.
      const outcomes = await Promise.allSettled([
        ...asks.map(([key, options]) => store.rows.readForRequest(key, options)),
        store.rows.readForRequest(mine, { userId: 'usr_\u0000', row: true }),
        ...asks.map(([key, options]) => store.rows.readForRequest(key, options)),
      ]);
      expect(outcomes[asks.length]).toMatchObject({ status: 'rejected', reason: expect.any(UnstorableTextError) });
      expect(outcomes.filter((o) => o.status === 'fulfilled').map((o) => o.value)).toEqual([...alone, ...alone]);
    } finally {
      await done();
    }
  });

  it('leaves the row unchanged when the patch function throws', async () => {
    const { store, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      const key: RowKey = { appId: c.appId, contextId: c.contextId, kind: 'context' };
      await store.rows.putRow(key, { a: 1 }, BIG);
      const before = await store.rows.getRecord(key);
      await expect(
        store.rows.patchRow(
          key,
          () => {
            throw new Error('test failed: /a is not 2');
          },
          BIG,
        ),
      ).rejects.toThrow('test failed');
      expect(await store.rows.getRecord(key)).toEqual(before);

      const fresh: RowKey = { appId: c.appId, contextId: c.contextId, kind: 'location', locationId: c.locationId };
      await expect(
        store.rows.patchRow(
          fresh,
          () => {
            throw new Error('no');
          },
          BIG,
        ),
      ).rejects.toThrow('no');
      expect(await store.rows.getRecord(fresh)).toBeNull();
      await expect(store.rows.patchRow(fresh, () => [] as unknown as JsonObject, BIG)).rejects.toBeInstanceOf(
        InvalidRowBodyError,
      );
      expect(await store.rows.getRecord(fresh)).toBeNull();
    } finally {
      await done();
    }
  });

  it('refuses a write over maxBytes and writes nothing', async () => {
    const { store, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      const key: RowKey = { appId: c.appId, contextId: c.contextId, kind: 'member', memberId: c.studentMemberId };
      await store.rows.putRow(key, { small: true }, { maxBytes: MEMBER_ROW_MAX_BYTES });
      // {"s":"…"} is 8 bytes of punctuation plus the string; "é" is 2 bytes in UTF-8.
      const exactly = { s: 'é'.repeat((MEMBER_ROW_MAX_BYTES - 8) / 2) };
      expect((await store.rows.putRow(key, exactly, { maxBytes: MEMBER_ROW_MAX_BYTES })).size).toBe(MEMBER_ROW_MAX_BYTES);
      const over = { s: 'é'.repeat((MEMBER_ROW_MAX_BYTES - 8) / 2) + 'x' };
      const err = await store.rows.putRow(key, over, { maxBytes: MEMBER_ROW_MAX_BYTES }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RowTooLargeError);
      expect(err).toMatchObject({ size: MEMBER_ROW_MAX_BYTES + 1, maxBytes: MEMBER_ROW_MAX_BYTES });
      expect(await store.rows.getRow(key)).toBe(JSON.stringify(exactly));

      await store.rows.putRow(key, { small: true }, { maxBytes: MEMBER_ROW_MAX_BYTES });
      await expect(
        store.rows.patchRow(key, (row) => ({ ...row, big: 'x'.repeat(MEMBER_ROW_MAX_BYTES) }), {
          maxBytes: MEMBER_ROW_MAX_BYTES,
        }),
      ).rejects.toBeInstanceOf(RowTooLargeError);
      expect(await store.rows.getRow(key)).toBe('{"small":true}');
      await expect(store.rows.putRow(key, null as unknown as JsonObject, BIG)).rejects.toBeInstanceOf(InvalidRowBodyError);
    } finally {
      await done();
    }
  });

  it('discards a course’s rows, files, uploads, provisioning and tokens together (Sandbox reset)', async () => {
    const { store, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      const key: RowKey = { appId: c.appId, contextId: c.contextId, kind: 'context' };
      await store.rows.putRow(key, { a: 1 }, BIG);
      const upload = await store.files.reserveUpload({
        row: key,
        key: 'a.txt',
        size: 10,
        contentType: 'text/plain',
        filename: 'a.txt',
        attachment: false,
      });
      const done1 = await store.files.completeUpload(upload.id);
      const pending = await store.files.reserveUpload({
        row: key,
        key: 'b.txt',
        size: 10,
        contentType: 'text/plain',
        filename: 'b.txt',
        attachment: false,
      });
      await store.provisioning.markProvisioned({ appId: c.appId, contextId: c.contextId });
      const { token } = await store.apiTokens.issue({ kind: 'launch', appId: c.appId, contextId: c.contextId });

      const { blobIds } = await store.discardContextData(c.appId, c.contextId);
      expect(blobIds.sort()).toEqual([done1.file.blobId, pending.blobId].sort());
      expect(await store.rows.getRow(key)).toBe('{}');
      expect(await store.files.list(key)).toEqual([]);
      expect(await store.provisioning.get({ appId: c.appId, contextId: c.contextId })).toBeNull();
      expect((await store.apiTokens.verify(token)).status).toBe('revoked');
      expect(await store.contexts.get(c.contextId)).not.toBeNull();
    } finally {
      await done();
    }
  });
});

describe.each(STORE_TARGETS)('store.transaction ($name)', (target) => {
  it('commits writes of several repositories together or not at all', async () => {
    const { store, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      const ctxKey: RowKey = { appId: c.appId, contextId: c.contextId, kind: 'context' };
      await expect(
        store.transaction(async (tx) => {
          await tx.rows.putRow(ctxKey, { written: true }, BIG);
          await tx.provisioning.markProvisioned({ appId: c.appId, contextId: c.contextId });
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect(await store.rows.getRow(ctxKey)).toBe('{}');
      expect(await store.provisioning.get({ appId: c.appId, contextId: c.contextId })).toBeNull();

      await store.transaction(async (tx) => {
        await tx.rows.patchRow(ctxKey, (row) => ({ ...row, n: 1 }), BIG); // a savepoint inside
        await tx.provisioning.markProvisioned({ appId: c.appId, contextId: c.contextId });
      });
      expect(await store.rows.getRow(ctxKey)).toBe('{"n":1}');
    } finally {
      await done();
    }
  });

  it('gives a one-member patch exactly the text the patch function gives, whichever way the store takes it (PERF-51)', async () => {
    const { store, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      // The handler's function: the patch applied by the rules, adds creating intermediate objects.
      const patchFn =
        (op: PatchOperation): RowPatchFn =>
        (row) => {
          const result = applyPatch(row, [op], { createIntermediates: true });
          if (!result.ok) throw new Error(result.error.message);
          return result.doc as JsonObject;
        };
      const set = (op: PatchOperation): RowMemberSet => ({
        tokens: op.path.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~')),
        value: 'value' in op ? op.value : null,
        mustExist: op.op === 'replace',
      });
      let deep: JsonObject['x'] = 1;
      for (let i = 0; i < 1100; i += 1) deep = [deep];
      const doc: JsonObject = {
        '7': 'first',
        progress: 3,
        answers: { q1: 'b', q3: ['a', 'c'] },
        big: 1e21,
        small: 1e-7,
        text: 'a\u0001"\\\ud800é\u2028',
      };
      const cases: Array<{ doc: JsonObject | null; op: PatchOperation }> = [
        { doc, op: { op: 'replace', path: '/progress', value: 4 } },
        { doc, op: { op: 'add', path: '/progress', value: { '2': 1, b: [1.5, null], c: 'ü' } } },
        { doc, op: { op: 'add', path: '/new', value: { x: 12345678901234567000, y: -0.5e-300 } } },
        { doc, op: { op: 'add', path: '/answers/q2', value: 'd' } },
        { doc, op: { op: 'replace', path: '/answers/q1', value: null } },
        { doc, op: { op: 'add', path: '/made/on/the/way', value: true } }, // intermediates: the general path
        { doc, op: { op: 'add', path: '/3', value: 'an index-like name goes first' } },
        { doc, op: { op: 'add', path: '/a"b', value: 1 } },
        { doc, op: { op: 'add', path: '/a.b[0]', value: 1 } },
        { doc, op: { op: 'add', path: '/__proto__', value: { polluted: true } } },
        { doc, op: { op: 'add', path: '/answers/q3/-', value: 'e' } },
        { doc: { ...doc, deep }, op: { op: 'replace', path: '/progress', value: 5 } },
        { doc: null, op: { op: 'add', path: '/first', value: 1 } },
      ];
      const withSet: RowKey = { appId: c.appId, contextId: c.contextId, kind: 'context' };
      const without: RowKey = { appId: c.appId, contextId: c.contextId, kind: 'member', memberId: c.studentMemberId };
      for (const { doc: start, op } of cases) {
        for (const key of [withSet, without]) {
          if (start) await store.rows.putRow(key, start, BIG);
          else await store.rows.deleteRow(key);
        }
        const expected = await store.rows.patchRow(without, patchFn(op), BIG);
        const got = await store.rows.patchRow(withSet, patchFn(op), { ...BIG, memberSet: set(op) });
        expect(got.body, `${op.op} ${op.path}`).toBe(expected.body);
        expect(got.size).toBe(expected.size);
        expect(await store.rows.getRow(withSet)).toBe(expected.body);
        expect((await store.rows.getRecord(withSet))?.size).toBe(Buffer.byteLength(expected.body, 'utf8'));
      }

      // A replace of an absent member is the patch function's refusal, and the row stays as it was.
      await store.rows.putRow(withSet, { a: 1 }, BIG);
      if (target.name === 'sqlite') {
        // On SQLite a plain member set is the one UPDATE: the patch function is not even called.
        const unused: RowPatchFn = () => {
          throw new Error('the patch function ran');
        };
        const one: PatchOperation = { op: 'replace', path: '/a', value: 2 };
        expect((await store.rows.patchRow(withSet, unused, { ...BIG, memberSet: set(one) })).body).toBe('{"a":2}');
        await store.rows.putRow(withSet, { a: 1 }, BIG);
      }
      const missing: PatchOperation = { op: 'replace', path: '/b', value: 2 };
      await expect(store.rows.patchRow(withSet, patchFn(missing), { ...BIG, memberSet: set(missing) })).rejects.toThrow(
        'path not found',
      );
      expect(await store.rows.getRow(withSet)).toBe('{"a":1}');
      // Over the limit: refused with the size the result would have had, nothing written.
      const small = { maxBytes: 64 };
      const tooBig: PatchOperation = { op: 'add', path: '/s', value: 'x'.repeat(60) };
      const err = await store.rows.patchRow(withSet, patchFn(tooBig), { ...small, memberSet: set(tooBig) }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RowTooLargeError);
      expect(err).toMatchObject({ size: Buffer.byteLength(JSON.stringify({ a: 1, s: 'x'.repeat(60) })), maxBytes: 64 });
      expect(await store.rows.getRow(withSet)).toBe('{"a":1}');
    } finally {
      await done();
    }
  });

  it('names its dialect', async () => {
    const { store, done } = await target.fresh();
    try {
      expect(store.dialect).toBe(target.name);
      expect(store.driver.dialect).toBe(target.name);
    } finally {
      await done();
    }
  });
});

describe('opening SQLite', () => {
  it('opens a data directory by name', async () => {
    const { dir, cleanup } = tempDir();
    try {
      const other = await openStore({ dataDir: join(dir, 'nested', 'data') });
      expect(other.dialect).toBe('sqlite');
      await other.close();
    } finally {
      cleanup();
    }
  });
});
