import { UniqueViolationError } from '../errors.js';
import { newSecret, sha256Hex } from '../ids.js';
import type { RepoContext } from './common.js';
import { parseJson } from './common.js';

/** Sandbox LMS access tokens: `sbx_at_` + 43 base64url characters, stored only as a SHA-256 digest. */
export const SANDBOX_LMS_TOKEN_PREFIX = 'sbx_at_';
const TOKEN_RE = /^sbx_at_[A-Za-z0-9_-]{43}$/;

export interface SandboxLmsTokenRecord {
  organizationId: string;
  scopes: string[];
  createdAt: number;
  expiresAt: number;
}

export type SandboxLmsTokenVerification =
  | { status: 'valid' | 'expired'; record: SandboxLmsTokenRecord }
  | { status: 'unknown' };

interface TokenRow {
  organization_id: string;
  scopes: string;
  created_at: number;
  expires_at: number;
}

function toRecord(row: TokenRow): SandboxLmsTokenRecord {
  return {
    organizationId: row.organization_id,
    scopes: parseJson<string[]>(row.scopes, []),
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}

/**
 * The OAuth 2.0 side of the Sandbox LMS (decision S-12): the access tokens it issued and the client
 * assertion IDs it has seen. Both live in the database so that every instance of the service honours a
 * token another instance issued and refuses an assertion another instance accepted.
 */
export class SandboxLmsRepo {
  constructor(private readonly ctx: RepoContext) {}

  /** `token` is returned only here. */
  async issueToken(input: {
    organizationId: string;
    scopes: readonly string[];
    ttlSeconds: number;
  }): Promise<{ token: string; record: SandboxLmsTokenRecord }> {
    const token = `${SANDBOX_LMS_TOKEN_PREFIX}${newSecret()}`;
    const now = this.ctx.clock.nowMs();
    await this.ctx.db.run(
      'INSERT INTO sandbox_lms_tokens (token_hash, organization_id, scopes, created_at, expires_at) VALUES (?, ?, ?, ?, ?)',
      [sha256Hex(token), input.organizationId, JSON.stringify([...input.scopes]), now, now + input.ttlSeconds * 1000],
    );
    return {
      token,
      record: { organizationId: input.organizationId, scopes: [...input.scopes], createdAt: now, expiresAt: now + input.ttlSeconds * 1000 },
    };
  }

  async verifyToken(token: string): Promise<SandboxLmsTokenVerification> {
    if (!TOKEN_RE.test(token)) return { status: 'unknown' };
    const row = await this.ctx.db.get<TokenRow>(
      'SELECT organization_id, scopes, created_at, expires_at FROM sandbox_lms_tokens WHERE token_hash = ?',
      [sha256Hex(token)],
    );
    if (!row) return { status: 'unknown' };
    const record = toRecord(row);
    return { status: record.expiresAt <= this.ctx.clock.nowMs() ? 'expired' : 'valid', record };
  }

  /**
   * Records a client assertion's `jti`; false when the client used it before (a replay). Kept until
   * `expiresAt`, after which the assertion's own `exp` refuses it anyway.
   */
  async useAssertion(client: string, jti: string, expiresAt: number): Promise<boolean> {
    try {
      const result = await this.ctx.db.run(
        `INSERT INTO sandbox_lms_assertions (client, jti, expires_at) VALUES (?, ?, ?)
         ON CONFLICT (client, jti) DO NOTHING`,
        [client, jti, expiresAt],
      );
      return result.changes === 1;
    } catch (err) {
      if (err instanceof UniqueViolationError) return false;
      throw err;
    }
  }

  /** Drops tokens expired a day ago (a late caller still gets `Expired bearer token`) and spent assertions. */
  async purgeExpired(now: number = this.ctx.clock.nowMs()): Promise<{ tokens: number; assertions: number }> {
    const tokens = await this.ctx.db.run('DELETE FROM sandbox_lms_tokens WHERE expires_at < ?', [now - 86_400_000]);
    const assertions = await this.ctx.db.run('DELETE FROM sandbox_lms_assertions WHERE expires_at < ?', [now]);
    return { tokens: tokens.changes, assertions: assertions.changes };
  }
}
