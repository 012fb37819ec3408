import type { RepoContext } from './common.js';

/**
 * The points the service last set on a placement's gradebook column with a `max_score` (decision H-03).
 * A score sent without `max_score` leaves the column as it is, so it is published against these points
 * when the LMS's own line item cannot be read.
 */
export class ColumnPointsRepo {
  constructor(private readonly ctx: RepoContext) {}

  async get(placementId: string): Promise<number | null> {
    const row = await this.ctx.db.get<{ points: number }>('SELECT points FROM column_points WHERE placement_id = ?', [placementId]);
    return row ? Number(row.points) : null;
  }

  async set(placementId: string, points: number): Promise<void> {
    await this.ctx.db.run(
      `INSERT INTO column_points (placement_id, points, set_at) VALUES (?, ?, ?)
       ON CONFLICT (placement_id) DO UPDATE SET points = excluded.points, set_at = excluded.set_at`,
      [placementId, points, this.ctx.clock.nowMs()],
    );
  }
}
