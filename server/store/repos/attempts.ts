import type { components } from '../../../generated/2026-09-21/types.js';
import { InvalidCursorError, StoreError } from '../errors.js';
import { newId } from '../ids.js';
import { isoFromUs, nowUs } from '../time.js';
import type { JsonValue, RepoContext } from './common.js';
import { decodeCursor, encodeCursor, parseJson } from './common.js';

export type ActivityProgress = components['schemas']['ActivityProgress'];
export type GradingProgress = components['schemas']['GradingProgress'];

// The values the attempts and grades tables admit (CHECK constraints of their migrations) must be the spec's
// (lockstep, decision KIT-04): when a spec edit adds a value and `npm run generate` runs, the two type lines
// below stop compiling, naming this one place; widen the CHECK constraints with a migration, then the lists.
type StoredActivityProgress = 'Completed' | 'Submitted';
type StoredGradingProgress = 'FullyGraded' | 'Pending';
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type MustHold<T extends true> = T;
export type StoredActivityProgressIsTheSpecs = MustHold<Same<StoredActivityProgress, ActivityProgress>>;
export type StoredGradingProgressIsTheSpecs = MustHold<Same<StoredGradingProgress, GradingProgress>>;
/** `pending` exists only between recording an attempt and hearing back from the LMS. */
export type AttemptStatus = 'pending' | 'success' | 'failed';
export type AttemptSourceType = 'session' | 'api_key';

export interface AttemptResponse {
  status: number;
  body: JsonValue;
}

export interface AttemptOutcome {
  status: 'success' | 'failed';
  /** The LMS's answer; null if the attempt never reached the LMS. */
  response: AttemptResponse | null;
  /** Why a failed attempt failed; empty on success. */
  error: string;
}

export interface AttemptRecord {
  id: string;
  appId: string;
  contextId: string;
  locationId: string;
  memberId: string;
  score: number;
  maxScore: number | null;
  /**
   * The gradebook column's points the score was published (or, failed, would have been published) against:
   * `maxScore` when sent, else the column's points (OPS-50). Null for attempts recorded before it was kept.
   */
  points: number | null;
  comment: string;
  activityProgress: ActivityProgress;
  gradingProgress: GradingProgress;
  status: AttemptStatus;
  response: AttemptResponse | null;
  error: string;
  sourceType: AttemptSourceType;
  /** For a session, the service's user ID of that person; empty for api_key. */
  sourceId: string;
  /** ISO 8601 with six fractional digits; later than every earlier attempt of the member at the location. */
  submitted: string;
  submittedUs: number;
  finishedAt: number | null;
}

export interface CreateAttemptInput {
  appId: string;
  contextId: string;
  locationId: string;
  memberId: string;
  score: number;
  maxScore?: number | null;
  /** The column's points the score is published against (OPS-50). */
  points?: number | null;
  comment?: string;
  activityProgress?: ActivityProgress;
  gradingProgress?: GradingProgress;
  sourceType: AttemptSourceType;
  sourceId?: string;
  /** Known outcome (e.g. a failure decided before publication); omitted, the attempt starts pending. */
  outcome?: AttemptOutcome;
}

export interface AttemptFilter {
  appId: string;
  contextId?: string;
  locationId?: string;
  memberId?: string;
  status?: AttemptStatus;
  /** Submitted at or after (ms since the epoch). */
  since?: number;
  /** Submitted before (ms since the epoch). */
  until?: number;
  /** Default 50, at most 500. */
  limit?: number;
  cursor?: string;
}

/** Stored JSON in the contract's own names (`data` of the attempt record). */
interface StoredData {
  response: AttemptResponse | null;
  error: string;
  source_type: AttemptSourceType;
  source_id: string;
  /** Not a contract field: the column's points (OPS-50), kept here so no migration is needed; absent on older rows. */
  points?: number | null;
}

interface AttemptRow {
  id: string;
  app_id: string;
  context_id: string;
  location_id: string;
  member_id: string;
  score: number;
  max_score: number | null;
  comment: string;
  activity_progress: ActivityProgress;
  grading_progress: GradingProgress;
  status: AttemptStatus;
  data: string;
  submitted_us: number;
  finished_at: number | null;
}

const COLUMNS = `id, app_id, context_id, location_id, member_id, score, max_score, comment, activity_progress,
  grading_progress, status, data, submitted_us, finished_at`;

export const MAX_HISTORY_PAGE = 500;

function toAttempt(row: AttemptRow): AttemptRecord {
  return recordOf(row, parseJson<StoredData>(row.data, { response: null, error: '', source_type: 'api_key', source_id: '' }));
}

/** The record of a row whose `data` is already at hand as an object (a row just written: PERF-105). */
function recordOf(row: AttemptRow, data: StoredData): AttemptRecord {
  return {
    id: row.id,
    appId: row.app_id,
    contextId: row.context_id,
    locationId: row.location_id,
    memberId: row.member_id,
    score: row.score,
    maxScore: row.max_score,
    points: data.points ?? null,
    comment: row.comment,
    activityProgress: row.activity_progress,
    gradingProgress: row.grading_progress,
    status: row.status,
    response: data.response,
    error: data.error,
    sourceType: data.source_type,
    sourceId: data.source_id,
    submitted: isoFromUs(row.submitted_us),
    submittedUs: row.submitted_us,
    finishedAt: row.finished_at,
  };
}

interface NextPublicationRow {
  reserved: number | string | null;
  recorded: number | string | null;
  points: number | string | null;
}

/**
 * The statement of `AttemptsRepo.nextPublication` (PERF-49), for a caller that sends it with others in
 * one exchange (PostgreSQL's pipelined score transaction, PERF-171); `nextPublicationOf` reads its row.
 */
export function nextPublicationStatement(memberId: string, locationId: string, pointsOf: string | null): { sql: string; params: string[] | Array<string | null> } {
  return {
    sql: `SELECT (SELECT last_us FROM grade_attempt_clock WHERE member_id = ? AND location_id = ?) AS reserved,
              (SELECT MAX(submitted_us) FROM grade_attempts WHERE member_id = ? AND location_id = ?) AS recorded,
              (SELECT points FROM column_points WHERE placement_id = ?) AS points`,
    params: [memberId, locationId, memberId, locationId, pointsOf],
  };
}

export function nextPublicationOf(
  row: NextPublicationRow | undefined,
  clock: RepoContext['clock'],
): { submittedUs: number; submitted: string; columnPoints: number | null } {
  const floor = Math.max(Number(row?.reserved ?? 0), Number(row?.recorded ?? 0));
  const submittedUs = Math.max(nowUs(clock), floor + 1);
  const points = row?.points ?? null;
  return { submittedUs, submitted: isoFromUs(submittedUs), columnPoints: points === null ? null : Number(points) };
}

/**
 * Grade attempts. An attempt is recorded before it is published, so the timestamp given to the LMS is
 * the one stored: `create` fixes `submitted`, the caller publishes with it, `complete` records the
 * outcome. The contract's attempts are never updated; `complete` only ends the pending state.
 *
 * `submitted` is integer microseconds, computed inside the insert transaction as
 * max(now, previous + 1) for the member and location, so it is strictly later even for two attempts in
 * one millisecond or from two processes (writers are serialized; on PostgreSQL by locking the member's
 * row in `grade_attempt_clock`, shared with `reserveSubmitted`).
 */
export class AttemptsRepo {
  constructor(private readonly ctx: RepoContext) {}

  async create(input: CreateAttemptInput): Promise<AttemptRecord> {
    const id = newId('att');
    const data: StoredData = {
      response: input.outcome?.response ?? null,
      error: input.outcome?.error ?? '',
      source_type: input.sourceType,
      source_id: input.sourceType === 'session' ? (input.sourceId ?? '') : '',
    };
    return this.ctx.db.transaction(async (tx) => {
      // One sequence with reserveSubmitted, so both ways of recording an attempt stay strictly ordered.
      const { submittedUs } = await new AttemptsRepo({ db: tx, clock: this.ctx.clock }).reserveSubmitted(
        input.memberId,
        input.locationId,
      );
      await tx.run(
        `INSERT INTO grade_attempts (id, app_id, context_id, location_id, member_id, score, max_score, comment,
           activity_progress, grading_progress, status, data, submitted_us, finished_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          id,
          input.appId,
          input.contextId,
          input.locationId,
          input.memberId,
          input.score,
          input.maxScore ?? null,
          input.comment ?? '',
          input.activityProgress ?? 'Completed',
          input.gradingProgress ?? 'FullyGraded',
          input.outcome?.status ?? 'pending',
          JSON.stringify(data),
          submittedUs,
          input.outcome ? this.ctx.clock.nowMs() : null,
        ],
      );
      const record = await new AttemptsRepo({ db: tx, clock: this.ctx.clock }).get(id);
      if (!record) throw new Error('attempt vanished inside its own transaction');
      return record;
    });
  }

  /**
   * Hands out the `submitted` timestamp of the next attempt of a member at a location, in its own
   * transaction: max(now, last + 1 µs) over every timestamp reserved or recorded before. The caller
   * publishes with it and then writes the attempt once, finished, with `record`; the attempt row is never
   * updated. The placeholder insert comes first so that on PostgreSQL the SELECT ... FOR UPDATE always
   * finds a row to lock, even for a member's first attempt; SQLite's BEGIN IMMEDIATE serializes writers
   * across processes anyway.
   */
  async reserveSubmitted(memberId: string, locationId: string): Promise<{ submittedUs: number; submitted: string }> {
    return this.ctx.db.transaction(async (tx) => {
      await tx.run(
        `INSERT INTO grade_attempt_clock (member_id, location_id, last_us) VALUES (?, ?, 0)
         ON CONFLICT (member_id, location_id) DO NOTHING`,
        [memberId, locationId],
      );
      const reserved = await tx.get<{ last_us: number }>(
        `SELECT last_us FROM grade_attempt_clock WHERE member_id = ? AND location_id = ?${tx.forUpdate}`,
        [memberId, locationId],
      );
      const recorded = await tx.get<{ last_us: number | null }>(
        'SELECT MAX(submitted_us) AS last_us FROM grade_attempts WHERE member_id = ? AND location_id = ?',
        [memberId, locationId],
      );
      const floor = Math.max(reserved?.last_us ?? 0, recorded?.last_us ?? 0);
      const submittedUs = Math.max(nowUs(this.ctx.clock), floor + 1);
      await tx.run('UPDATE grade_attempt_clock SET last_us = ? WHERE member_id = ? AND location_id = ?', [
        submittedUs,
        memberId,
        locationId,
      ]);
      return { submittedUs, submitted: isoFromUs(submittedUs) };
    });
  }

  /**
   * The `submitted` instant the next attempt of a member at a location gets, read without writing
   * anything: max(now, last + 1 µs) over every instant reserved (`reserveSubmitted`, `create`) or
   * recorded before. The caller must hold the pair's publication order (`server/scores/ordering.ts`:
   * the process's queue, and on PostgreSQL the pair's advisory lock) until the attempt with this instant
   * is recorded, so no other writer can take the same instant meanwhile (decision PERF-40).
   */
  async nextSubmitted(memberId: string, locationId: string): Promise<{ submittedUs: number; submitted: string }> {
    const { submittedUs, submitted } = await this.nextPublication(memberId, locationId, null);
    return { submittedUs, submitted };
  }

  /**
   * `nextSubmitted`, and in the same statement the points this service last set on the placement's
   * column (`column_points`, H-03) when `pointsOf` names the placement (PERF-49): what a publication reads
   * inside its pair's order, in one statement instead of two.
   */
  async nextPublication(
    memberId: string,
    locationId: string,
    pointsOf: string | null,
  ): Promise<{ submittedUs: number; submitted: string; columnPoints: number | null }> {
    const { sql, params } = nextPublicationStatement(memberId, locationId, pointsOf);
    return nextPublicationOf(await this.ctx.db.get<NextPublicationRow>(sql, params), this.ctx.clock);
  }

  /**
   * Writes a finished attempt with a timestamp from `nextSubmitted` or `reserveSubmitted`. The record is
   * returned as written, not read back (the row holds exactly these values).
   */
  async record(input: CreateAttemptInput & { submittedUs: number; outcome: AttemptOutcome }): Promise<AttemptRecord> {
    const id = newId('att');
    const data: StoredData = {
      response: input.outcome.response,
      error: input.outcome.error,
      source_type: input.sourceType,
      source_id: input.sourceType === 'session' ? (input.sourceId ?? '') : '',
      ...(input.points != null ? { points: input.points } : {}),
    };
    const row: AttemptRow = {
      id,
      app_id: input.appId,
      context_id: input.contextId,
      location_id: input.locationId,
      member_id: input.memberId,
      score: input.score,
      max_score: input.maxScore ?? null,
      comment: input.comment ?? '',
      activity_progress: input.activityProgress ?? 'Completed',
      grading_progress: input.gradingProgress ?? 'FullyGraded',
      status: input.outcome.status,
      data: JSON.stringify(data),
      submitted_us: input.submittedUs,
      finished_at: this.ctx.clock.nowMs(),
    };
    await this.ctx.db.run(
      `INSERT INTO grade_attempts (id, app_id, context_id, location_id, member_id, score, max_score, comment,
         activity_progress, grading_progress, status, data, submitted_us, finished_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        row.id,
        row.app_id,
        row.context_id,
        row.location_id,
        row.member_id,
        row.score,
        row.max_score,
        row.comment,
        row.activity_progress,
        row.grading_progress,
        row.status,
        row.data,
        row.submitted_us,
        row.finished_at,
      ],
    );
    return recordOf(row, data);
  }

  /** Records the publication's outcome of a pending attempt. Null when no such attempt. */
  async complete(id: string, outcome: AttemptOutcome): Promise<AttemptRecord | null> {
    return this.ctx.db.transaction(async (tx) => {
      const row = await tx.get<AttemptRow>(`SELECT ${COLUMNS} FROM grade_attempts WHERE id = ?${tx.forUpdate}`, [id]);
      if (!row) return null;
      if (row.status !== 'pending') {
        throw new StoreError('attempt_finished', `attempt ${id} already has its outcome (${row.status})`);
      }
      const stored = parseJson<StoredData>(row.data, { response: null, error: '', source_type: 'api_key', source_id: '' });
      const data: StoredData = { ...stored, response: outcome.response, error: outcome.error };
      await tx.run('UPDATE grade_attempts SET status = ?, data = ?, finished_at = ? WHERE id = ?', [
        outcome.status,
        JSON.stringify(data),
        this.ctx.clock.nowMs(),
        id,
      ]);
      return new AttemptsRepo({ db: tx, clock: this.ctx.clock }).get(id);
    });
  }

  async get(id: string): Promise<AttemptRecord | null> {
    const row = await this.ctx.db.get<AttemptRow>(`SELECT ${COLUMNS} FROM grade_attempts WHERE id = ?`, [id]);
    return row ? toAttempt(row) : null;
  }

  /** A tool's grade history, newest first, by cursor. */
  async list(filter: AttemptFilter): Promise<{ items: AttemptRecord[]; nextCursor: string | null }> {
    const limit = Math.max(1, Math.min(filter.limit ?? 50, MAX_HISTORY_PAGE));
    const where: string[] = ['app_id = ?'];
    const params: Array<string | number> = [filter.appId];
    const eq = (column: string, value: string | undefined): void => {
      if (value === undefined) return;
      where.push(`${column} = ?`);
      params.push(value);
    };
    eq('context_id', filter.contextId);
    eq('location_id', filter.locationId);
    eq('member_id', filter.memberId);
    eq('status', filter.status);
    if (filter.since !== undefined) {
      where.push('submitted_us >= ?');
      params.push(Math.ceil(filter.since * 1000));
    }
    if (filter.until !== undefined) {
      where.push('submitted_us < ?');
      params.push(Math.ceil(filter.until * 1000));
    }
    if (filter.cursor !== undefined) {
      const parts = decodeCursor(filter.cursor);
      const [us, id] = parts ?? [];
      if (typeof us !== 'number' || !Number.isSafeInteger(us) || typeof id !== 'string') throw new InvalidCursorError();
      where.push('(submitted_us < ? OR (submitted_us = ? AND id < ?))');
      params.push(us, us, id);
    }
    const rows = await this.ctx.db.all<AttemptRow>(
      `SELECT ${COLUMNS} FROM grade_attempts WHERE ${where.join(' AND ')}
       ORDER BY submitted_us DESC, id DESC LIMIT ?`,
      [...params, limit + 1],
    );
    const page = rows.slice(0, limit).map(toAttempt);
    const last = page[page.length - 1];
    return { items: page, nextCursor: rows.length > limit && last ? encodeCursor([last.submittedUs, last.id]) : null };
  }
}
