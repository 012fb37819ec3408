import { newId } from '../ids.js';
import type { RepoContext } from './common.js';
import { parseJson } from './common.js';
import type { AppRecord } from './apps.js';
import { APP_COLUMNS, toApp } from './apps.js';
import type { ContextRecord, OrganizationRecord, UserRecord } from './directory.js';
import { CONTEXT_COLUMNS, ORG_COLUMNS, toContext, toOrganization, toUser, USER_COLUMNS } from './directory.js';
import type { LocationRecord, LocationType } from './locations.js';
import { COLUMNS as LOCATION_COLUMNS, toLocation } from './locations.js';

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

/** Each record of the joined row: its alias, and its columns as `[alias_column, column]`. */
const SCORED_PARTS = {
  p: COLUMNS,
  a: APP_COLUMNS,
  c: CONTEXT_COLUMNS,
  o: ORG_COLUMNS,
  l: LOCATION_COLUMNS,
  u: USER_COLUMNS,
} as const;
type ScoredAlias = keyof typeof SCORED_PARTS;
const SCORED_NAMES = {} as Record<ScoredAlias, ReadonlyArray<readonly [string, string]>>;
for (const alias of Object.keys(SCORED_PARTS) as ScoredAlias[]) {
  SCORED_NAMES[alias] = SCORED_PARTS[alias].split(',').map((c) => [`${alias}_${c.trim()}`, c.trim()] as const);
}

/** `alias.column AS alias_column` for each of a repo's columns, so one joined row holds several records. */
const SCORED_SELECT = Object.entries(SCORED_NAMES)
  .flatMap(([alias, names]) => names.map(([joined, column]) => `${alias}.${column} AS ${joined}`))
  .join(', ');

/**
 * One record's columns out of a joined row, under their own names: looked up by the names made once
 * above, not found by testing every column of the row for the prefix (which was 1% of a score's CPU).
 */
function part<T>(row: Record<string, unknown>, alias: ScoredAlias): T {
  const out: Record<string, unknown> = {};
  for (const [joined, column] of SCORED_NAMES[alias]) out[column] = row[joined];
  return out as T;
}

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
  /**
   * What a score is published against, in one statement (PERF-50): the tool's placements of the location
   * in the course, each with the app, the course, its school, the location and the scored person, read
   * once. Empty when the tool has not placed the location there; `user` is null when its row is gone.
   */
  async scoredRecords(
    contextId: string,
    appId: string,
    locationId: string,
    userId: string,
  ): Promise<{ placements: PlacementRecord[]; app: AppRecord; context: ContextRecord; organization: OrganizationRecord; location: LocationRecord; user: UserRecord | null } | null> {
    const rows = await this.ctx.db.all<Record<string, unknown>>(
      `SELECT ${SCORED_SELECT}
         FROM placements p
         JOIN apps a ON a.id = p.app_id
         JOIN contexts c ON c.id = p.context_id
         JOIN organizations o ON o.id = c.organization_id
         JOIN locations l ON l.id = p.location_id
         LEFT JOIN users u ON u.id = ?
        WHERE p.context_id = ? AND p.app_id = ? AND p.location_id = ?
        ORDER BY p.created_at, p.id`,
      [userId, contextId, appId, locationId],
    );
    const first = rows[0];
    if (!first) return null;
    const user = first['u_id'] === null || first['u_id'] === undefined ? null : toUser(part(first, 'u'));
    return {
      placements: rows.map((row) => toPlacement(part(row, 'p'))),
      app: toApp(part(first, 'a')),
      context: toContext(part(first, 'c')),
      organization: toOrganization(part(first, 'o')),
      location: toLocation(part(first, 'l')),
      user,
    };
  }
}
