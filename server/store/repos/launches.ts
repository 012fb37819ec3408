import { isWellFormedTicket, newId, newTicket, sha256Hex } from '../ids.js';
import type { JsonValue, RepoContext } from './common.js';
import { bool } from './common.js';

export interface LaunchRecord {
  /** The `launch_id` claim. */
  id: string;
  appId: string;
  placementId: string | null;
  contextId: string;
  locationId: string;
  memberId: string;
  /** Archived `grade_passback`: the launch had a gradebook column. */
  gradePassback: boolean;
  /** A dashboard trial launch: the archived `POST /grades` accepts it and writes nothing (GAP-43). */
  trial: boolean;
  createdAt: number;
}

export type TicketConsumption =
  | { status: 'ok'; payload: JsonValue }
  | { status: 'used' | 'expired' | 'unknown' };

/** Matches the life of the launch token the page delivers (decision GAP-32). */
export const LAUNCH_TICKET_TTL_SECONDS = 300;

interface LaunchRow {
  id: string;
  app_id: string;
  placement_id: string | null;
  context_id: string;
  location_id: string;
  member_id: string;
  grade_passback: number;
  trial: number;
  created_at: number;
}

const COLUMNS = 'id, app_id, placement_id, context_id, location_id, member_id, grade_passback, trial, created_at';

function toLaunch(row: LaunchRow): LaunchRecord {
  return {
    id: row.id,
    appId: row.app_id,
    placementId: row.placement_id,
    contextId: row.context_id,
    locationId: row.location_id,
    memberId: row.member_id,
    gradePassback: bool(row.grade_passback),
    trial: bool(row.trial),
    createdAt: row.created_at,
  };
}

export class LaunchesRepo {
  constructor(private readonly ctx: RepoContext) {}

  async create(input: {
    appId: string;
    placementId?: string | null;
    contextId: string;
    locationId: string;
    memberId: string;
    gradePassback: boolean;
    trial?: boolean;
  }): Promise<LaunchRecord> {
    const id = newId('lch');
    await this.ctx.db.run(
      `INSERT INTO launches (id, app_id, placement_id, context_id, location_id, member_id, grade_passback, trial, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        id,
        input.appId,
        input.placementId ?? null,
        input.contextId,
        input.locationId,
        input.memberId,
        input.gradePassback,
        input.trial ?? false,
        this.ctx.clock.nowMs(),
      ],
    );
    const record = await this.get(id);
    if (!record) throw new Error('launch vanished after insert');
    return record;
  }

  async get(id: string): Promise<LaunchRecord | null> {
    const row = await this.ctx.db.get<LaunchRow>(`SELECT ${COLUMNS} FROM launches WHERE id = ?`, [id]);
    return row ? toLaunch(row) : null;
  }

  /** Another tool's launch must be indistinguishable from an unknown one (`Launch not found`). */
  async getForApp(appId: string, id: string): Promise<LaunchRecord | null> {
    const row = await this.ctx.db.get<LaunchRow>(`SELECT ${COLUMNS} FROM launches WHERE id = ? AND app_id = ?`, [
      id,
      appId,
    ]);
    return row ? toLaunch(row) : null;
  }

  /**
   * A single-use ticket for the browser launch page (`GET /launch/{ticket}`). Only its digest is kept,
   * so a database read does not hand out live tickets. The payload's `placement_id` (what the launch page
   * opens) is also kept as a column, so `deleteUnusedForPlacements` can find the ticket.
   */
  async createTicket(
    payload: JsonValue,
    options: { ttlSeconds?: number } = {},
  ): Promise<{ ticket: string; expiresAt: number }> {
    const ticket = newTicket();
    const now = this.ctx.clock.nowMs();
    const expiresAt = now + (options.ttlSeconds ?? LAUNCH_TICKET_TTL_SECONDS) * 1000;
    const named = typeof payload === 'object' && payload !== null && !Array.isArray(payload) ? payload['placement_id'] : undefined;
    await this.ctx.db.run(
      'INSERT INTO launch_tickets (ticket_hash, payload, placement_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)',
      [sha256Hex(ticket), JSON.stringify(payload), typeof named === 'string' ? named : null, now, expiresAt],
    );
    return { ticket, expiresAt };
  }

  /** Deletes the tickets not yet used that open one of these placements (a Sandbox reset); returns how many. */
  async deleteUnusedTicketsForPlacements(placementIds: readonly string[]): Promise<number> {
    let deleted = 0;
    for (const id of placementIds) {
      const result = await this.ctx.db.run('DELETE FROM launch_tickets WHERE placement_id = ? AND used_at IS NULL', [id]);
      deleted += result.changes;
    }
    return deleted;
  }

  /** Marks the ticket used and returns its payload; one statement, so two tabs cannot both use it. */
  async consumeTicket(ticket: string): Promise<TicketConsumption> {
    if (!isWellFormedTicket(ticket)) return { status: 'unknown' };
    const hash = sha256Hex(ticket);
    const now = this.ctx.clock.nowMs();
    const row = await this.ctx.db.get<{ payload: string }>(
      `UPDATE launch_tickets SET used_at = ? WHERE ticket_hash = ? AND used_at IS NULL AND expires_at > ?
       RETURNING payload`,
      [now, hash, now],
    );
    if (row) return { status: 'ok', payload: JSON.parse(row.payload) as JsonValue };
    const existing = await this.ctx.db.get<{ used_at: number | null }>(
      'SELECT used_at FROM launch_tickets WHERE ticket_hash = ?',
      [hash],
    );
    if (!existing) return { status: 'unknown' };
    return { status: existing.used_at !== null ? 'used' : 'expired' };
  }

  /**
   * The ticket's state and payload without using it up: the launch page reads a ticket on every reload
   * of its Provisioning page and consumes it only when it hands the browser to the tool.
   */
  async peekTicket(ticket: string): Promise<TicketConsumption> {
    if (!isWellFormedTicket(ticket)) return { status: 'unknown' };
    const row = await this.ctx.db.get<{ payload: string; used_at: number | null; expires_at: number }>(
      'SELECT payload, used_at, expires_at FROM launch_tickets WHERE ticket_hash = ?',
      [sha256Hex(ticket)],
    );
    if (!row) return { status: 'unknown' };
    if (row.used_at !== null) return { status: 'used' };
    if (row.expires_at <= this.ctx.clock.nowMs()) return { status: 'expired' };
    return { status: 'ok', payload: JSON.parse(row.payload) as JsonValue };
  }

  async purgeTickets(before: number = this.ctx.clock.nowMs()): Promise<number> {
    const result = await this.ctx.db.run('DELETE FROM launch_tickets WHERE expires_at < ?', [before]);
    return result.changes;
  }
}
