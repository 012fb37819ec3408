import { DefaultLocationError, DuplicateExtidError, ExtidPermanentError, UniqueViolationError } from '../errors.js';
import { newId } from '../ids.js';
import type { RepoContext } from './common.js';
import { bool, parseJson } from './common.js';

export type LocationType = 'assessment' | 'practice' | 'content' | 'setup';

export const DEFAULT_POINTS = 100;

export interface LocationRecord {
  id: string;
  appId: string;
  /** The tool's own ID; null only for 2026-08-19 stored locations, which have none. */
  extid: string | null;
  type: LocationType;
  label: string;
  description: string | null;
  /** Only assessments have points; null otherwise. */
  points: number | null;
  /** The extid was missing from the tool's latest locations response (placements keep launching). */
  hidden: boolean;
  /** Created through the archived management API (or the Home location), not first seen in a response. */
  stored: boolean;
  /** 2026-08-19 `is_default`: the Home location. */
  isDefault: boolean;
  /** 2026-08-19 `order`. */
  order: number | null;
  /** 2026-08-19 `params`: static string values. */
  params: Record<string, string> | null;
  deletedAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/** One entry of a tool's locations response, flattened out of its groups. */
export interface ServedLocationEntry {
  extid: string;
  type: LocationType;
  label: string;
  description?: string | null;
  points?: number | null;
}

export interface StoredLocationInput {
  extid?: string | null;
  type?: LocationType;
  label?: string;
  description?: string | null;
  points?: number | null;
  params?: Record<string, string>;
  order?: number;
  isDefault?: boolean;
}

export interface StoredLocationPatch {
  extid?: string;
  type?: LocationType;
  label?: string;
  params?: Record<string, string>;
  order?: number;
}

interface LocationRow {
  id: string;
  app_id: string;
  extid: string | null;
  type: LocationType;
  label: string;
  description: string | null;
  points: number | null;
  hidden: number;
  is_stored: number;
  is_default: number;
  sort_order: number | null;
  params: string | null;
  deleted_at: number | null;
  created_at: number;
  updated_at: number;
}

export const COLUMNS = `id, app_id, extid, type, label, description, points, hidden, is_stored, is_default, sort_order,
  params, deleted_at, created_at, updated_at`;

export function toLocation(row: LocationRow): LocationRecord {
  return {
    id: row.id,
    appId: row.app_id,
    extid: row.extid,
    type: row.type,
    label: row.label,
    description: row.description,
    points: row.points,
    hidden: bool(row.hidden),
    stored: bool(row.is_stored),
    isDefault: bool(row.is_default),
    order: row.sort_order,
    params: parseJson<Record<string, string> | null>(row.params, null),
    deletedAt: row.deleted_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** Points mean something only for assessments (default 100) and are dropped for every other type. */
function pointsFor(type: LocationType, points: number | null | undefined): number | null {
  return type === 'assessment' ? (points ?? DEFAULT_POINTS) : null;
}

/**
 * The service's location records of each tool. An extid is bound to its location ID on first sight and
 * for good (rule 2 of the locations response); writes that touch a tool's extids lock the tool's row
 * first, so two pickers opened at once cannot create two records for one extid.
 */
export class LocationsRepo {
  constructor(private readonly ctx: RepoContext) {}

  /** Any location by ID, deleted ones included (their placements still name them). */
  async get(id: string): Promise<LocationRecord | null> {
    const row = await this.ctx.db.get<LocationRow>(`SELECT ${COLUMNS} FROM locations WHERE id = ?`, [id]);
    return row ? toLocation(row) : null;
  }

  /** A live location of this tool; null for another tool's (which must look unknown) or a deleted one. */
  async getForApp(appId: string, id: string): Promise<LocationRecord | null> {
    const row = await this.ctx.db.get<LocationRow>(
      `SELECT ${COLUMNS} FROM locations WHERE id = ? AND app_id = ? AND deleted_at IS NULL`,
      [id, appId],
    );
    return row ? toLocation(row) : null;
  }

  async findByExtid(appId: string, extid: string): Promise<LocationRecord | null> {
    const row = await this.ctx.db.get<LocationRow>(
      `SELECT ${COLUMNS} FROM locations WHERE app_id = ? AND extid = ? AND deleted_at IS NULL`,
      [appId, extid],
    );
    return row ? toLocation(row) : null;
  }

  /**
   * Records a locations response: creates a record for each unseen extid, updates the others, and hides
   * the served locations the response no longer names. Returns the records in the order of `entries`;
   * an extid given twice (the same location in two groups) is one record, described by its first entry.
   */
  async syncServed(appId: string, entries: readonly ServedLocationEntry[]): Promise<LocationRecord[]> {
    return this.ctx.db.transaction(async (tx) => {
      await lockApp(tx, appId);
      const now = this.ctx.clock.nowMs();
      await tx.run(
        'UPDATE locations SET hidden = 1 WHERE app_id = ? AND is_stored = 0 AND hidden = 0 AND deleted_at IS NULL',
        [appId],
      );
      const byExtid = new Map<string, LocationRecord>();
      const repo = new LocationsRepo({ db: tx, clock: this.ctx.clock });
      for (const entry of entries) {
        if (byExtid.has(entry.extid)) continue;
        const points = pointsFor(entry.type, entry.points);
        const existing = await repo.findByExtid(appId, entry.extid);
        let id: string;
        if (existing) {
          id = existing.id;
          await tx.run(
            `UPDATE locations SET type = ?, label = ?, description = ?, points = ?, hidden = 0, updated_at = ?
             WHERE id = ?`,
            [entry.type, entry.label, entry.description ?? null, points, now, id],
          );
        } else {
          id = newId('loc');
          await tx.run(
            `INSERT INTO locations (id, app_id, extid, type, label, description, points, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
            [id, appId, entry.extid, entry.type, entry.label, entry.description ?? null, points, now, now],
          );
        }
        const record = await repo.get(id);
        if (!record) throw new Error('location vanished inside its own transaction');
        byExtid.set(entry.extid, record);
      }
      return entries.map((e) => byExtid.get(e.extid)).filter((r): r is LocationRecord => r !== undefined);
    });
  }

  /** Archived management API: creates a stored location at the end of the order unless one is given. */
  async createStored(appId: string, input: StoredLocationInput): Promise<LocationRecord> {
    return this.ctx.db.transaction(async (tx) => {
      await lockApp(tx, appId);
      const repo = new LocationsRepo({ db: tx, clock: this.ctx.clock });
      const extid = input.extid ?? null;
      if (extid !== null && (await repo.findByExtid(appId, extid))) throw new DuplicateExtidError(extid);
      let order = input.order;
      if (order === undefined) {
        const last = await tx.get<{ max_order: number | null }>(
          'SELECT MAX(sort_order) AS max_order FROM locations WHERE app_id = ? AND is_stored = 1 AND deleted_at IS NULL',
          [appId],
        );
        order = last?.max_order === null || last?.max_order === undefined ? 0 : last.max_order + 1;
      }
      const type = input.type ?? 'content';
      const id = newId('loc');
      const now = this.ctx.clock.nowMs();
      try {
        await tx.run(
          `INSERT INTO locations (id, app_id, extid, type, label, description, points, is_stored, is_default,
             sort_order, params, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)`,
          [
            id,
            appId,
            extid,
            type,
            input.label ?? '',
            input.description ?? null,
            pointsFor(type, input.points),
            input.isDefault ?? false,
            order,
            JSON.stringify(input.params ?? {}),
            now,
            now,
          ],
        );
      } catch (err) {
        if (err instanceof UniqueViolationError && extid !== null) throw new DuplicateExtidError(extid, { cause: err });
        throw err;
      }
      const record = await repo.get(id);
      if (!record) throw new Error('location vanished inside its own transaction');
      return record;
    });
  }

  /**
   * Archived management API: partial update of a stored location. `params` replaces the whole set.
   * Changing the extid of a placed location is refused (decision GAP-40). Null when the tool has no
   * such live location.
   */
  async updateStored(appId: string, id: string, patch: StoredLocationPatch): Promise<LocationRecord | null> {
    return this.ctx.db.transaction(async (tx) => {
      await lockApp(tx, appId);
      const repo = new LocationsRepo({ db: tx, clock: this.ctx.clock });
      const current = await repo.getForApp(appId, id);
      if (!current) return null;
      if (patch.extid !== undefined && patch.extid !== current.extid) {
        if (await repo.isPlaced(id)) throw new ExtidPermanentError();
        const other = await repo.findByExtid(appId, patch.extid);
        if (other && other.id !== id) throw new DuplicateExtidError(patch.extid);
      }
      const type = patch.type ?? current.type;
      await tx.run(
        `UPDATE locations SET extid = ?, type = ?, label = ?, points = ?, sort_order = ?, params = ?, updated_at = ?
         WHERE id = ?`,
        [
          patch.extid ?? current.extid,
          type,
          patch.label ?? current.label,
          pointsFor(type, current.points),
          patch.order ?? current.order,
          patch.params !== undefined ? JSON.stringify(patch.params) : current.params ? JSON.stringify(current.params) : null,
          this.ctx.clock.nowMs(),
          id,
        ],
      );
      return repo.get(id);
    });
  }

  /**
   * Archived management API: deletes a stored location. The record is kept (marked deleted) because
   * placements and attempts still name it; its extid becomes free. The Home location is refused.
   * False when the tool has no such live location.
   */
  async deleteStored(appId: string, id: string): Promise<boolean> {
    return this.ctx.db.transaction(async (tx) => {
      const current = await new LocationsRepo({ db: tx, clock: this.ctx.clock }).getForApp(appId, id);
      if (!current) return false;
      if (current.isDefault) throw new DefaultLocationError();
      const now = this.ctx.clock.nowMs();
      await tx.run('UPDATE locations SET deleted_at = ?, updated_at = ? WHERE id = ?', [now, now, id]);
      return true;
    });
  }

  /** Archived management API listing, in picker order. */
  async listStored(appId: string): Promise<LocationRecord[]> {
    const rows = await this.ctx.db.all<LocationRow>(
      `SELECT ${COLUMNS} FROM locations WHERE app_id = ? AND is_stored = 1 AND deleted_at IS NULL
       ORDER BY sort_order, created_at, id`,
      [appId],
    );
    return rows.map(toLocation);
  }

  /** Every live location of the tool, served and stored, hidden included. */
  async listForApp(appId: string): Promise<LocationRecord[]> {
    const rows = await this.ctx.db.all<LocationRow>(
      `SELECT ${COLUMNS} FROM locations WHERE app_id = ? AND deleted_at IS NULL ORDER BY created_at, id`,
      [appId],
    );
    return rows.map(toLocation);
  }

  async isPlaced(locationId: string): Promise<boolean> {
    const row = await this.ctx.db.get<{ one: number }>('SELECT 1 AS one FROM placements WHERE location_id = ? LIMIT 1', [
      locationId,
    ]);
    return row !== undefined;
  }
}

/** Serializes writes to one tool's locations (on PostgreSQL; SQLite writers are serialized already). */
async function lockApp(tx: RepoContext['db'], appId: string): Promise<void> {
  await tx.get(`SELECT id FROM apps WHERE id = ?${tx.forUpdate}`, [appId]);
}
