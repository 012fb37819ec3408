/**
 * The credential epoch a request takes on trust (decision PERF-180), at the cheapest layer: the facts over a
 * real SQLite store, no server. What a stale epoch does to a whole request over HTTP is shown in
 * tests/server/multi-instance.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { EpochHolder } from '../../../server/auth/credential-facts.js';
import { CredentialFacts, StaleCredentialEpochError } from '../../../server/auth/credential-facts.js';
import { systemClock } from '../../../server/store/index.js';
import { freshStore, seedCourse } from '../../store/helpers.js';

describe('a credential epoch taken on trust (PERF-180)', () => {
  it('is trusted only after one was read, owes no read if nothing was judged by it, and is stale once a tool changed', async () => {
    const { store, done } = await freshStore();
    try {
      const c = await seedCourse(store);
      const reads: number[] = [];
      const read = store.credentialEpoch.read.bind(store.credentialEpoch);
      store.credentialEpoch.read = async () => {
        reads.push(1);
        return read();
      };
      const facts = new CredentialFacts(store, systemClock);
      // Nothing read yet: nothing to trust, the request reads the epoch first.
      const first: EpochHolder = {};
      expect(facts.trustLatest(first)).toBe(false);
      const epoch = await facts.epoch(first);
      expect(reads).toHaveLength(1);

      // Trusted but never used (a request without a credential): its confirmation reads nothing.
      const unused: EpochHolder = {};
      expect(facts.trustLatest(unused)).toBe(true);
      await facts.confirm(unused);
      expect(reads).toHaveLength(1);
      expect(facts.unconfirmed(unused)).toBe(false);

      // Used, and confirmed by an epoch the request's own statement read: no read of its own either.
      const used: EpochHolder = {};
      facts.trustLatest(used);
      expect(await facts.epoch(used)).toEqual(epoch);
      expect(facts.requestEpoch(used).pending()).toEqual(epoch);
      const own = await store.rows.readForRequest({ appId: c.appId, contextId: c.contextId, kind: 'context' }, { userId: null, row: false });
      await facts.requestEpoch(used).confirm(own.epoch);
      expect(reads).toHaveLength(1);
      expect(facts.requestEpoch(used).pending()).toBeNull();

      // A tool changed after the epoch was read: a request judged by the old one is stale, whether its
      // confirmation reads the epoch itself or is handed one, and stays stale until it is run again.
      await store.apps.setStatus(c.appId, 'suspended');
      const stale: EpochHolder = {};
      facts.trustLatest(stale);
      await facts.epoch(stale);
      await expect(facts.confirm(stale)).rejects.toBeInstanceOf(StaleCredentialEpochError);
      await expect(facts.confirm(stale)).rejects.toBeInstanceOf(StaleCredentialEpochError);
      facts.restart(stale);
      expect(facts.trustLatest(stale)).toBe(false);
      expect((await facts.epoch(stale)).generation).toBeGreaterThan(epoch.generation);
      // The confirmation's read is now the latest: the next request trusts it and confirms.
      const next: EpochHolder = {};
      facts.trustLatest(next);
      await facts.epoch(next);
      await facts.confirm(next);
      expect(facts.unconfirmed(next)).toBe(false);
    } finally {
      await done();
    }
  });
});
