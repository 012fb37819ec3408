import { isWellFormedBuilderToken, isWellFormedOperatorToken, newBuilderToken, newId, newOperatorToken, sha256Hex } from '../ids.js';
import type { RepoContext } from './common.js';

export type BuilderRole = 'builder' | 'platform';
export type AppBuilderRole = 'owner' | 'member';

export interface BuilderRecord {
  id: string;
  name: string;
  email: string | null;
  /** `platform` is the platform team's credential (activate, suspend: decision GAP-01). */
  role: BuilderRole;
  tokenHint: string;
  createdAt: number;
  updatedAt: number;
  /** When an operator was revoked (decision OPS-02); its token no longer verifies. */
  revokedAt: number | null;
}

interface BuilderRow {
  id: string;
  name: string;
  email: string | null;
  role: BuilderRole;
  token_hint: string;
  created_at: number;
  updated_at: number;
  revoked_at: number | string | null;
}

const COLUMNS = 'b.id, b.name, b.email, b.role, b.token_hint, b.created_at, b.updated_at, b.revoked_at';

function toBuilder(row: BuilderRow): BuilderRecord {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    role: row.role,
    tokenHint: row.token_hint,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
  };
}

/** The token's own prefix (`tisb_`, `tiso_`) and its last four characters. */
function tokenHint(token: string): string {
  return `${token.slice(0, token.indexOf('_') + 1)}...${token.slice(-4)}`;
}

/**
 * An operator (the `platform` role) gets `opr_` IDs and `tiso_` tokens, a builder `bld_` and `tisb_`
 * (OPS-51). Operators made before keep their `bld_` ID and `tisb_` token: both still verify.
 */
function newToken(role: BuilderRole): string {
  return role === 'platform' ? newOperatorToken() : newBuilderToken();
}

function normalizeEmail(email: string | null | undefined): string | null {
  const trimmed = email?.trim();
  return trimmed ? trimmed.toLowerCase() : null;
}

/**
 * Tool builders (dashboard users) and their membership in apps. Tokens are `tisb_` (operators: `tiso_`) + 256 random bits,
 * stored as a SHA-256 digest and found by it: with that much entropy, looking a digest up in an index
 * reveals nothing an attacker can use, so no constant-time comparison is needed here.
 */
export class BuildersRepo {
  constructor(private readonly ctx: RepoContext) {}

  /** `token` is returned only here and by `rotateToken`. */
  async create(input: { name: string; email?: string | null; role?: BuilderRole }): Promise<{
    builder: BuilderRecord;
    token: string;
  }> {
    const role = input.role ?? 'builder';
    const id = newId(role === 'platform' ? 'opr' : 'bld');
    const token = newToken(role);
    const now = this.ctx.clock.nowMs();
    await this.ctx.db.run(
      `INSERT INTO builders (id, name, email, role, token_hash, token_hint, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      [id, input.name, normalizeEmail(input.email), role, sha256Hex(token), tokenHint(token), now, now],
    );
    const builder = await this.get(id);
    if (!builder) throw new Error('builder vanished after insert');
    return { builder, token };
  }

  async get(id: string): Promise<BuilderRecord | null> {
    const row = await this.ctx.db.get<BuilderRow>(`SELECT ${COLUMNS} FROM builders b WHERE b.id = ?`, [id]);
    return row ? toBuilder(row) : null;
  }

  async findByEmail(email: string): Promise<BuilderRecord | null> {
    const row = await this.ctx.db.get<BuilderRow>(`SELECT ${COLUMNS} FROM builders b WHERE b.email = ?`, [
      normalizeEmail(email),
    ]);
    return row ? toBuilder(row) : null;
  }

  async list(): Promise<BuilderRecord[]> {
    const rows = await this.ctx.db.all<BuilderRow>(`SELECT ${COLUMNS} FROM builders b ORDER BY b.created_at, b.id`);
    return rows.map(toBuilder);
  }

  /** A `tisb_` token is a builder's or, made before OPS-51, an operator's; a `tiso_` token only an operator's. */
  async verifyToken(token: string): Promise<BuilderRecord | null> {
    const operatorOnly = isWellFormedOperatorToken(token);
    if (!operatorOnly && !isWellFormedBuilderToken(token)) return null;
    const row = await this.ctx.db.get<BuilderRow>(`SELECT ${COLUMNS} FROM builders b WHERE b.token_hash = ? AND b.revoked_at IS NULL`, [
      sha256Hex(token),
    ]);
    if (!row || (operatorOnly && row.role !== 'platform')) return null;
    return toBuilder(row);
  }

  /** The platform team's named operators (decision OPS-02), revoked ones included, oldest first. */
  async listOperators(): Promise<BuilderRecord[]> {
    const rows = await this.ctx.db.all<BuilderRow>(
      `SELECT ${COLUMNS} FROM builders b WHERE b.role = 'platform' ORDER BY b.created_at, b.id`,
    );
    return rows.map(toBuilder);
  }

  /** Stops an operator's token at once; the row stays for the audit log. Null when no such operator. */
  async revokeOperator(id: string): Promise<BuilderRecord | null> {
    await this.ctx.db.run(
      `UPDATE builders SET revoked_at = ?, updated_at = ? WHERE id = ? AND role = 'platform' AND revoked_at IS NULL`,
      [this.ctx.clock.nowMs(), this.ctx.clock.nowMs(), id],
    );
    const row = await this.get(id);
    return row?.role === 'platform' ? row : null;
  }

  /** The old token stops working at once. Null when no such builder. */
  async rotateToken(id: string): Promise<string | null> {
    const existing = await this.get(id);
    if (!existing) return null;
    const token = newToken(existing.role);
    const result = await this.ctx.db.run(
      'UPDATE builders SET token_hash = ?, token_hint = ?, updated_at = ? WHERE id = ?',
      [sha256Hex(token), tokenHint(token), this.ctx.clock.nowMs(), id],
    );
    return result.changes === 1 ? token : null;
  }

  /** Adds the builder to the app, or changes their role there. */
  async addToApp(appId: string, builderId: string, role: AppBuilderRole = 'member'): Promise<void> {
    await this.ctx.db.run(
      `INSERT INTO app_builders (app_id, builder_id, role, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (app_id, builder_id) DO UPDATE SET role = excluded.role`,
      [appId, builderId, role, this.ctx.clock.nowMs()],
    );
  }

  async removeFromApp(appId: string, builderId: string): Promise<boolean> {
    const result = await this.ctx.db.run('DELETE FROM app_builders WHERE app_id = ? AND builder_id = ?', [
      appId,
      builderId,
    ]);
    return result.changes > 0;
  }

  /** The builder's role in the app, or null when they are not a member of it. */
  async appRole(appId: string, builderId: string): Promise<AppBuilderRole | null> {
    const row = await this.ctx.db.get<{ role: AppBuilderRole }>(
      'SELECT role FROM app_builders WHERE app_id = ? AND builder_id = ?',
      [appId, builderId],
    );
    return row?.role ?? null;
  }

  async listForApp(appId: string): Promise<Array<BuilderRecord & { appRole: AppBuilderRole }>> {
    const rows = await this.ctx.db.all<BuilderRow & { app_role: AppBuilderRole }>(
      `SELECT ${COLUMNS}, ab.role AS app_role FROM builders b
       JOIN app_builders ab ON ab.builder_id = b.id
       WHERE ab.app_id = ? ORDER BY ab.created_at, b.id`,
      [appId],
    );
    return rows.map((row) => ({ ...toBuilder(row), appRole: row.app_role }));
  }
}
