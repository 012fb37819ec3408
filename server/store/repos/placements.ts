import { newId } from '../ids.js';
import type { RepoContext } from './common.js';
import { parseJson } from './common.js';
import type { LocationType } from './locations.js';

/** The copy of the location entry taken when the placement was made; every launch carries it. */
export interface PlacementEntry {
  extid: string | null;
  type: LocationType;
  label: string;
  description?: string | null;
  points?: number | null;
}

export interface PlacementRecord {
  id: string;
  appId: string;
  contextId: string;
  locationId: string;
  /** The `resource_link` claim: stable for this placement, unique across the service (decision NS-04). */
  resourceLink: string;
  entry: PlacementEntry;
  /** The gradebook column; null when the LMS created none (then `grade.submit` is null). */
  lineItemId: string | null;
  createdAt: number;
}

interface PlacementRow {
  id: string;
  app_id: string;
  context_id: string;
  location_id: string;
  resource_link: string;
  entry: string;
  line_item_id: string | null;
  created_at: number;
}

const COLUMNS = 'id, app_id, context_id, location_id, resource_link, entry, line_item_id, created_at';

function toPlacement(row: PlacementRow): PlacementRecord {
  return {
    id: row.id,
    appId: row.app_id,
    contextId: row.context_id,
    locationId: row.location_id,
    resourceLink: row.resource_link,
    entry: parseJson<PlacementEntry>(row.entry, { extid: null, type: 'content', label: '' }),
    lineItemId: row.line_item_id,
    createdAt: row.created_at,
  };
}

export class PlacementsRepo {
  constructor(private readonly ctx: RepoContext) {}

  async create(input: {
    appId: string;
    contextId: string;
    locationId: string;
    entry: PlacementEntry;
    /** Defaults to a fresh opaque value. */
    resourceLink?: string;
    lineItemId?: string | null;
  }): Promise<PlacementRecord> {
    const id = newId('plc');
    await this.ctx.db.run(
      `INSERT INTO placements (id, app_id, context_id, location_id, resource_link, entry, line_item_id, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        id,
        input.appId,
        input.contextId,
        input.locationId,
        input.resourceLink ?? newId('rl'),
        JSON.stringify(input.entry),
        input.lineItemId ?? null,
        this.ctx.clock.nowMs(),
      ],
    );
    const record = await this.get(id);
    if (!record) throw new Error('placement vanished after insert');
    return record;
  }

  async get(id: string): Promise<PlacementRecord | null> {
    const row = await this.ctx.db.get<PlacementRow>(`SELECT ${COLUMNS} FROM placements WHERE id = ?`, [id]);
    return row ? toPlacement(row) : null;
  }

  async findByResourceLink(resourceLink: string): Promise<PlacementRecord | null> {
    const row = await this.ctx.db.get<PlacementRow>(`SELECT ${COLUMNS} FROM placements WHERE resource_link = ?`, [
      resourceLink,
    ]);
    return row ? toPlacement(row) : null;
  }

  async listByContext(contextId: string, appId?: string): Promise<PlacementRecord[]> {
    const rows =
      appId === undefined
        ? await this.ctx.db.all<PlacementRow>(
            `SELECT ${COLUMNS} FROM placements WHERE context_id = ? ORDER BY created_at, id`,
            [contextId],
          )
        : await this.ctx.db.all<PlacementRow>(
            `SELECT ${COLUMNS} FROM placements WHERE context_id = ? AND app_id = ? ORDER BY created_at, id`,
            [contextId, appId],
          );
    return rows.map(toPlacement);
  }

  /** Whether the tool has placed the location in the course (decision GAP-21). */
  async isPlaced(appId: string, contextId: string, locationId: string): Promise<boolean> {
    const row = await this.ctx.db.get<{ one: number }>(
      'SELECT 1 AS one FROM placements WHERE context_id = ? AND app_id = ? AND location_id = ? LIMIT 1',
      [contextId, appId, locationId],
    );
    return row !== undefined;
  }

  async setLineItem(id: string, lineItemId: string | null): Promise<PlacementRecord | null> {
    await this.ctx.db.run('UPDATE placements SET line_item_id = ? WHERE id = ?', [lineItemId, id]);
    return this.get(id);
  }
}
