import { describe, expect, it } from 'vitest';
import { InvalidCursorError, isoFromUs } from '../../server/store/index.js';
import type { CreateAttemptInput, Store } from '../../server/store/index.js';
import type { Course } from './helpers.js';
import { ManualClock, STORE_TARGETS, seedCourse } from './helpers.js';

function attemptFor(c: Course, overrides: Partial<CreateAttemptInput> = {}): CreateAttemptInput {
  return {
    appId: c.appId,
    contextId: c.contextId,
    locationId: c.locationId,
    memberId: c.studentMemberId,
    score: 0.85,
    sourceType: 'api_key',
    ...overrides,
  };
}

function expectStrictlyIncreasing(values: number[]): void {
  for (let i = 1; i < values.length; i += 1) expect(values[i]!).toBeGreaterThan(values[i - 1]!);
}

describe.each(STORE_TARGETS)('grade attempts ($name)', (target) => {
  it('records an attempt pending, then its outcome, with the contract’s data fields', async () => {
    const { store, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      const pending = await store.attempts.create(
        attemptFor(c, { maxScore: 50, comment: 'Well done', sourceType: 'session', sourceId: c.teacherUserId }),
      );
      expect(pending.id).toMatch(/^att_[a-z2-7]{26}$/);
      expect(pending).toMatchObject({
        status: 'pending',
        score: 0.85,
        maxScore: 50,
        comment: 'Well done',
        activityProgress: 'Completed',
        gradingProgress: 'FullyGraded',
        response: null,
        error: '',
        sourceType: 'session',
        sourceId: c.teacherUserId,
      });
      expect(pending.submitted).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      expect(pending.submitted).toBe(isoFromUs(pending.submittedUs));

      const done1 = await store.attempts.complete(pending.id, {
        status: 'success',
        response: { status: 200, body: { resultUrl: 'https://lms/x' } },
        error: '',
      });
      expect(done1).toMatchObject({ status: 'success', response: { status: 200 }, submitted: pending.submitted });
      await expect(store.attempts.complete(pending.id, { status: 'failed', response: null, error: 'x' })).rejects.toThrow(
        /already has its outcome/,
      );

      const failed = await store.attempts.create(
        attemptFor(c, { outcome: { status: 'failed', response: null, error: 'location has no line item' } }),
      );
      expect(failed).toMatchObject({ status: 'failed', error: 'location has no line item', sourceId: '' });
      expect(failed.finishedAt).not.toBeNull();
      const raw = await store.driver.get<{ data: string }>('SELECT data FROM grade_attempts WHERE id = ?', [failed.id]);
      expect(JSON.parse(raw!.data)).toEqual({
        response: null,
        error: 'location has no line item',
        source_type: 'api_key',
        source_id: '',
      });
    } finally {
      await done();
    }
  });

  it('gives 300 attempts in a tight loop strictly later timestamps', async () => {
    const { store, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      const stamps: number[] = [];
      const isos: string[] = [];
        // Several to a millisecond on either store: 300 show the tie-break as well as 1,000 did (CI-30).
      for (let i = 0; i < 300; i += 1) {
        const a = await store.attempts.create(attemptFor(c, { score: (i % 100) / 100 }));
        stamps.push(a.submittedUs);
        isos.push(a.submitted);
      }
      expectStrictlyIncreasing(stamps);
      // The ISO strings order the same way, so the LMS sees the same order.
      for (let i = 1; i < isos.length; i += 1) expect(isos[i]! > isos[i - 1]!).toBe(true);
    } finally {
      await done();
    }
  });

  it('stays strictly later when the clock stands still or goes back', async () => {
    const clock = new ManualClock();
    const { store, done } = await target.fresh({ clock });
    try {
      const c = await seedCourse(store);
      const a = await store.attempts.create(attemptFor(c));
      const b = await store.attempts.create(attemptFor(c));
      clock.advance(-5000);
      const d = await store.attempts.create(attemptFor(c));
      expect([a, b, d].map((x) => x.submittedUs)).toEqual([a.submittedUs, a.submittedUs + 1, a.submittedUs + 2]);
      expect(a.submitted).toBe('2026-09-21T10:00:00.000000Z');
      expect(b.submitted).toBe('2026-09-21T10:00:00.000001Z');
      // Another member or location has its own sequence.
      const other = await store.attempts.create(attemptFor(c, { memberId: c.teacherMemberId }));
      expect(other.submittedUs).toBe(clock.ms * 1000);
    } finally {
      await done();
    }
  });

  it('shares one sequence between create and reserveSubmitted/record', async () => {
    const clock = new ManualClock();
    const { store, done } = await target.fresh({ clock });
    try {
      const c = await seedCourse(store);
      const reserved = await store.attempts.reserveSubmitted(c.studentMemberId, c.locationId);
      const created = await store.attempts.create(attemptFor(c)); // while the reserved one is being published
      expect(created.submittedUs).toBe(reserved.submittedUs + 1);
      const recorded = await store.attempts.record({
        ...attemptFor(c),
        submittedUs: reserved.submittedUs,
        outcome: { status: 'success', response: null, error: '' },
      });
      expect(recorded.submitted).toBe(reserved.submitted);
      expect((await store.attempts.reserveSubmitted(c.studentMemberId, c.locationId)).submittedUs).toBe(
        created.submittedUs + 1,
      );
    } finally {
      await done();
    }
  });

  it('reads the next instant after every recorded attempt and reservation, writing nothing (PERF-40)', async () => {
    const clock = new ManualClock();
    const { store, done } = await target.fresh({ clock });
    try {
      const c = await seedCourse(store);
      const first = await store.attempts.nextSubmitted(c.studentMemberId, c.locationId);
      // Nothing was written: reading again in the same microsecond gives the same instant.
      expect((await store.attempts.nextSubmitted(c.studentMemberId, c.locationId)).submittedUs).toBe(first.submittedUs);
      const recorded = await store.attempts.record({
        ...attemptFor(c, { maxScore: 50, comment: 'Well done' }),
        submittedUs: first.submittedUs,
        outcome: { status: 'success', response: { status: 200, body: '' }, error: '' },
      });
      // The record answered is the row as stored.
      expect(await store.attempts.get(recorded.id)).toEqual(recorded);
      expect((await store.attempts.nextSubmitted(c.studentMemberId, c.locationId)).submittedUs).toBe(first.submittedUs + 1);
      const reserved = await store.attempts.reserveSubmitted(c.studentMemberId, c.locationId);
      expect((await store.attempts.nextSubmitted(c.studentMemberId, c.locationId)).submittedUs).toBe(reserved.submittedUs + 1);
      // Another member at the same location has a sequence of its own.
      expect((await store.attempts.nextSubmitted(c.teacherMemberId, c.locationId)).submittedUs).toBe(first.submittedUs);
    } finally {
      await done();
    }
  });

  it('stays strictly later across two stores on one database interleaving inserts', async () => {
    const clock = new ManualClock(); // frozen: every attempt lands in the same microsecond of the clock
    const { store, openAnother, done } = await target.fresh({ clock });
    const second = await openAnother({ clock });
    try {
      const c = await seedCourse(store);
      // Strict alternation: each insert must see the other store's last commit.
      const alternating: number[] = [];
      for (let i = 0; i < 100; i += 1) {
        alternating.push((await (i % 2 === 0 ? store : second).attempts.create(attemptFor(c))).submittedUs);
      }
      expect(alternating.map((us) => us - alternating[0]!)).toEqual(Array.from({ length: 100 }, (_, i) => i));
      const created = await Promise.all(
        Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? store : second).attempts.create(attemptFor(c))),
      );
      const stamps = created.map((a) => a.submittedUs).sort((x, y) => x - y);
      expect(new Set(stamps).size).toBe(200);
      expect(stamps[0]).toBe(alternating[99]! + 1);
      expect(stamps[199]! - stamps[0]!).toBe(199);
      const history = await second.attempts.list({ appId: c.appId, limit: 500 });
      expect(history.items).toHaveLength(300);
    } finally {
      await second.close();
      await done();
    }
  });

  it('lists a tool’s history newest first by cursor, with filters', async () => {
    const clock = new ManualClock();
    const { store, done } = await target.fresh({ clock });
    try {
      const c = await seedCourse(store);
      const other = await seedCourse(store);
      const ids: string[] = [];
      for (let i = 0; i < 7; i += 1) {
        clock.advance(1000);
        const member = i % 2 === 0 ? c.studentMemberId : c.teacherMemberId;
        ids.push((await store.attempts.create(attemptFor(c, { memberId: member, outcome: i === 3 ? { status: 'failed', response: null, error: 'x' } : { status: 'success', response: null, error: '' } }))).id);
      }
      await store.attempts.create(attemptFor(other));

      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page: Awaited<ReturnType<Store['attempts']['list']>> = await store.attempts.list({
          appId: c.appId,
          limit: 3,
          ...(cursor === undefined ? {} : { cursor }),
        });
        seen.push(...page.items.map((a) => a.id));
        cursor = page.nextCursor ?? undefined;
        pages += 1;
      } while (cursor !== undefined);
      expect(pages).toBe(3);
      expect(seen).toEqual([...ids].reverse());

      const students = await store.attempts.list({ appId: c.appId, memberId: c.studentMemberId });
      expect(students.items.map((a) => a.id)).toEqual([ids[6], ids[4], ids[2], ids[0]]);
      expect((await store.attempts.list({ appId: c.appId, status: 'failed' })).items.map((a) => a.id)).toEqual([ids[3]]);
      const start = Date.UTC(2026, 8, 21, 10, 0, 0);
      const windowed = await store.attempts.list({ appId: c.appId, since: start + 2000, until: start + 4000 });
      expect(windowed.items.map((a) => a.id)).toEqual([ids[2], ids[1]]);
      expect(windowed.nextCursor).toBeNull();
      await expect(store.attempts.list({ appId: c.appId, cursor: 'not-a-cursor' })).rejects.toBeInstanceOf(InvalidCursorError);
    } finally {
      await done();
    }
  });
});

describe.each(STORE_TARGETS)('archived launch-keyed grades ($name)', (target) => {
  it('keeps one grade per launch, resets it to pending on resubmission, and hides other tools’ grades', async () => {
    const clock = new ManualClock();
    const { store, done } = await target.fresh({ clock });
    try {
      const c = await seedCourse(store);
      const launch = await store.launches.create({
        appId: c.appId,
        contextId: c.contextId,
        locationId: c.locationId,
        memberId: c.studentMemberId,
        gradePassback: true,
      });
      const first = await store.launchGrades.submit({ appId: c.appId, launchId: launch.id, score: 0.5, maxScore: 20 });
      expect(first.id).toMatch(/^grd_/);
      expect(first).toMatchObject({ syncStatus: 'pending', syncError: null, syncedAt: null, score: 0.5, maxScore: 20 });
      const failed = await store.launchGrades.markFailed(first.id, 'LMS refused: 401');
      expect(failed).toMatchObject({ syncStatus: 'failed', syncError: 'LMS refused: 401' });

      const again = await store.launchGrades.submit({ appId: c.appId, launchId: launch.id, score: 0.9 });
      expect(again).toMatchObject({ id: first.id, syncStatus: 'pending', syncError: null, score: 0.9, maxScore: null });
      expect(again.submittedUs).toBe(first.submittedUs + 1); // same frozen clock, still later
      clock.advance(3);
      const synced = await store.launchGrades.markSynced(first.id);
      expect(synced).toMatchObject({ syncStatus: 'synced', syncedAt: '2026-09-21T10:00:00.003000Z' });

      expect((await store.launchGrades.getByLaunch(launch.id))?.id).toBe(first.id);
      expect(await store.launchGrades.getForApp(c.appId, first.id)).not.toBeNull();
      const other = await seedCourse(store);
      expect(await store.launchGrades.getForApp(other.appId, first.id)).toBeNull();
    } finally {
      await done();
    }
  });
});

describe.each(STORE_TARGETS)('Sandbox gradebook ($name)', (target) => {
  it('keeps the latest score per line item and user, by timestamp', async () => {
    const { store, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      const [placement] = await store.placements.listByContext(c.contextId);
      const item = await store.gradebook.createLineItem({
        contextId: c.contextId,
        label: 'Quiz 1',
        scoreMaximum: 100,
        placementId: placement!.id,
        resourceLink: placement!.resourceLink,
      });
      expect(item.id).toMatch(/^li_/);
      expect((await store.gradebook.findLineItemByPlacement(placement!.id))?.id).toBe(item.id);
      expect((await store.gradebook.updateLineItem(item.id, { scoreMaximum: 50 }))?.scoreMaximum).toBe(50);

      const base = {
        lineItemId: item.id,
        userId: c.studentUserId,
        scoreMaximum: 50,
        activityProgress: 'Completed',
        gradingProgress: 'FullyGraded',
      };
      expect((await store.gradebook.putScore({ ...base, scoreGiven: 10, timestampUs: 2_000 })).applied).toBe(true);
      expect((await store.gradebook.putScore({ ...base, scoreGiven: 20, timestampUs: 2_000 })).applied).toBe(false);
      expect((await store.gradebook.putScore({ ...base, scoreGiven: 5, timestampUs: 1_000 })).applied).toBe(false);
      const latest = await store.gradebook.putScore({ ...base, scoreGiven: 42.5, timestampUs: 3_000, released: false, comment: 'ok' });
      expect(latest).toMatchObject({ applied: true, score: { scoreGiven: 42.5, released: false, comment: 'ok', timestampUs: 3_000 } });
      expect(await store.gradebook.listScoresForContext(c.contextId)).toHaveLength(1);
      expect(await store.gradebook.deleteForContext(c.contextId)).toBe(1);
      expect(await store.gradebook.getScore(item.id, c.studentUserId)).toBeNull();
    } finally {
      await done();
    }
  });
});

describe.each(STORE_TARGETS)('signing keys ($name)', (target) => {
  it('agrees on one first key, publishes the next before it signs, and keeps the old one published', async () => {
    const clock = new ManualClock();
    const { store, done } = await target.fresh({ clock });
    try {
      const jwk = (n: string) => ({ privateJwk: { kty: 'RSA', d: n }, publicJwk: { kty: 'RSA', n } });
      const [k1, k1again] = await Promise.all([store.signingKeys.ensureSigner(jwk('one')), store.signingKeys.ensureSigner(jwk('two'))]);
      expect(k1again.kid).toBe(k1.kid);
      expect(k1.kid).toMatch(/^key_/);
      expect((await store.signingKeys.listPublished()).map((k) => k.kid)).toEqual([k1.kid]);

      const k2 = await store.signingKeys.rotate(jwk('three'), { signFrom: clock.ms + 3_600_000, publishOldUntil: clock.ms + 3_600_000 + 300_000 });
      expect((await store.signingKeys.listPublished()).map((k) => k.kid)).toEqual([k1.kid, k2.kid]);
      expect((await store.signingKeys.currentSigner())?.kid).toBe(k1.kid);
      clock.advance(3_600_000);
      expect((await store.signingKeys.currentSigner())?.kid).toBe(k2.kid);
      expect((await store.signingKeys.listPublished()).map((k) => k.kid)).toEqual([k1.kid, k2.kid]);
      clock.advance(300_000);
      expect((await store.signingKeys.listPublished()).map((k) => k.kid)).toEqual([k2.kid]);
      expect(await store.signingKeys.purgeUnpublished()).toBe(1);
      expect((await store.signingKeys.get(k2.kid))?.publicJwk).toEqual({ kty: 'RSA', n: 'three' });
    } finally {
      await done();
    }
  });
});
