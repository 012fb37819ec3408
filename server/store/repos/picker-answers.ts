import type { RepoContext } from './common.js';

/**
 * The last picker answer of each course (decision S-09): what the instructor saw the last time the
 * picker was opened there, from which placements are made. The answer is kept as JSON text exactly as
 * the picker produced it; its locations are arrays, so the tool's order survives (digit-only extids
 * included), which an object keyed by extid would not.
 */
export interface PickerAnswerRecord {
  appId: string;
  contextId: string;
  /** The picker answer as JSON text. */
  answer: string;
  fetchedAt: number;
}

interface PickerAnswerRow {
  app_id: string;
  context_id: string;
  answer: string;
  fetched_at: number;
}

export class PickerAnswersRepo {
  constructor(private readonly ctx: RepoContext) {}

  async put(input: PickerAnswerRecord): Promise<void> {
    await this.ctx.db.run(
      `INSERT INTO picker_answers (app_id, context_id, answer, fetched_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (app_id, context_id) DO UPDATE SET answer = excluded.answer, fetched_at = excluded.fetched_at`,
      [input.appId, input.contextId, input.answer, input.fetchedAt],
    );
  }

  async get(appId: string, contextId: string): Promise<PickerAnswerRecord | null> {
    const row = await this.ctx.db.get<PickerAnswerRow>(
      'SELECT app_id, context_id, answer, fetched_at FROM picker_answers WHERE app_id = ? AND context_id = ?',
      [appId, contextId],
    );
    return row ? { appId: row.app_id, contextId: row.context_id, answer: row.answer, fetchedAt: row.fetched_at } : null;
  }

  /** A Sandbox reset forgets the answer (decision S-11). */
  async delete(appId: string, contextId: string): Promise<boolean> {
    const result = await this.ctx.db.run('DELETE FROM picker_answers WHERE app_id = ? AND context_id = ?', [appId, contextId]);
    return result.changes > 0;
  }
}
