import { describe, expect, it } from 'vitest';
import { DefaultLocationError, DuplicateExtidError, ExtidPermanentError } from '../../server/store/index.js';
import { ManualClock, STORE_TARGETS, seedCourse } from './helpers.js';

describe.each(STORE_TARGETS)('organizations, contexts, users and members ($name)', (target) => {
  it('upserts on sight: an unseen deployment is a new school, the same person at two schools is two users', async () => {
    const { store, done } = await target.fresh();
    try {
      const school = { issuer: 'https://canvas.example.edu', client: 'c1', deployment: 'd1', title: 'Example U' };
      const a = await store.organizations.upsert(school);
      const again = await store.organizations.upsert({ ...school, title: 'Example University' });
      expect(again.id).toBe(a.id);
      expect(again.title).toBe('Example University');
      expect(a.id).toMatch(/^org_/);
      expect(a.grantsLineItemScope).toBe(true);
      const other = await store.organizations.upsert({ ...school, deployment: 'd2' });
      expect(other.id).not.toBe(a.id);
      expect((await store.organizations.setGrantsLineItemScope(other.id, false))?.grantsLineItemScope).toBe(false);

      const u1 = await store.users.upsert({ organizationId: a.id, externalId: 'lms-user-7', email: 'x@example.edu' });
      const u2 = await store.users.upsert({ organizationId: other.id, externalId: 'lms-user-7' });
      expect(u1.id).not.toBe(u2.id);
      expect(u1.id).toMatch(/^usr_/);
      const u1again = await store.users.upsert({ organizationId: a.id, externalId: 'lms-user-7', givenName: 'Xi' });
      expect(u1again).toMatchObject({ id: u1.id, email: 'x@example.edu', givenName: 'Xi' });
      expect((await store.users.upsert({ organizationId: a.id, externalId: 'lms-user-7', email: null })).email).toBeNull();

      const ctx = await store.contexts.upsert({ organizationId: a.id, externalId: 'course-1', name: 'Bio', label: 'BIO-1' });
      const renamed = await store.contexts.upsert({ organizationId: a.id, externalId: 'course-1', name: 'Biology', label: null });
      expect(renamed).toMatchObject({ id: ctx.id, name: 'Biology', label: null });
      expect(ctx.id).toMatch(/^ctx_/);

      const m = await store.members.upsert({ contextId: ctx.id, userId: u1.id, groups: ['student'] });
      const m2 = await store.members.upsert({ contextId: ctx.id, userId: u1.id, groups: ['instructor', 'instructor'] });
      expect(m2.id).toBe(m.id);
      expect(m2.groups).toEqual(['instructor']);
      expect(m.id).toMatch(/^mem_/);
      expect(await store.members.getInContext(ctx.id, m.id)).not.toBeNull();
      const ctx2 = await store.contexts.upsert({ organizationId: a.id, externalId: 'course-2', name: 'Chem' });
      expect(await store.members.getInContext(ctx2.id, m.id)).toBeNull();
    } finally {
      await done();
    }
  });

  it('agrees on one record when first launches of the same person race', async () => {
    const { store, done } = await target.fresh();
    try {
      const org = await store.organizations.upsert({ issuer: 'i', client: 'c', deployment: 'd', title: 't' });
      const users = await Promise.all(
        Array.from({ length: 20 }, () => store.users.upsert({ organizationId: org.id, externalId: 'same' })),
      );
      expect(new Set(users.map((u) => u.id)).size).toBe(1);
    } finally {
      await done();
    }
  });

  it('creates Sandbox courses and copies', async () => {
    const { store, done } = await target.fresh();
    try {
      const { app } = await store.apps.create({ name: 'T', hosting: 'self_hosted' });
      const org = await store.organizations.upsert({ issuer: 'https://tis.example.edu', client: 'sandbox', deployment: app.id, title: 'Sandbox' });
      const trial = await store.contexts.create({ organizationId: org.id, name: 'Trial course', sandboxAppId: app.id });
      expect(trial.externalId).toBe(trial.id);
      const copy = await store.contexts.create({
        organizationId: org.id,
        name: 'Trial course (copy)',
        sandboxAppId: app.id,
        parentContextId: trial.id,
      });
      expect((await store.contexts.listSandbox(app.id)).map((c) => c.id)).toEqual([trial.id, copy.id]);
      expect((await store.contexts.listCopies(trial.id)).map((c) => c.id)).toEqual([copy.id]);
    } finally {
      await done();
    }
  });
});

describe.each(STORE_TARGETS)('locations and placements ($name)', (target) => {
  it('binds an extid to its location for good, hides dropped extids and keeps placements launching', async () => {
    const { store, done } = await target.fresh();
    try {
      const { app } = await store.apps.create({ name: 'T', hosting: 'self_hosted', homeLocation: false });
      const first = await store.locations.syncServed(app.id, [
        { extid: 'quiz', type: 'assessment', label: 'Quiz' },
        { extid: 'notes', type: 'content', label: 'Notes', points: 50 },
        { extid: 'quiz', type: 'assessment', label: 'Quiz (in a group)' },
      ]);
      expect(first).toHaveLength(3);
      expect(first[0]?.id).toBe(first[2]?.id);
      expect(first[0]).toMatchObject({ extid: 'quiz', points: 100, hidden: false, stored: false });
      expect(first[1]).toMatchObject({ extid: 'notes', points: null });

      const second = await store.locations.syncServed(app.id, [{ extid: 'quiz', type: 'practice', label: 'Practice quiz' }]);
      expect(second[0]).toMatchObject({ id: first[0]?.id, type: 'practice', points: null, label: 'Practice quiz' });
      const notes = await store.locations.get(first[1]!.id);
      expect(notes?.hidden).toBe(true);
      const third = await store.locations.syncServed(app.id, [{ extid: 'notes', type: 'content', label: 'Notes' }]);
      expect(third[0]).toMatchObject({ id: first[1]?.id, hidden: false });
    } finally {
      await done();
    }
  });

  it('manages archived stored locations: order, params, duplicate and permanent extids, the Home location', async () => {
    const { store, done } = await target.fresh();
    try {
      const course = await seedCourse(store);
      const home = (await store.locations.listStored(course.appId))[0]!;
      await expect(store.locations.deleteStored(course.appId, home.id)).rejects.toBeInstanceOf(DefaultLocationError);

      const a = await store.locations.createStored(course.appId, { extid: 'a', type: 'practice', label: 'A', params: { level: '1' } });
      expect(a).toMatchObject({ order: 1, stored: true, params: { level: '1' } });
      await expect(store.locations.createStored(course.appId, { extid: 'a' })).rejects.toBeInstanceOf(DuplicateExtidError);
      // The served location "quiz-1" was placed by seedCourse: its extid is taken and permanent.
      await expect(store.locations.createStored(course.appId, { extid: 'quiz-1' })).rejects.toBeInstanceOf(DuplicateExtidError);
      await expect(store.locations.updateStored(course.appId, a.id, { extid: 'quiz-1' })).rejects.toBeInstanceOf(
        DuplicateExtidError,
      );
      const renamed = await store.locations.updateStored(course.appId, a.id, { extid: 'a2', params: { other: 'x' } });
      expect(renamed).toMatchObject({ extid: 'a2', params: { other: 'x' }, label: 'A' });
      await expect(store.locations.updateStored(course.appId, course.locationId, { extid: 'moved' })).rejects.toBeInstanceOf(
        ExtidPermanentError,
      );

      const b = await store.locations.createStored(course.appId, { type: 'content', order: 7 });
      expect(b).toMatchObject({ extid: null, order: 7, label: '', type: 'content' });
      expect((await store.locations.listStored(course.appId)).map((l) => l.id)).toEqual([home.id, a.id, b.id]);

      expect(await store.locations.deleteStored(course.appId, a.id)).toBe(true);
      expect(await store.locations.deleteStored(course.appId, a.id)).toBe(false);
      expect(await store.locations.getForApp(course.appId, a.id)).toBeNull();
      expect((await store.locations.get(a.id))?.deletedAt).not.toBeNull();
      // A deleted location frees its extid.
      expect((await store.locations.createStored(course.appId, { extid: 'a2' })).extid).toBe('a2');

      const { app: other } = await store.apps.create({ name: 'Other', hosting: 'self_hosted' });
      expect(await store.locations.getForApp(other.id, b.id)).toBeNull();
      expect(await store.locations.updateStored(other.id, b.id, { label: 'x' })).toBeNull();
    } finally {
      await done();
    }
  });

  it('stores the entry copy of a placement and finds it by resource link', async () => {
    const { store, done } = await target.fresh();
    try {
      const course = await seedCourse(store);
      const [placement] = await store.placements.listByContext(course.contextId, course.appId);
      expect(placement).toMatchObject({
        locationId: course.locationId,
        entry: { extid: 'quiz-1', type: 'assessment', label: 'Quiz 1', points: 100 },
        lineItemId: null,
      });
      expect(placement!.id).toMatch(/^plc_/);
      expect((await store.placements.findByResourceLink(placement!.resourceLink))?.id).toBe(placement!.id);
      expect(await store.placements.isPlaced(course.appId, course.contextId, course.locationId)).toBe(true);
      expect(await store.placements.isPlaced(course.appId, course.contextId, 'loc_other')).toBe(false);
      expect((await store.placements.setLineItem(placement!.id, 'li_abc'))?.lineItemId).toBe('li_abc');
    } finally {
      await done();
    }
  });
});

describe.each(STORE_TARGETS)('provisioning ($name)', (target) => {
  it('sends one request per level, retries after a failure or 60 s, and keeps a provisioned level provisioned', async () => {
    const clock = new ManualClock();
    const { store, done } = await target.fresh({ clock });
    try {
      const course = await seedCourse(store);
      const level = { appId: course.appId, contextId: course.contextId };
      expect(await store.provisioning.get(level)).toBeNull();
      const claims = await Promise.all(Array.from({ length: 10 }, () => store.provisioning.claimRequest(level)));
      expect(claims.filter((c) => c.send)).toHaveLength(1);
      expect(claims[0]?.record.state).toBe('pending');

      clock.advance(59_999);
      expect((await store.provisioning.claimRequest(level)).send).toBe(false);
      clock.advance(1);
      expect((await store.provisioning.claimRequest(level)).send).toBe(true);

      await store.provisioning.markFailed(level, 'timeout');
      expect((await store.provisioning.get(level))?.state).toBe('failed');
      expect((await store.provisioning.claimRequest(level)).send).toBe(true);

      const provisioned = await store.provisioning.markProvisioned(level);
      expect(provisioned).toMatchObject({ state: 'provisioned', provisionedAt: clock.ms, lastError: null });
      clock.advance(10);
      expect((await store.provisioning.markProvisioned(level)).provisionedAt).toBe(provisioned.provisionedAt);
      await store.provisioning.markFailed(level, 'late failure');
      expect(await store.provisioning.isProvisioned(level)).toBe(true);
      expect((await store.provisioning.claimRequest(level)).send).toBe(false);

      const locationLevel = { ...level, locationId: course.locationId };
      expect(await store.provisioning.isProvisioned(locationLevel)).toBe(false);
      await store.provisioning.markProvisioned(locationLevel);
      expect((await store.provisioning.get(locationLevel))?.locationId).toBe(course.locationId);

      await store.provisioning.resetContext(course.appId, course.contextId);
      expect(await store.provisioning.get(level)).toBeNull();
      expect(await store.provisioning.get(locationLevel)).toBeNull();
    } finally {
      await done();
    }
  });
});

describe.each(STORE_TARGETS)('api tokens, launches and launch tickets ($name)', (target) => {
  it('issues opaque tokens stored as digests with the lifetimes of decision NS-14', async () => {
    const clock = new ManualClock();
    const { store, done } = await target.fresh({ clock });
    try {
      const course = await seedCourse(store);
      const launch = await store.launches.create({
        appId: course.appId,
        contextId: course.contextId,
        locationId: course.locationId,
        memberId: course.studentMemberId,
        gradePassback: true,
      });
      expect(launch.id).toMatch(/^lch_/);
      expect(launch).toMatchObject({ gradePassback: true, trial: false, placementId: null });
      expect(await store.launches.getForApp('app_other', launch.id)).toBeNull();

      const { token, record } = await store.apiTokens.issue({
        kind: 'launch',
        appId: course.appId,
        contextId: course.contextId,
        userId: course.studentUserId,
        memberId: course.studentMemberId,
        locationId: course.locationId,
        launchId: launch.id,
        provisionLevels: ['context', 'location'],
      });
      expect(token).toMatch(/^tis_at_[A-Za-z0-9_-]{43}$/);
      expect(record.expiresAt - record.createdAt).toBe(4 * 3600 * 1000);
      const raw = await store.driver.all<Record<string, unknown>>('SELECT * FROM api_tokens');
      expect(JSON.stringify(raw)).not.toContain(token.slice(7));

      expect(await store.apiTokens.verify(token)).toMatchObject({ status: 'valid', record: { memberId: course.studentMemberId } });
      expect(await store.apiTokens.verify('tis_at_' + 'A'.repeat(43))).toEqual({ status: 'unknown' });
      expect(await store.apiTokens.verify('garbage')).toEqual({ status: 'unknown' });

      const provision = await store.apiTokens.issue({ kind: 'provision', appId: course.appId, contextId: course.contextId });
      expect(provision.record.expiresAt - provision.record.createdAt).toBe(24 * 3600 * 1000);

      clock.advance(4 * 3600 * 1000);
      expect((await store.apiTokens.verify(token)).status).toBe('expired');
      expect((await store.apiTokens.verify(provision.token)).status).toBe('valid');
      expect(await store.apiTokens.revokeForContext(course.contextId, course.appId)).toBe(2);
      expect((await store.apiTokens.verify(provision.token)).status).toBe('revoked');
      clock.advance(25 * 3600 * 1000);
      expect(await store.apiTokens.purgeExpired()).toBe(1);
    } finally {
      await done();
    }
  });

  it('consumes a launch ticket once, and refuses an expired one', async () => {
    const clock = new ManualClock();
    const { store, done } = await target.fresh({ clock });
    try {
      const { ticket } = await store.launches.createTicket({ jwt: 'eyJ...', callback: 'https://tool.example.com' });
      const results = await Promise.all([store.launches.consumeTicket(ticket), store.launches.consumeTicket(ticket)]);
      expect(results.filter((r) => r.status === 'ok')).toHaveLength(1);
      expect(results).toContainEqual({ status: 'ok', payload: { jwt: 'eyJ...', callback: 'https://tool.example.com' } });
      expect(results).toContainEqual({ status: 'used' });

      const late = await store.launches.createTicket({ n: 1 }, { ttlSeconds: 60 });
      clock.advance(60_000);
      expect(await store.launches.consumeTicket(late.ticket)).toEqual({ status: 'expired' });
      expect(await store.launches.consumeTicket('unknown-ticket')).toEqual({ status: 'unknown' });
      expect(await store.launches.purgeTickets(clock.ms + 1)).toBe(1);
      expect(await store.launches.purgeTickets(clock.ms + 300_000)).toBe(1);
    } finally {
      await done();
    }
  });
});
