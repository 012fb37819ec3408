import { newId } from '../ids.js';
import { isoFromUs } from '../time.js';
import type { RepoContext } from './common.js';
import { bool, updateSet } from './common.js';

/**
 * The S-12 Sandbox gradebook's tables: the LMS side the service played itself for Sandbox courses before
 * the Sandbox moved onto its LMS. Line items are the gradebook columns; a score is the latest one per
 * (line item, user). Read only by the move of older Sandbox courses (`server/sandbox/older-courses.ts`,
 * decision LTI-55), which carries them into the Sandbox LMS and deletes a moved course's rows here.
 */
export interface LineItemRecord {
  id: string;
  contextId: string;
  label: string;
  scoreMaximum: number;
  resourceLink: string | null;
  placementId: string | null;
  tag: string | null;
  /** AGS `resourceId`, `startDateTime`, `endDateTime`, as a client sent them. */
  resourceId: string | null;
  startDateTime: string | null;
  endDateTime: string | null;
  createdAt: number;
  updatedAt: number;
}

/** The fields an AGS PUT replaces (the resource link and placement stay). */
export interface LineItemFields {
  label: string;
  scoreMaximum: number;
  tag: string | null;
  resourceId: string | null;
  startDateTime: string | null;
  endDateTime: string | null;
}

export interface GradebookScoreRecord {
  lineItemId: string;
  userId: string;
  scoreGiven: number | null;
  scoreMaximum: number | null;
  comment: string;
  activityProgress: string;
  gradingProgress: string;
  /** Visible to the student (the tool's `grades_released`, decision NS-02). */
  released: boolean;
  /** ISO 8601 with six fractional digits. */
  timestamp: string;
  timestampUs: number;
  updatedAt: number;
}

export interface PutScoreInput {
  lineItemId: string;
  userId: string;
  scoreGiven: number | null;
  scoreMaximum: number | null;
  comment?: string;
  activityProgress: string;
  gradingProgress: string;
  released?: boolean;
  timestampUs: number;
}

interface LineItemRow {
  id: string;
  context_id: string;
  label: string;
  score_maximum: number;
  resource_link: string | null;
  placement_id: string | null;
  tag: string | null;
  resource_id: string | null;
  start_date_time: string | null;
  end_date_time: string | null;
  created_at: number;
  updated_at: number;
}

interface ScoreRow {
  line_item_id: string;
  user_id: string;
  score_given: number | null;
  score_maximum: number | null;
  comment: string;
  activity_progress: string;
  grading_progress: string;
  released: number;
  timestamp_us: number;
  updated_at: number;
}

const LINE_ITEM_COLUMNS =
  'id, context_id, label, score_maximum, resource_link, placement_id, tag, resource_id, start_date_time, end_date_time, created_at, updated_at';
const SCORE_FIELDS = [
  'line_item_id',
  'user_id',
  'score_given',
  'score_maximum',
  'comment',
  'activity_progress',
  'grading_progress',
  'released',
  'timestamp_us',
  'updated_at',
];
const SCORE_COLUMNS = SCORE_FIELDS.join(', ');

function toLineItem(row: LineItemRow): LineItemRecord {
  return {
    id: row.id,
    contextId: row.context_id,
    label: row.label,
    scoreMaximum: row.score_maximum,
    resourceLink: row.resource_link,
    placementId: row.placement_id,
    tag: row.tag,
    resourceId: row.resource_id,
    startDateTime: row.start_date_time,
    endDateTime: row.end_date_time,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toScore(row: ScoreRow): GradebookScoreRecord {
  return {
    lineItemId: row.line_item_id,
    userId: row.user_id,
    scoreGiven: row.score_given,
    scoreMaximum: row.score_maximum,
    comment: row.comment,
    activityProgress: row.activity_progress,
    gradingProgress: row.grading_progress,
    released: bool(row.released),
    timestamp: isoFromUs(row.timestamp_us),
    timestampUs: row.timestamp_us,
    updatedAt: row.updated_at,
  };
}

export class GradebookRepo {
  constructor(private readonly ctx: RepoContext) {}

  async createLineItem(input: {
    contextId: string;
    label: string;
    scoreMaximum: number;
    resourceLink?: string | null;
    placementId?: string | null;
    tag?: string | null;
    /** Defaults to a fresh `li_` ID; the Sandbox LMS passes its own `lit_` IDs (decision S-13). */
    id?: string;
    resourceId?: string | null;
    startDateTime?: string | null;
    endDateTime?: string | null;
  }): Promise<LineItemRecord> {
    const id = input.id ?? newId('li');
    const now = this.ctx.clock.nowMs();
    await this.ctx.db.run(
      `INSERT INTO gradebook_line_items (id, context_id, label, score_maximum, resource_link, placement_id, tag,
         resource_id, start_date_time, end_date_time, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        id,
        input.contextId,
        input.label,
        input.scoreMaximum,
        input.resourceLink ?? null,
        input.placementId ?? null,
        input.tag ?? null,
        input.resourceId ?? null,
        input.startDateTime ?? null,
        input.endDateTime ?? null,
        now,
        now,
      ],
    );
    const record = await this.getLineItem(id);
    if (!record) throw new Error('line item vanished after insert');
    return record;
  }

  async getLineItem(id: string): Promise<LineItemRecord | null> {
    const row = await this.ctx.db.get<LineItemRow>(`SELECT ${LINE_ITEM_COLUMNS} FROM gradebook_line_items WHERE id = ?`, [id]);
    return row ? toLineItem(row) : null;
  }

  async findLineItemByPlacement(placementId: string): Promise<LineItemRecord | null> {
    const row = await this.ctx.db.get<LineItemRow>(
      `SELECT ${LINE_ITEM_COLUMNS} FROM gradebook_line_items WHERE placement_id = ? ORDER BY created_at, id LIMIT 1`,
      [placementId],
    );
    return row ? toLineItem(row) : null;
  }

  async listLineItems(contextId: string): Promise<LineItemRecord[]> {
    const rows = await this.ctx.db.all<LineItemRow>(
      `SELECT ${LINE_ITEM_COLUMNS} FROM gradebook_line_items WHERE context_id = ? ORDER BY created_at, id`,
      [contextId],
    );
    return rows.map(toLineItem);
  }

  async updateLineItem(
    id: string,
    patch: { label?: string; scoreMaximum?: number; tag?: string | null },
  ): Promise<LineItemRecord | null> {
    const set = updateSet(
      { label: patch.label, scoreMaximum: patch.scoreMaximum, tag: patch.tag },
      { label: 'label', scoreMaximum: 'score_maximum', tag: 'tag' },
    );
    if (set.sql !== '') {
      await this.ctx.db.run(`UPDATE gradebook_line_items SET ${set.sql}, updated_at = ? WHERE id = ?`, [
        ...set.params,
        this.ctx.clock.nowMs(),
        id,
      ]);
    }
    return this.getLineItem(id);
  }

  /** AGS PUT: replaces the column's own fields; scores already in it keep their `scoreMaximum`. */
  async replaceLineItem(id: string, fields: LineItemFields): Promise<LineItemRecord | null> {
    await this.ctx.db.run(
      `UPDATE gradebook_line_items SET label = ?, score_maximum = ?, tag = ?, resource_id = ?, start_date_time = ?,
         end_date_time = ?, updated_at = ?
       WHERE id = ?`,
      [
        fields.label,
        fields.scoreMaximum,
        fields.tag,
        fields.resourceId,
        fields.startDateTime,
        fields.endDateTime,
        this.ctx.clock.nowMs(),
        id,
      ],
    );
    return this.getLineItem(id);
  }

  /** Removes one column and its scores (as an instructor deleting it in the LMS). */
  async deleteLineItem(id: string): Promise<boolean> {
    return this.ctx.db.transaction(async (tx) => {
      await tx.run('DELETE FROM gradebook_scores WHERE line_item_id = ?', [id]);
      const result = await tx.run('DELETE FROM gradebook_line_items WHERE id = ?', [id]);
      return result.changes > 0;
    });
  }

  /** Discards the scores of the course's columns and keeps the columns (a Sandbox reset). Returns how many. */
  async deleteScoresForContext(contextId: string): Promise<number> {
    const result = await this.ctx.db.run(
      'DELETE FROM gradebook_scores WHERE line_item_id IN (SELECT id FROM gradebook_line_items WHERE context_id = ?)',
      [contextId],
    );
    return result.changes;
  }

  /** Discards the course's columns and their scores. Returns how many columns. */
  async deleteForContext(contextId: string): Promise<number> {
    return this.ctx.db.transaction(async (tx) => {
      await tx.run(
        'DELETE FROM gradebook_scores WHERE line_item_id IN (SELECT id FROM gradebook_line_items WHERE context_id = ?)',
        [contextId],
      );
      const result = await tx.run('DELETE FROM gradebook_line_items WHERE context_id = ?', [contextId]);
      return result.changes;
    });
  }

  /**
   * Records a score unless the stored one is as new or newer: like an LTI platform, the gradebook keeps
   * the score with the latest timestamp, so a regrade supersedes and a late duplicate does not.
   */
  async putScore(input: PutScoreInput): Promise<{ applied: boolean; score: GradebookScoreRecord }> {
    return this.ctx.db.transaction(async (tx) => {
      const now = this.ctx.clock.nowMs();
      const values = [
        input.scoreGiven,
        input.scoreMaximum,
        input.comment ?? '',
        input.activityProgress,
        input.gradingProgress,
        input.released ?? true,
        input.timestampUs,
        now,
      ];
      const inserted = await tx.run(
        `INSERT INTO gradebook_scores (line_item_id, user_id, score_given, score_maximum, comment, activity_progress,
           grading_progress, released, timestamp_us, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (line_item_id, user_id) DO NOTHING`,
        [input.lineItemId, input.userId, ...values],
      );
      let applied = inserted.changes === 1;
      if (!applied) {
        const updated = await tx.run(
          `UPDATE gradebook_scores SET score_given = ?, score_maximum = ?, comment = ?, activity_progress = ?,
             grading_progress = ?, released = ?, timestamp_us = ?, updated_at = ?
           WHERE line_item_id = ? AND user_id = ? AND timestamp_us < ?`,
          [...values, input.lineItemId, input.userId, input.timestampUs],
        );
        applied = updated.changes === 1;
      }
      const row = await tx.get<ScoreRow>(`SELECT ${SCORE_COLUMNS} FROM gradebook_scores WHERE line_item_id = ? AND user_id = ?`, [
        input.lineItemId,
        input.userId,
      ]);
      if (!row) throw new Error('score vanished inside its own transaction');
      return { applied, score: toScore(row) };
    });
  }

  async getScore(lineItemId: string, userId: string): Promise<GradebookScoreRecord | null> {
    const row = await this.ctx.db.get<ScoreRow>(
      `SELECT ${SCORE_COLUMNS} FROM gradebook_scores WHERE line_item_id = ? AND user_id = ?`,
      [lineItemId, userId],
    );
    return row ? toScore(row) : null;
  }

  async listScores(lineItemId: string): Promise<GradebookScoreRecord[]> {
    const rows = await this.ctx.db.all<ScoreRow>(
      `SELECT ${SCORE_COLUMNS} FROM gradebook_scores WHERE line_item_id = ? ORDER BY user_id`,
      [lineItemId],
    );
    return rows.map(toScore);
  }

  /** Every score in the course, for the Sandbox's Grades tab. */
  async listScoresForContext(contextId: string): Promise<GradebookScoreRecord[]> {
    const rows = await this.ctx.db.all<ScoreRow>(
      `SELECT ${SCORE_FIELDS.map((f) => `s.${f}`).join(', ')} FROM gradebook_scores s
       JOIN gradebook_line_items li ON li.id = s.line_item_id
       WHERE li.context_id = ? ORDER BY li.created_at, li.id, s.user_id`,
      [contextId],
    );
    return rows.map(toScore);
  }
}
