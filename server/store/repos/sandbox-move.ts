import type { RepoContext } from './common.js';

/**
 * The writes that move a Sandbox course of an older Sandbox school (the S-12 school, or a school of an
 * earlier `PUBLIC_URL`) into the tool's Sandbox LMS school (decision LTI-53): the course keeps its ID, so
 * every row, file, placement, provisioning state and attempt hanging on it stays where it is; its members
 * keep their IDs (member rows hang on them). Each write is conditional on where the record was, so two
 * instances racing to move the same course move it once: the loser's write changes nothing.
 */
export class SandboxMoveRepo {
  constructor(private readonly ctx: RepoContext) {}

  /** The course into `toOrganization` under its LMS course ID; false when it is no longer in `fromOrganization`. */
  async moveContext(contextId: string, fromOrganization: string, toOrganization: string, externalId: string): Promise<boolean> {
    // `updated_at` is left alone: the trial course tells its last reset by it (`lastResetOf`).
    const result = await this.ctx.db.run('UPDATE contexts SET organization_id = ?, external_id = ? WHERE id = ? AND organization_id = ?', [
      toOrganization,
      externalId,
      contextId,
      fromOrganization,
    ]);
    return result.changes === 1;
  }

  /** The person into `toOrganization`, keeping their ID; false when they are no longer in `fromOrganization`. */
  async moveUser(userId: string, fromOrganization: string, toOrganization: string): Promise<boolean> {
    const result = await this.ctx.db.run('UPDATE users SET organization_id = ?, updated_at = ? WHERE id = ? AND organization_id = ?', [
      toOrganization,
      this.ctx.clock.nowMs(),
      userId,
      fromOrganization,
    ]);
    return result.changes === 1;
  }

  /** A membership that now belongs to the school's own record of the same person (same LMS user ID). */
  async setMemberUser(memberId: string, userId: string): Promise<void> {
    await this.ctx.db.run('UPDATE members SET user_id = ?, updated_at = ? WHERE id = ?', [userId, this.ctx.clock.nowMs(), memberId]);
  }
}
