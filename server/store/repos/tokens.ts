import { isWellFormedApiToken, newApiToken, sha256Hex } from '../ids.js';
import type { RepoContext } from './common.js';
import { parseJson } from './common.js';

export type ApiTokenKind = 'launch' | 'provision';
export type ProvisionLevelName = 'context' | 'location';

/** Decision NS-14: `API_TOKEN_TTL_SECONDS`, default 4 hours from the launch. */
export const LAUNCH_TOKEN_TTL_SECONDS = 14_400;
/** Decision NS-14: a provision token lives 24 hours. */
export const PROVISION_TOKEN_TTL_SECONDS = 86_400;

export interface ApiTokenRecord {
  /** First 16 hex digits of the token's digest: safe to log, enough to tell tokens apart. */
  fingerprint: string;
  kind: ApiTokenKind;
  appId: string;
  contextId: string;
  /** The launching user and membership; null on provision tokens. */
  userId: string | null;
  memberId: string | null;
  /** The launch's or provision request's location; null for a course-level request. */
  locationId: string | null;
  launchId: string | null;
  /** A copied course's parent, whose rows and files a provision token may read (decision GAP-38). */
  parentContextId: string | null;
  /** Levels whose provision URL this token may PUT. */
  provisionLevels: ProvisionLevelName[];
  createdAt: number;
  expiresAt: number;
  revokedAt: number | null;
}

export type ApiTokenVerification =
  | { status: 'valid' | 'expired' | 'revoked'; record: ApiTokenRecord }
  | { status: 'unknown' };

export interface IssueApiTokenInput {
  kind: ApiTokenKind;
  appId: string;
  contextId: string;
  userId?: string | null;
  memberId?: string | null;
  locationId?: string | null;
  launchId?: string | null;
  parentContextId?: string | null;
  provisionLevels?: readonly ProvisionLevelName[];
  /** Defaults by kind (decision NS-14). */
  ttlSeconds?: number;
}

interface TokenRow {
  token_hash: string;
  kind: ApiTokenKind;
  app_id: string;
  context_id: string;
  user_id: string | null;
  member_id: string | null;
  location_id: string | null;
  launch_id: string | null;
  parent_context_id: string | null;
  provision_levels: string;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
}

const COLUMNS = `token_hash, kind, app_id, context_id, user_id, member_id, location_id, launch_id, parent_context_id,
  provision_levels, created_at, expires_at, revoked_at`;

function toRecord(row: TokenRow): ApiTokenRecord {
  return {
    fingerprint: row.token_hash.slice(0, 16),
    kind: row.kind,
    appId: row.app_id,
    contextId: row.context_id,
    userId: row.user_id,
    memberId: row.member_id,
    locationId: row.location_id,
    launchId: row.launch_id,
    parentContextId: row.parent_context_id,
    provisionLevels: parseJson<ProvisionLevelName[]>(row.provision_levels, []),
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  };
}

/**
 * The `api.token` of launches and provision requests: opaque `tis_at_` + 43 characters, stored only as
 * a SHA-256 digest and found by it (decision NS-14). An older token stays valid until its own expiry
 * after a newer launch (decision GAP-34).
 */
export class ApiTokensRepo {
  constructor(private readonly ctx: RepoContext) {}

  /** `token` is returned only here. */
  async issue(input: IssueApiTokenInput): Promise<{ token: string; record: ApiTokenRecord }> {
    const token = newApiToken();
    const hash = sha256Hex(token);
    const now = this.ctx.clock.nowMs();
    const ttl = input.ttlSeconds ?? (input.kind === 'launch' ? LAUNCH_TOKEN_TTL_SECONDS : PROVISION_TOKEN_TTL_SECONDS);
    await this.ctx.db.run(
      `INSERT INTO api_tokens (token_hash, kind, app_id, context_id, user_id, member_id, location_id, launch_id,
         parent_context_id, provision_levels, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        hash,
        input.kind,
        input.appId,
        input.contextId,
        input.userId ?? null,
        input.memberId ?? null,
        input.locationId ?? null,
        input.launchId ?? null,
        input.parentContextId ?? null,
        JSON.stringify([...new Set(input.provisionLevels ?? [])]),
        now,
        now + ttl * 1000,
      ],
    );
    const row = await this.ctx.db.get<TokenRow>(`SELECT ${COLUMNS} FROM api_tokens WHERE token_hash = ?`, [hash]);
    if (!row) throw new Error('token vanished after insert');
    return { token, record: toRecord(row) };
  }

  /** Tells the three refusals apart, because they answer different messages (decision NS-21). */
  async verify(token: string): Promise<ApiTokenVerification> {
    if (!isWellFormedApiToken(token)) return { status: 'unknown' };
    const row = await this.ctx.db.get<TokenRow>(`SELECT ${COLUMNS} FROM api_tokens WHERE token_hash = ?`, [
      sha256Hex(token),
    ]);
    if (!row) return { status: 'unknown' };
    const record = toRecord(row);
    if (record.revokedAt !== null) return { status: 'revoked', record };
    if (record.expiresAt <= this.ctx.clock.nowMs()) return { status: 'expired', record };
    return { status: 'valid', record };
  }

  async revoke(token: string): Promise<boolean> {
    const result = await this.ctx.db.run(
      'UPDATE api_tokens SET revoked_at = ? WHERE token_hash = ? AND revoked_at IS NULL',
      [this.ctx.clock.nowMs(), sha256Hex(token)],
    );
    return result.changes > 0;
  }

  /** Revokes every token issued in the course (a Sandbox reset, decision GAP-39). Returns how many. */
  async revokeForContext(contextId: string, appId?: string): Promise<number> {
    const now = this.ctx.clock.nowMs();
    const result =
      appId === undefined
        ? await this.ctx.db.run('UPDATE api_tokens SET revoked_at = ? WHERE context_id = ? AND revoked_at IS NULL', [
            now,
            contextId,
          ])
        : await this.ctx.db.run(
            'UPDATE api_tokens SET revoked_at = ? WHERE context_id = ? AND app_id = ? AND revoked_at IS NULL',
            [now, contextId, appId],
          );
    return result.changes;
  }

  /**
   * Deletes tokens that expired before `before`. Keep them a while after expiry (the default keeps a
   * day) so a late caller still gets `Expired bearer token` rather than `Invalid bearer token`.
   */
  async purgeExpired(before: number = this.ctx.clock.nowMs() - 86_400_000): Promise<number> {
    const result = await this.ctx.db.run('DELETE FROM api_tokens WHERE expires_at < ?', [before]);
    return result.changes;
  }
}
