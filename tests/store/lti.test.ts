/**
 * The LTI side's shared state on both stores (decisions LTI-122, LTI-126): the claim on creating a link's
 * line item, taken by exactly one of many racing callers on two store connections (two instances), taken
 * over once lapsed, released on failure; and refused messages kept per registration within the bound.
 */
import { describe, expect, it } from 'vitest';
import { REFUSALS_PER_REGISTRATION, REFUSAL_RETENTION_MS } from '../../server/store/index.js';
import { ManualClock, STORE_TARGETS, seedCourse } from './helpers.js';

describe.each(STORE_TARGETS)('LTI store ($name)', (target) => {
  it('a line item claim: one holder among racing callers on two instances, the rest pending then created; a lapsed claim taken over once, a released one claimed afresh', async () => {
    const clock = new ManualClock();
    const { store, openAnother, done } = await target.fresh({ clock });
    try {
      const other = await openAnother({ clock });
      const c = await seedCourse(store);
      const claims = await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? store : other).lti.claimLineItem(c.organizationId, 'rl-1', `holder-${i}`, 30_000)),
      );
      const holders = claims.filter((k) => k.kind === 'holder');
      expect(holders).toHaveLength(1);
      expect(claims.filter((k) => k.kind === 'pending')).toHaveLength(11);
      const holder = (holders[0] as { holder: string }).holder;
      // Only the holder completes it.
      expect(await other.lti.completeLineItem(c.organizationId, 'rl-1', 'someone-else', 'https://lms.example/li/9')).toBe(false);
      expect(await store.lti.completeLineItem(c.organizationId, 'rl-1', holder, 'https://lms.example/li/1')).toBe(true);
      expect(await other.lti.claimLineItem(c.organizationId, 'rl-1', 'late', 30_000)).toEqual({ kind: 'created', lineItemUrl: 'https://lms.example/li/1' });
      // A created line item is never taken over, however old.
      clock.advance(3_600_000);
      expect(await store.lti.claimLineItem(c.organizationId, 'rl-1', 'later', 30_000)).toEqual({ kind: 'created', lineItemUrl: 'https://lms.example/li/1' });

      // A lapsed claim (its holder died) is taken over once; a released one is claimed afresh.
      expect(await store.lti.claimLineItem(c.organizationId, 'rl-2', 'dies', 30_000)).toEqual({ kind: 'holder', holder: 'dies', takenOver: false });
      expect((await other.lti.claimLineItem(c.organizationId, 'rl-2', 'waits', 30_000)).kind).toBe('pending');
      clock.advance(30_000);
      const after = await Promise.all([store.lti.claimLineItem(c.organizationId, 'rl-2', 'a', 30_000), other.lti.claimLineItem(c.organizationId, 'rl-2', 'b', 30_000)]);
      expect(after.filter((k) => k.kind === 'holder')).toEqual([expect.objectContaining({ takenOver: true })]);
      // The dead holder, back, cannot record its line item over the new holder's claim.
      expect(await store.lti.completeLineItem(c.organizationId, 'rl-2', 'dies', 'https://lms.example/li/old')).toBe(false);
      const taker = after.find((k) => k.kind === 'holder') as { holder: string };
      await other.lti.releaseLineItem(c.organizationId, 'rl-2', taker.holder);
      expect(await store.lti.lineItemClaim(c.organizationId, 'rl-2')).toBeNull();
      expect(await store.lti.claimLineItem(c.organizationId, 'rl-2', 'fresh', 30_000)).toEqual({ kind: 'holder', holder: 'fresh', takenOver: false });
    } finally {
      await done();
    }
  });

  it('refusals: kept per registration, the newest 200 and none older than 30 days; findable by report ID', async () => {
    const clock = new ManualClock();
    const { store, done } = await target.fresh({ clock });
    try {
      const refusal = (reportId: string, registrationId: string | null) => ({
        reportId,
        registrationId,
        issuer: 'https://forged.example',
        clientId: 'c',
        deploymentId: null,
        message: 'launch' as const,
        code: 'bad_signature',
        status: 401,
        reason: 'r',
        advice: 'a',
        detail: 'd',
      });
      await store.ltiRefusals.record(refusal('req_old', 'lreg_a'));
      clock.advance(REFUSAL_RETENTION_MS - 1000);
      // A flood of refusals naming no registration: the first 204 written at once, the last one through
      // record(), whose pruning brings the bucket back to its bound.
      const values = Array.from({ length: REFUSALS_PER_REGISTRATION + 4 }, (_, i) => `('req_${String(i).padStart(4, '0')}', '', 'https://forged.example', 'c', NULL, 'launch', 'bad_signature', 401, 'r', 'a', 'd', ${clock.ms + i})`);
      await store.driver.run(`INSERT INTO lti_refusals (report_id, registration_id, issuer, client_id, deployment_id, message, code, status, reason, advice, detail, created_at) VALUES ${values.join(', ')}`);
      clock.advance(REFUSALS_PER_REGISTRATION + 10);
      await store.ltiRefusals.record(refusal('req_0204', null));
      await store.ltiRefusals.record(refusal('req_a1', 'lreg_a'));
      // The flood of refusals naming no registration stays within its bound and leaves lreg_a's alone.
      const unregistered = await store.driver.get<{ n: number | string }>("SELECT count(*) AS n FROM lti_refusals WHERE registration_id = ''");
      expect(Number(unregistered?.n)).toBe(REFUSALS_PER_REGISTRATION);
      expect(await store.ltiRefusals.get('req_0000')).toBeNull();
      expect(await store.ltiRefusals.get('req_0204')).toMatchObject({ registrationId: null, issuer: 'https://forged.example', code: 'bad_signature' });
      expect((await store.ltiRefusals.listForRegistration('lreg_a')).map((r) => r.reportId)).toEqual(['req_a1', 'req_old']);
      // A report ID kept once keeps its first refusal.
      await store.ltiRefusals.record({ ...refusal('req_a1', 'lreg_a'), code: 'other' });
      expect((await store.ltiRefusals.get('req_a1'))?.code).toBe('bad_signature');
      clock.advance(2000);
      await store.ltiRefusals.record(refusal('req_a2', 'lreg_a'));
      expect((await store.ltiRefusals.listForRegistration('lreg_a')).map((r) => r.reportId)).toEqual(['req_a2', 'req_a1']);
    } finally {
      await done();
    }
  });
});
