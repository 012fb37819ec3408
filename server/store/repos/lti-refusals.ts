import type { RepoContext } from './common.js';

/**
 * Refused LMS messages kept for diagnosis (decision LTI-126): per registration (`''` when the message
 * named none the service knows), with the report ID the person's page showed. Bounded on every insert:
 * the newest `REFUSALS_PER_REGISTRATION` of a registration, none older than `REFUSAL_RETENTION_MS`.
 */
export const REFUSALS_PER_REGISTRATION = 200;
export const REFUSAL_RETENTION_MS = 30 * 24 * 60 * 60_000;

export type LtiRefusalMessage = 'registration' | 'login' | 'launch' | 'deep_linking';

export interface LtiRefusalRecord {
  reportId: string;
  /** Null when the message named no registration the service knows (an unknown issuer or client). */
  registrationId: string | null;
  issuer: string | null;
  clientId: string | null;
  deploymentId: string | null;
  message: LtiRefusalMessage;
  code: string;
  status: number;
  reason: string;
  advice: string;
  detail: string;
  createdAt: number;
}

interface RefusalRow {
  report_id: string;
  registration_id: string;
  issuer: string | null;
  client_id: string | null;
  deployment_id: string | null;
  message: LtiRefusalMessage;
  code: string;
  status: number;
  reason: string;
  advice: string;
  detail: string;
  created_at: number;
}

const COLUMNS = 'report_id, registration_id, issuer, client_id, deployment_id, message, code, status, reason, advice, detail, created_at';

function toRecord(row: RefusalRow): LtiRefusalRecord {
  return {
    reportId: row.report_id,
    registrationId: row.registration_id === '' ? null : row.registration_id,
    issuer: row.issuer,
    clientId: row.client_id,
    deploymentId: row.deployment_id,
    message: row.message,
    code: row.code,
    status: Number(row.status),
    reason: row.reason,
    advice: row.advice,
    detail: row.detail,
    createdAt: Number(row.created_at),
  };
}

export class LtiRefusalsRepo {
  constructor(private readonly ctx: RepoContext) {}

  /**
   * Keeps a refusal and prunes its registration's bucket to the bound in the same transaction, so the
   * table never holds more than the bound per registration however many refusals arrive. A report ID
   * already kept (a caller's own `Request-Id` sent twice) keeps its first refusal.
   */
  async record(input: Omit<LtiRefusalRecord, 'createdAt'>): Promise<void> {
    const now = this.ctx.clock.nowMs();
    const bucket = input.registrationId ?? '';
    await this.ctx.db.transaction(async (tx) => {
      await tx.run(
        `INSERT INTO lti_refusals (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (report_id) DO NOTHING`,
        [
          input.reportId,
          bucket,
          input.issuer,
          input.clientId,
          input.deploymentId,
          input.message,
          input.code,
          input.status,
          input.reason,
          input.advice,
          input.detail,
          now,
        ],
      );
      // The oldest kept refusal past the bound, if any: everything at or before it goes.
      const edge = await tx.get<{ created_at: number; report_id: string }>(
        `SELECT created_at, report_id FROM lti_refusals WHERE registration_id = ?
         ORDER BY created_at DESC, report_id DESC LIMIT 1 OFFSET ${REFUSALS_PER_REGISTRATION}`,
        [bucket],
      );
      if (edge) {
        await tx.run(
          `DELETE FROM lti_refusals WHERE registration_id = ? AND (created_at < ? OR (created_at = ? AND report_id <= ?))`,
          [bucket, edge.created_at, edge.created_at, edge.report_id],
        );
      }
      await tx.run('DELETE FROM lti_refusals WHERE created_at < ?', [now - REFUSAL_RETENTION_MS]);
    });
  }

  /** A registration's refusals, newest first. */
  async listForRegistration(registrationId: string): Promise<LtiRefusalRecord[]> {
    const rows = await this.ctx.db.all<RefusalRow>(
      `SELECT ${COLUMNS} FROM lti_refusals WHERE registration_id = ? AND created_at >= ? ORDER BY created_at DESC, report_id DESC`,
      [registrationId, this.ctx.clock.nowMs() - REFUSAL_RETENTION_MS],
    );
    return rows.map(toRecord);
  }

  async get(reportId: string): Promise<LtiRefusalRecord | null> {
    const row = await this.ctx.db.get<RefusalRow>(`SELECT ${COLUMNS} FROM lti_refusals WHERE report_id = ? AND created_at >= ?`, [
      reportId,
      this.ctx.clock.nowMs() - REFUSAL_RETENTION_MS,
    ]);
    return row ? toRecord(row) : null;
  }
}
