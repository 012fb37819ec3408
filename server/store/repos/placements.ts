import { rowValues } from '../driver.js';
import { newId } from '../ids.js';
import type { RepoContext } from './common.js';
import { parseJson } from './common.js';
import type { AppRecord } from './apps.js';
import { APP_COLUMNS, toApp } from './apps.js';
import type { ContextRecord, MemberRecord, OrganizationRecord, UserRecord } from './directory.js';
import { CONTEXT_COLUMNS, MEMBER_COLUMNS, ORG_COLUMNS, toContext, toMember, toOrganization, toUser, USER_COLUMNS } from './directory.js';
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

/** Where a school's LMS takes grades (LTI-16), as `LtiRepo.findGradeService` reads it (PERF-48). */
export interface GradeServiceRecord {
  clientId: string;
  tokenUrl: string;
  tokenAudience: string | null;
}

/** Everything a score submission reads, from the guard's facts to the records it is published against. */
export interface ScoreRead {
  /** The URL's member, if it is a member of the URL's course. */
  member: MemberRecord | null;
  /** The session's user's membership in the URL's course (null without a user or membership). */
  callerMember: MemberRecord | null;
  /** Whether the tool has placed the location in the course (GAP-21). */
  placed: boolean;
  /** The tool's placements of the location in the course, oldest first, and what they are published with. */
  scored: {
    placements: PlacementRecord[];
    app: AppRecord;
    context: ContextRecord;
    organization: OrganizationRecord;
    location: LocationRecord;
    /** The URL's member's person; null when the member or its row is gone. */
    user: UserRecord | null;
    /** The active registration of the school's (issuer, client); null when it has none. */
    gradeService: GradeServiceRecord | null;
  } | null;
}

/** Each record of the joined row: its alias, and its columns as `[alias_column, column]`. */
const SCORED_PARTS = {
  m: MEMBER_COLUMNS,
  cm: MEMBER_COLUMNS,
  p: COLUMNS,
  a: APP_COLUMNS,
  c: CONTEXT_COLUMNS,
  o: ORG_COLUMNS,
  l: LOCATION_COLUMNS,
  u: USER_COLUMNS,
  r: 'client_id, token_url, token_audience',
} as const;
type ScoredAlias = keyof typeof SCORED_PARTS;
/** Each record's columns as `[place in the joined row, column]`: the row is read as an array (PERF-140). */
const SCORED_PLACES = {} as Record<ScoredAlias, ReadonlyArray<readonly [number, string]>>;
/** Each alias's first column (its key), null in the joined row when the LEFT JOIN found nothing. */
const SCORED_KEYS = {} as Record<ScoredAlias, number>;
const selected: string[] = [];
for (const alias of Object.keys(SCORED_PARTS) as ScoredAlias[]) {
  SCORED_PLACES[alias] = SCORED_PARTS[alias].split(',').map((c) => {
    const column = c.trim();
    selected.push(`${alias}.${column} AS ${alias}_${column}`);
    return [selected.length - 1, column] as const;
  });
  SCORED_KEYS[alias] = SCORED_PLACES[alias][0]?.[0] ?? -1;
}

/** `alias.column AS alias_column` for each of a repo's columns, so one joined row holds several records. */
const SCORED_SELECT = selected.join(', ');

/**
 * One record's columns out of a joined row, under their own names, by the places worked out once above
 * (was: found by testing every column of the row for the prefix, 1% of a score's CPU; then by name, PERF-54).
 */
function part<T>(row: readonly unknown[], alias: ScoredAlias): T {
  const out: Record<string, unknown> = {};
  for (const [place, column] of SCORED_PLACES[alias]) out[column] = row[place];
  return out as T;
}

/** Whether the joined row holds a record under the alias (its first column, the key, is not null). */
function present(row: readonly unknown[], alias: ScoredAlias): boolean {
  const key = row[SCORED_KEYS[alias]];
  return key !== null && key !== undefined;
}

function gradeServiceOf(row: { client_id: string; token_url: string; token_audience: string | null }): GradeServiceRecord {
  return { clientId: row.client_id, tokenUrl: row.token_url, tokenAudience: row.token_audience ?? null };
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
   * Everything a score submission reads, in one statement (PERF-70; was the guard's three reads, PERF-50's
   * joined read and the grade service's, PERF-48): the URL's member in the course, the session user's
   * membership, and the tool's placements of the location in the course, each with the app, the course,
   * its school, the location, the member's person and the school's active registration. One row per
   * placement, or one row without a placement; the members, person and registration are on every row.
   * `memberId` and `callerUserId` that name nothing give null records, never an error.
   */
  async scoreRead(contextId: string, appId: string, locationId: string, memberId: string, callerUserId: string | null): Promise<ScoreRead> {
    const { sql, params } = scoreReadStatement(contextId, appId, locationId, memberId, callerUserId);
    // As arrays: better-sqlite3 would add the 79 column names to an object per row (PERF-140).
    return scoreReadOf(await rowValues(this.ctx.db, sql, params));
  }

}

const SCORE_READ_SQL = `SELECT ${SCORED_SELECT}
         FROM (SELECT 1 AS one) base
         LEFT JOIN members m ON m.id = ? AND m.context_id = ?
         LEFT JOIN members cm ON cm.context_id = ? AND cm.user_id = ?
         LEFT JOIN users u ON u.id = m.user_id
         LEFT JOIN placements p ON p.context_id = ? AND p.app_id = ? AND p.location_id = ?
         LEFT JOIN apps a ON a.id = p.app_id
         LEFT JOIN contexts c ON c.id = p.context_id
         LEFT JOIN organizations o ON o.id = c.organization_id
         LEFT JOIN locations l ON l.id = p.location_id
         LEFT JOIN lti_registrations r ON r.issuer = o.issuer AND r.client_id = o.client AND r.status = 'active'
        ORDER BY p.created_at, p.id`;

/**
 * The statement of `PlacementsRepo.scoreRead`, rows to be read as arrays, for a caller that sends it with
 * others in one exchange (PostgreSQL's score transaction, PERF-171); `scoreReadOf` makes its records.
 */
export function scoreReadStatement(
  contextId: string,
  appId: string,
  locationId: string,
  memberId: string,
  callerUserId: string | null,
): { sql: string; params: Array<string | null> } {
  return { sql: SCORE_READ_SQL, params: [memberId, contextId, contextId, callerUserId, contextId, appId, locationId] };
}

/** The records of `scoreRead`'s rows (as arrays in the SELECT's column order). */
export function scoreReadOf(rows: readonly (readonly unknown[])[]): ScoreRead {
  const first = rows[0] ?? [];
  const member = present(first, 'm') ? toMember(part(first, 'm')) : null;
  const callerMember = present(first, 'cm') ? toMember(part(first, 'cm')) : null;
  const placed = present(first, 'p');
  // The placements whose app, course, school and location rows exist (they always do: foreign keys).
  const whole = rows.filter((row) => present(row, 'p') && present(row, 'a') && present(row, 'c') && present(row, 'o') && present(row, 'l'));
  const head = whole[0];
  if (!head) return { member, callerMember, placed, scored: null };
  return {
    member,
    callerMember,
    placed,
    scored: {
      placements: whole.map((row) => toPlacement(part(row, 'p'))),
      app: toApp(part(head, 'a')),
      context: toContext(part(head, 'c')),
      organization: toOrganization(part(head, 'o')),
      location: toLocation(part(head, 'l')),
      user: present(head, 'u') ? toUser(part(head, 'u')) : null,
      gradeService: present(head, 'r')
        ? gradeServiceOf(part<{ client_id: string; token_url: string; token_audience: string | null }>(head, 'r'))
        : null,
    },
  };
}
