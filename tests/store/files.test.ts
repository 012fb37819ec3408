import { describe, expect, it } from 'vitest';
import { FILE_LIMITS, FileQuotaError, UploadNotPendingError } from '../../server/store/index.js';
import type { RowKey, Store } from '../../server/store/index.js';
import { ManualClock, STORE_TARGETS, seedCourse } from './helpers.js';

const MB = 1024 * 1024;

function upload(store: Store, row: RowKey, key: string, size: number) {
  return store.files.reserveUpload({ row, key, size, contentType: 'application/octet-stream', filename: key, attachment: true });
}

async function putFile(store: Store, row: RowKey, key: string, size: number) {
  const reservation = await upload(store, row, key, size);
  return store.files.completeUpload(reservation.id);
}

async function rowOf(store: Store): Promise<RowKey> {
  const c = await seedCourse(store);
  return { appId: c.appId, contextId: c.contextId, kind: 'member_location', locationId: c.locationId, memberId: c.studentMemberId };
}

describe.each(STORE_TARGETS)('files and uploads ($name)', (target) => {
  it('lists completed files only, and points a key at its new blob when an upload completes', async () => {
    const clock = new ManualClock();
    const { store, done } = await target.fresh({ clock });
    try {
      const row = await rowOf(store);
      const first = await store.files.reserveUpload({
        row,
        key: 'essay.pdf',
        size: 1234,
        contentType: 'application/pdf',
        filename: 'My essay.pdf',
        attachment: true,
      });
      expect(first).toMatchObject({ state: 'pending', expiresAt: clock.ms + 15 * 60 * 1000, row });
      expect(first.id).toMatch(/^upl_/);
      expect(first.blobId).toMatch(/^blb_/);
      expect(await store.files.list(row)).toEqual([]);

      clock.advance(5);
      const completed = await store.files.completeUpload(first.id);
      expect(completed.replacedBlobId).toBeNull();
      expect(completed.file).toEqual({
        key: 'essay.pdf',
        size: 1234,
        contentType: 'application/pdf',
        filename: 'My essay.pdf',
        attachment: true,
        blobId: first.blobId,
        modified: clock.ms,
      });
      expect(await store.files.list(row)).toEqual([completed.file]);
      await expect(store.files.completeUpload(first.id)).rejects.toBeInstanceOf(UploadNotPendingError);
      await expect(store.files.completeUpload('upl_unknown')).rejects.toMatchObject({ problem: 'unknown' });

      // A replacement keeps the old file until its upload completes; a failed one never loses it.
      const failing = await upload(store, row, 'essay.pdf', 99);
      expect(await store.files.failUpload(failing.id)).toBe(failing.blobId);
      expect(await store.files.failUpload(failing.id)).toBeNull();
      expect((await store.files.get(row, 'essay.pdf'))?.blobId).toBe(first.blobId);

      const replacing = await upload(store, row, 'essay.pdf', 2000);
      expect((await store.files.get(row, 'essay.pdf'))?.size).toBe(1234);
      const replaced = await store.files.completeUpload(replacing.id);
      expect(replaced.replacedBlobId).toBe(first.blobId);
      expect(replaced.file).toMatchObject({ size: 2000, blobId: replacing.blobId });

      expect(await store.files.deleteFile(row, 'essay.pdf')).toBe(replacing.blobId);
      expect(await store.files.deleteFile(row, 'essay.pdf')).toBeNull();
      expect(await store.files.get(row, 'essay.pdf')).toBeNull();
    } finally {
      await done();
    }
  });

  it('counts files and unexpired reservations against 100 slots; a replacement takes no new slot', async () => {
    const clock = new ManualClock();
    const { store, done } = await target.fresh({ clock });
    try {
      const row = await rowOf(store);
      for (let i = 0; i < 99; i += 1) await putFile(store, row, `f${i}`, 10);
      const reservation = await upload(store, row, 'pending-100', 10);
      const err = await upload(store, row, 'one-too-many', 10).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(FileQuotaError);
      expect(err).toMatchObject({ reason: 'file_count', limit: 100, requested: 101 });
      // Replacing existing keys, or re-signing the pending one, takes no new slot.
      await upload(store, row, 'f0', 10);
      await upload(store, row, 'pending-100', 10);
      expect(await store.files.usage(row)).toEqual({ files: 99, bytes: 990, slots: 100, reservedBytes: 1000 });

      // Once its form expires, a reservation stops holding its slot (decision GAP-35).
      clock.advance(15 * 60 * 1000);
      await upload(store, row, 'now-it-fits', 10);
      // Completing the expired one is refused, since its slot was given away, and leaves no file.
      await expect(store.files.completeUpload(reservation.id)).rejects.toBeInstanceOf(FileQuotaError);
      expect(await store.files.get(row, 'pending-100')).toBeNull();
    } finally {
      await done();
    }
  });

  it('counts 100 MB per row and 25 MB per file, and a replaced key at the larger of its old and new size', async () => {
    const { store, done } = await target.fresh();
    try {
      const row = await rowOf(store);
      await expect(upload(store, row, 'huge', FILE_LIMITS.maxFileBytes + 1)).rejects.toMatchObject({
        reason: 'file_size',
        limit: 26_214_400,
      });
      for (const key of ['a', 'b', 'c']) await putFile(store, row, key, 25 * MB);
      await putFile(store, row, 'd', 25 * MB - 10);
      expect((await store.files.usage(row)).bytes).toBe(100 * MB - 10);
      await expect(upload(store, row, 'e', 11)).rejects.toMatchObject({ reason: 'total_bytes', limit: 104_857_600 });
      await upload(store, row, 'e', 10); // exactly 100 MB

      // Growing d by 10 bytes would pass 100 MB.
      await expect(upload(store, row, 'd', 25 * MB)).rejects.toMatchObject({ reason: 'total_bytes' });
      // Shrinking a: accepted; while it is pending, a is counted at its old 25 MB.
      const shrink = await upload(store, row, 'a', 5 * MB);
      const e2 = await upload(store, row, 'f', 1).catch((e: unknown) => e);
      expect(e2).toMatchObject({ reason: 'total_bytes' });
      await store.files.completeUpload(shrink.id);
      await upload(store, row, 'f', 20 * MB);
    } finally {
      await done();
    }
  });

  it('lets exactly one of two concurrent signings take the last slot, in one store and across two', async () => {
    const { store, openAnother, done } = await target.fresh();
    const second = await openAnother();
    try {
      const row = await rowOf(store);
      for (let i = 0; i < 99; i += 1) await putFile(store, row, `f${i}`, 1);

      const sameStore = await Promise.allSettled([upload(store, row, 'x1', 1), upload(store, row, 'x2', 1)]);
      expect(sameStore.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const loser = sameStore.find((r) => r.status === 'rejected');
      expect(loser?.status === 'rejected' && loser.reason).toBeInstanceOf(FileQuotaError);
      const winner = sameStore.find((r) => r.status === 'fulfilled');
      if (winner?.status !== 'fulfilled') throw new Error('no winner');
      await store.files.failUpload(winner.value.id);

      // 99 slots used again; now two stores on one database race for the 100th.
      const twoStores = await Promise.allSettled([upload(store, row, 'y1', 1), upload(second, row, 'y2', 1)]);
      expect(twoStores.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect((await store.files.usage(row)).slots).toBe(100);

      // Racing for the last bytes works the same way.
      const bytesRow: RowKey = { ...row, kind: 'member', memberId: (row as { memberId: string }).memberId };
      for (const key of ['a', 'b', 'c']) await putFile(store, bytesRow, key, 25 * MB);
      const bytes = await Promise.allSettled([upload(store, bytesRow, 'd1', 20 * MB), upload(second, bytesRow, 'd2', 20 * MB)]);
      expect(bytes.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    } finally {
      await second.close();
      await done();
    }
  });

  it('sweeps expired reservations and hands back their blob IDs', async () => {
    const clock = new ManualClock();
    const { store, done } = await target.fresh({ clock });
    try {
      const row = await rowOf(store);
      const stale = await upload(store, row, 'stale', 1);
      clock.advance(10 * 60 * 1000);
      const fresh = await upload(store, row, 'fresh', 1);
      clock.advance(20 * 60 * 1000); // stale expired 15 min ago, fresh 5 min ago
      expect(await store.files.sweepExpiredReservations()).toEqual([stale.blobId]);
      expect((await store.files.getReservation(stale.id))?.state).toBe('expired');
      expect((await store.files.getReservation(fresh.id))?.state).toBe('pending');
      // An upload finishing late is still accepted while the quota allows it.
      expect((await store.files.completeUpload(fresh.id)).file.key).toBe('fresh');
    } finally {
      await done();
    }
  });
});
