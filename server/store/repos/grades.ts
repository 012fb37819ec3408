import { newId } from '../ids.js';
import { isoFromUs, nowUs } from '../time.js';
import type { RepoContext } from './common.js';
import type { ActivityProgress, GradingProgress } from './attempts.js';

export type SyncStatus = 'pending' | 'synced' | 'failed';

/** Archived contracts' launch-keyed grade: one per launch, updated by each resubmission. */
export interface LaunchGradeRecord {
  /** `grade_id`. */
  id: string;
  appId: string;
  launchId: string;
  score: number;
  maxScore: number | null;
  comment: string;
  activityProgress: ActivityProgress;
  gradingProgress: GradingProgress;
  syncStatus: SyncStatus;
  syncError: string | null;
  /** ISO 8601 (six fractional digits); later on every resubmission. */
  submittedAt: string;
  submittedUs: number;
  syncedAt: string | null;
  createdAt: number;
  updatedAt: number;
}

interface GradeRow {
  id: string;
  app_id: string;
  launch_id: string;
  score: number;
  max_score: number | null;
  comment: string;
  activity_progress: ActivityProgress;
  grading_progress: GradingProgress;
  sync_status: SyncStatus;
  sync_error: string | null;
  submitted_us: number;
  synced_us: number | null;
  created_at: number;
  updated_at: number;
}

const COLUMNS = `id, app_id, launch_id, score, max_score, comment, activity_progress, grading_progress, sync_status,
  sync_error, submitted_us, synced_us, created_at, updated_at`;

function toGrade(row: GradeRow): LaunchGradeRecord {
  return {
    id: row.id,
    appId: row.app_id,
    launchId: row.launch_id,
    score: row.score,
    maxScore: row.max_score,
    comment: row.comment,
    activityProgress: row.activity_progress,
    gradingProgress: row.grading_progress,
    syncStatus: row.sync_status,
    syncError: row.sync_error,
    submittedAt: isoFromUs(row.submitted_us),
    submittedUs: row.submitted_us,
    syncedAt: row.synced_us === null ? null : isoFromUs(row.synced_us),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export class LaunchGradesRepo {
  constructor(private readonly ctx: RepoContext) {}

  /**
   * Creates the launch's grade or resets it to pending with the new values (decision NS-19); the
   * previous sync result no longer describes the score, so `syncError` and `syncedAt` are cleared.
   */
  async submit(input: {
    appId: string;
    launchId: string;
    score: number;
    maxScore?: number | null;
    comment?: string;
    activityProgress?: ActivityProgress;
    gradingProgress?: GradingProgress;
    /**
     * The submission's time when the caller reserved it (`attempts.reserveSubmitted`), so the grade and
     * the attempt its publication records carry the same instant; still moved past the previous one.
     */
    submittedUs?: number;
  }): Promise<LaunchGradeRecord> {
    return this.ctx.db.transaction(async (tx) => {
      await tx.get(`SELECT id FROM launches WHERE id = ?${tx.forUpdate}`, [input.launchId]);
      const existing = await tx.get<{ submitted_us: number }>(
        `SELECT submitted_us FROM launch_grades WHERE launch_id = ?${tx.forUpdate}`,
        [input.launchId],
      );
      const now = this.ctx.clock.nowMs();
      const current = input.submittedUs ?? nowUs(this.ctx.clock);
      const submittedUs = existing ? Math.max(current, existing.submitted_us + 1) : current;
      const values = [
        input.score,
        input.maxScore ?? null,
        input.comment ?? '',
        input.activityProgress ?? 'Completed',
        input.gradingProgress ?? 'FullyGraded',
        submittedUs,
      ];
      if (existing) {
        await tx.run(
          `UPDATE launch_grades SET score = ?, max_score = ?, comment = ?, activity_progress = ?, grading_progress = ?,
             submitted_us = ?, sync_status = 'pending', sync_error = NULL, synced_us = NULL, updated_at = ?
           WHERE launch_id = ?`,
          [...values, now, input.launchId],
        );
      } else {
        await tx.run(
          `INSERT INTO launch_grades (score, max_score, comment, activity_progress, grading_progress, submitted_us,
             id, app_id, launch_id, sync_status, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
          [...values, newId('grd'), input.appId, input.launchId, now, now],
        );
      }
      const row = await tx.get<GradeRow>(`SELECT ${COLUMNS} FROM launch_grades WHERE launch_id = ?`, [input.launchId]);
      if (!row) throw new Error('grade vanished inside its own transaction');
      return toGrade(row);
    });
  }

  /**
   * With `submittedUs`, only the submission of that instant is marked: a resubmission that reset the grade
   * to pending meanwhile keeps its own state until its own publication answers.
   */
  async markSynced(id: string, submittedUs?: number): Promise<LaunchGradeRecord | null> {
    await this.ctx.db.run(
      `UPDATE launch_grades SET sync_status = 'synced', sync_error = NULL, synced_us = ?, updated_at = ? WHERE id = ?${
        submittedUs === undefined ? '' : ' AND submitted_us = ?'
      }`,
      [nowUs(this.ctx.clock), this.ctx.clock.nowMs(), id, ...(submittedUs === undefined ? [] : [submittedUs])],
    );
    return this.get(id);
  }

  async markFailed(id: string, error: string, submittedUs?: number): Promise<LaunchGradeRecord | null> {
    await this.ctx.db.run(
      `UPDATE launch_grades SET sync_status = 'failed', sync_error = ?, synced_us = NULL, updated_at = ? WHERE id = ?${
        submittedUs === undefined ? '' : ' AND submitted_us = ?'
      }`,
      [error, this.ctx.clock.nowMs(), id, ...(submittedUs === undefined ? [] : [submittedUs])],
    );
    return this.get(id);
  }

  async get(id: string): Promise<LaunchGradeRecord | null> {
    const row = await this.ctx.db.get<GradeRow>(`SELECT ${COLUMNS} FROM launch_grades WHERE id = ?`, [id]);
    return row ? toGrade(row) : null;
  }

  /** Another tool's grade must be indistinguishable from an unknown one (`Grade not found`). */
  async getForApp(appId: string, id: string): Promise<LaunchGradeRecord | null> {
    const row = await this.ctx.db.get<GradeRow>(`SELECT ${COLUMNS} FROM launch_grades WHERE id = ? AND app_id = ?`, [
      id,
      appId,
    ]);
    return row ? toGrade(row) : null;
  }

  async getByLaunch(launchId: string): Promise<LaunchGradeRecord | null> {
    const row = await this.ctx.db.get<GradeRow>(`SELECT ${COLUMNS} FROM launch_grades WHERE launch_id = ?`, [launchId]);
    return row ? toGrade(row) : null;
  }
}
