import { newId } from '../ids.js';
import type { RepoContext } from './common.js';
import { bool } from './common.js';

/**
 * The service as an LTI tool toward schools' LMSes (decisions LTI-03, LTI-08, LTI-09, LTI-13, LTI-14): one
 * registration per (issuer, client_id), its deployments, logins in flight, used nonces, the LMS's resource
 * links bound to placements, and Deep Linking requests awaiting the picker's confirmation. Every one-shot
 * record (login, nonce, deep link) is used up by a single statement, so two instances cannot both use it.
 */

export type LtiRegistrationStatus = 'pending' | 'active' | 'inactive';
export type LtiRegistrationMethod = 'dynamic' | 'manual';

export interface LtiRegistrationRecord {
  id: string;
  issuer: string;
  clientId: string;
  authUrl: string;
  tokenUrl: string;
  jwksUrl: string;
  /** The client assertion's `aud` when it is not `tokenUrl` (Brightspace, `authorization_server`). */
  tokenAudience: string | null;
  title: string;
  productFamilyCode: string | null;
  /** The AGS scopes the platform granted. */
  scopes: string[];
  status: LtiRegistrationStatus;
  method: LtiRegistrationMethod;
  deployments: string[];
  createdAt: number;
  updatedAt: number;
}

export interface LtiRegistrationInput {
  issuer: string;
  clientId: string;
  authUrl: string;
  tokenUrl: string;
  jwksUrl: string;
  tokenAudience?: string | null;
  title: string;
  productFamilyCode?: string | null;
  scopes: readonly string[];
  status: LtiRegistrationStatus;
  method: LtiRegistrationMethod;
  deployments: readonly string[];
}

interface RegistrationRow {
  id: string;
  issuer: string;
  client_id: string;
  auth_url: string;
  token_url: string;
  jwks_url: string;
  token_audience: string | null;
  title: string;
  product_family_code: string | null;
  scopes: string;
  status: LtiRegistrationStatus;
  method: LtiRegistrationMethod;
  created_at: number;
  updated_at: number;
}

const REGISTRATION_COLUMNS =
  'id, issuer, client_id, auth_url, token_url, jwks_url, token_audience, title, product_family_code, scopes, status, method, created_at, updated_at';

export interface LtiLoginRecord {
  state: string;
  nonce: string;
  registrationId: string;
  storageTarget: string | null;
  /** The `lti_deployment_id` the login named, if any (LTI-60). */
  deploymentId: string | null;
  expiresAt: number;
}

interface LoginRow {
  state: string;
  nonce: string;
  registration_id: string;
  storage_target: string | null;
  deployment_id: string | null;
  expires_at: number;
}

function loginRecord(row: LoginRow): LtiLoginRecord {
  return {
    state: row.state,
    nonce: row.nonce,
    registrationId: row.registration_id,
    storageTarget: row.storage_target,
    deploymentId: row.deployment_id,
    expiresAt: row.expires_at,
  };
}

export interface LtiDeepLinkRecord {
  id: string;
  registrationId: string;
  organizationId: string;
  contextId: string;
  memberId: string;
  /** Deep Linking: where the response goes. Null for an instructor's choice for an unknown resource link. */
  returnUrl: string | null;
  /** The LMS resource link an instructor's choice binds (LTI-13); null for Deep Linking. */
  resourceLinkId: string | null;
  /** The request's `data`, echoed exactly; null when it had none. */
  data: string | null;
  acceptMultiple: boolean;
  expiresAt: number;
  /** The AGS `lineitem` of the launch that opened an instructor's choice for a resource link (LTI-120). */
  lineItemUrl: string | null;
  /** The AGS `lineitems` container of that launch (LTI-122). */
  lineItemsUrl: string | null;
}

/** A claim on creating a link's line item (LTI-122). */
export type LineItemClaim =
  /** This caller holds the claim and creates the line item; `takenOver` when an earlier holder's lapsed. */
  | { kind: 'holder'; holder: string; takenOver: boolean }
  /** The line item exists. */
  | { kind: 'created'; lineItemUrl: string }
  /** Another holder is creating it until `expiresAt`. */
  | { kind: 'pending'; expiresAt: number };

export class LtiRepo {
  constructor(private readonly ctx: RepoContext) {}

  private async withDeployments(row: RegistrationRow): Promise<LtiRegistrationRecord> {
    const deployments = await this.ctx.db.all<{ deployment_id: string }>(
      'SELECT deployment_id FROM lti_deployments WHERE registration_id = ? ORDER BY created_at, deployment_id',
      [row.id],
    );
    return {
      id: row.id,
      issuer: row.issuer,
      clientId: row.client_id,
      authUrl: row.auth_url,
      tokenUrl: row.token_url,
      jwksUrl: row.jwks_url,
      tokenAudience: row.token_audience,
      title: row.title,
      productFamilyCode: row.product_family_code,
      scopes: row.scopes === '' ? [] : row.scopes.split(' '),
      status: row.status,
      method: row.method,
      deployments: deployments.map((d) => d.deployment_id),
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    };
  }

  /**
   * Stores a registration; one already stored for (issuer, client_id) gets the new URLs, title and scopes
   * and keeps its status (an LMS registering again does not undo the platform team's decision).
   */
  async saveRegistration(input: LtiRegistrationInput): Promise<{ registration: LtiRegistrationRecord; created: boolean }> {
    return this.ctx.db.transaction(async (tx) => {
      const now = this.ctx.clock.nowMs();
      const inserted = await tx.run(
        `INSERT INTO lti_registrations (${REGISTRATION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (issuer, client_id) DO NOTHING`,
        [
          newId('lreg'),
          input.issuer,
          input.clientId,
          input.authUrl,
          input.tokenUrl,
          input.jwksUrl,
          input.tokenAudience ?? null,
          input.title,
          input.productFamilyCode ?? null,
          input.scopes.join(' '),
          input.status,
          input.method,
          now,
          now,
        ],
      );
      if (inserted.changes === 0) {
        await tx.run(
          `UPDATE lti_registrations SET auth_url = ?, token_url = ?, jwks_url = ?, token_audience = ?, title = ?,
             product_family_code = ?, scopes = ?, method = ?, updated_at = ?
           WHERE issuer = ? AND client_id = ?`,
          [
            input.authUrl,
            input.tokenUrl,
            input.jwksUrl,
            input.tokenAudience ?? null,
            input.title,
            input.productFamilyCode ?? null,
            input.scopes.join(' '),
            input.method,
            now,
            input.issuer,
            input.clientId,
          ],
        );
      }
      const row = await tx.get<RegistrationRow>(
        `SELECT ${REGISTRATION_COLUMNS} FROM lti_registrations WHERE issuer = ? AND client_id = ?`,
        [input.issuer, input.clientId],
      );
      if (!row) throw new Error('registration vanished inside its own transaction');
      for (const deployment of input.deployments) {
        await tx.run(
          `INSERT INTO lti_deployments (registration_id, deployment_id, created_at) VALUES (?, ?, ?)
           ON CONFLICT (registration_id, deployment_id) DO NOTHING`,
          [row.id, deployment, now],
        );
      }
      return { registration: await new LtiRepo({ db: tx, clock: this.ctx.clock }).withDeployments(row), created: inserted.changes > 0 };
    });
  }

  async getRegistration(id: string): Promise<LtiRegistrationRecord | null> {
    const row = await this.ctx.db.get<RegistrationRow>(`SELECT ${REGISTRATION_COLUMNS} FROM lti_registrations WHERE id = ?`, [id]);
    return row ? this.withDeployments(row) : null;
  }

  async findRegistration(issuer: string, clientId: string): Promise<LtiRegistrationRecord | null> {
    const row = await this.ctx.db.get<RegistrationRow>(
      `SELECT ${REGISTRATION_COLUMNS} FROM lti_registrations WHERE issuer = ? AND client_id = ?`,
      [issuer, clientId],
    );
    return row ? this.withDeployments(row) : null;
  }

  /**
   * What publishing a grade needs of the (issuer, client) registration, in one statement: the token
   * endpoint and assertion audience of an active registration, else null (PERF-48). The deployments,
   * which `findRegistration` reads with a second statement, decide nothing there.
   */
  async findGradeService(issuer: string, clientId: string): Promise<Pick<LtiRegistrationRecord, 'clientId' | 'tokenUrl' | 'tokenAudience'> | null> {
    const row = await this.ctx.db.get<Pick<RegistrationRow, 'client_id' | 'token_url' | 'token_audience'>>(
      `SELECT client_id, token_url, token_audience FROM lti_registrations WHERE issuer = ? AND client_id = ? AND status = 'active'`,
      [issuer, clientId],
    );
    return row ? { clientId: row.client_id, tokenUrl: row.token_url, tokenAudience: row.token_audience } : null;
  }

  /** The AGS scopes of the (issuer, client) registration; null when the service has none (LTI-121). */
  async scopesOf(issuer: string, clientId: string): Promise<string[] | null> {
    const row = await this.ctx.db.get<{ scopes: string }>('SELECT scopes FROM lti_registrations WHERE issuer = ? AND client_id = ?', [issuer, clientId]);
    if (!row) return null;
    return row.scopes === '' ? [] : row.scopes.split(' ');
  }

  async listRegistrationsByIssuer(issuer: string): Promise<LtiRegistrationRecord[]> {
    const rows = await this.ctx.db.all<RegistrationRow>(
      `SELECT ${REGISTRATION_COLUMNS} FROM lti_registrations WHERE issuer = ? ORDER BY created_at, id`,
      [issuer],
    );
    return Promise.all(rows.map((row) => this.withDeployments(row)));
  }

  async listRegistrations(): Promise<LtiRegistrationRecord[]> {
    const rows = await this.ctx.db.all<RegistrationRow>(`SELECT ${REGISTRATION_COLUMNS} FROM lti_registrations ORDER BY created_at, id`);
    return Promise.all(rows.map((row) => this.withDeployments(row)));
  }

  async setStatus(id: string, status: LtiRegistrationStatus): Promise<LtiRegistrationRecord | null> {
    await this.ctx.db.run('UPDATE lti_registrations SET status = ?, updated_at = ? WHERE id = ?', [status, this.ctx.clock.nowMs(), id]);
    return this.getRegistration(id);
  }

  /** Records a deployment seen in a launch; true when it was new (a new school, LTI-10). */
  async addDeployment(registrationId: string, deploymentId: string): Promise<boolean> {
    const result = await this.ctx.db.run(
      `INSERT INTO lti_deployments (registration_id, deployment_id, created_at) VALUES (?, ?, ?)
       ON CONFLICT (registration_id, deployment_id) DO NOTHING`,
      [registrationId, deploymentId, this.ctx.clock.nowMs()],
    );
    return result.changes > 0;
  }

  async createLogin(record: LtiLoginRecord): Promise<void> {
    const now = this.ctx.clock.nowMs();
    await this.ctx.db.run('DELETE FROM lti_logins WHERE expires_at <= ?', [now]);
    await this.ctx.db.run(
      'INSERT INTO lti_logins (state, nonce, registration_id, storage_target, deployment_id, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
      [record.state, record.nonce, record.registrationId, record.storageTarget, record.deploymentId, record.expiresAt],
    );
  }

  /** A login still open, without using it up. */
  async getLogin(state: string): Promise<LtiLoginRecord | null> {
    const row = await this.ctx.db.get<LoginRow>(
      'SELECT state, nonce, registration_id, storage_target, deployment_id, expires_at FROM lti_logins WHERE state = ? AND expires_at > ?',
      [state, this.ctx.clock.nowMs()],
    );
    return row ? loginRecord(row) : null;
  }

  /** Uses up a login: null when unknown, used or expired. */
  async consumeLogin(state: string): Promise<LtiLoginRecord | null> {
    const row = await this.ctx.db.get<LoginRow>(
      `DELETE FROM lti_logins WHERE state = ? AND expires_at > ?
       RETURNING state, nonce, registration_id, storage_target, deployment_id, expires_at`,
      [state, this.ctx.clock.nowMs()],
    );
    return row ? loginRecord(row) : null;
  }

  /** Records a nonce as used; false when it was used before (a replay). */
  async useNonce(registrationId: string, nonce: string, expiresAt: number): Promise<boolean> {
    const now = this.ctx.clock.nowMs();
    await this.ctx.db.run('DELETE FROM lti_nonces WHERE expires_at <= ?', [now]);
    const result = await this.ctx.db.run(
      `INSERT INTO lti_nonces (registration_id, nonce, expires_at) VALUES (?, ?, ?)
       ON CONFLICT (registration_id, nonce) DO NOTHING`,
      [registrationId, nonce, expiresAt],
    );
    return result.changes > 0;
  }

  async findResourceLink(organizationId: string, resourceLinkId: string): Promise<string | null> {
    const row = await this.ctx.db.get<{ placement_id: string }>(
      'SELECT placement_id FROM lti_resource_links WHERE organization_id = ? AND resource_link_id = ?',
      [organizationId, resourceLinkId],
    );
    return row?.placement_id ?? null;
  }

  /** Binds the LMS's resource link to a placement; the first binding stays (two first launches at once). */
  async bindResourceLink(organizationId: string, resourceLinkId: string, placementId: string): Promise<string> {
    await this.ctx.db.run(
      `INSERT INTO lti_resource_links (organization_id, resource_link_id, placement_id, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (organization_id, resource_link_id) DO NOTHING`,
      [organizationId, resourceLinkId, placementId, this.ctx.clock.nowMs()],
    );
    return (await this.findResourceLink(organizationId, resourceLinkId)) ?? placementId;
  }

  async createDeepLink(record: Omit<LtiDeepLinkRecord, 'id'>): Promise<LtiDeepLinkRecord> {
    const id = newId('dl');
    await this.ctx.db.run('DELETE FROM lti_deep_links WHERE expires_at <= ?', [this.ctx.clock.nowMs()]);
    await this.ctx.db.run(
      `INSERT INTO lti_deep_links (${DEEP_LINK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        id,
        record.registrationId,
        record.organizationId,
        record.contextId,
        record.memberId,
        record.returnUrl,
        record.resourceLinkId,
        record.data,
        record.acceptMultiple,
        record.expiresAt,
        record.lineItemUrl,
        record.lineItemsUrl,
      ],
    );
    return { id, ...record };
  }

  /**
   * Claims the creation of a link's line item (LTI-122): the row is inserted before the LMS is asked,
   * so of several launches (on any instance) one holds it; a claim whose holder did not finish by
   * `expiresAt` (it died, or the LMS failed it) is taken over by the next caller.
   */
  async claimLineItem(organizationId: string, resourceLinkId: string, holder: string, ttlMs: number): Promise<LineItemClaim> {
    const now = this.ctx.clock.nowMs();
    const inserted = await this.ctx.db.run(
      `INSERT INTO lti_line_item_claims (organization_id, resource_link_id, holder, expires_at, line_item_url) VALUES (?, ?, ?, ?, NULL)
       ON CONFLICT (organization_id, resource_link_id) DO NOTHING`,
      [organizationId, resourceLinkId, holder, now + ttlMs],
    );
    if (inserted.changes > 0) return { kind: 'holder', holder, takenOver: false };
    const takenOver = await this.ctx.db.run(
      `UPDATE lti_line_item_claims SET holder = ?, expires_at = ?
       WHERE organization_id = ? AND resource_link_id = ? AND line_item_url IS NULL AND expires_at <= ?`,
      [holder, now + ttlMs, organizationId, resourceLinkId, now],
    );
    if (takenOver.changes > 0) return { kind: 'holder', holder, takenOver: true };
    const row = await this.ctx.db.get<{ line_item_url: string | null; expires_at: number }>(
      'SELECT line_item_url, expires_at FROM lti_line_item_claims WHERE organization_id = ? AND resource_link_id = ?',
      [organizationId, resourceLinkId],
    );
    if (!row) return this.claimLineItem(organizationId, resourceLinkId, holder, ttlMs);
    return row.line_item_url !== null ? { kind: 'created', lineItemUrl: row.line_item_url } : { kind: 'pending', expiresAt: row.expires_at };
  }

  /** The holder records the line item it created; false when its claim was taken over meanwhile. */
  async completeLineItem(organizationId: string, resourceLinkId: string, holder: string, lineItemUrl: string): Promise<boolean> {
    const result = await this.ctx.db.run(
      `UPDATE lti_line_item_claims SET line_item_url = ? WHERE organization_id = ? AND resource_link_id = ? AND holder = ? AND line_item_url IS NULL`,
      [lineItemUrl, organizationId, resourceLinkId, holder],
    );
    return result.changes > 0;
  }

  /** The holder gives its claim up (the LMS refused): the next launch tries again. */
  async releaseLineItem(organizationId: string, resourceLinkId: string, holder: string): Promise<void> {
    await this.ctx.db.run(
      'DELETE FROM lti_line_item_claims WHERE organization_id = ? AND resource_link_id = ? AND holder = ? AND line_item_url IS NULL',
      [organizationId, resourceLinkId, holder],
    );
  }

  /** A claim's state without claiming: the created line item, pending until, or null when there is none. */
  async lineItemClaim(organizationId: string, resourceLinkId: string): Promise<{ lineItemUrl: string | null; expiresAt: number } | null> {
    const row = await this.ctx.db.get<{ line_item_url: string | null; expires_at: number }>(
      'SELECT line_item_url, expires_at FROM lti_line_item_claims WHERE organization_id = ? AND resource_link_id = ?',
      [organizationId, resourceLinkId],
    );
    return row ? { lineItemUrl: row.line_item_url, expiresAt: row.expires_at } : null;
  }

  async getDeepLink(id: string): Promise<LtiDeepLinkRecord | null> {
    const row = await this.ctx.db.get<DeepLinkRow>(`SELECT ${DEEP_LINK_COLUMNS} FROM lti_deep_links WHERE id = ? AND expires_at > ?`, [
      id,
      this.ctx.clock.nowMs(),
    ]);
    return row ? toDeepLink(row) : null;
  }

  /** Uses up a Deep Linking request: the LMS accepts one response per request. */
  async consumeDeepLink(id: string): Promise<LtiDeepLinkRecord | null> {
    const row = await this.ctx.db.get<DeepLinkRow>(
      `DELETE FROM lti_deep_links WHERE id = ? AND expires_at > ? RETURNING ${DEEP_LINK_COLUMNS}`,
      [id, this.ctx.clock.nowMs()],
    );
    return row ? toDeepLink(row) : null;
  }
}

interface DeepLinkRow {
  id: string;
  registration_id: string;
  organization_id: string;
  context_id: string;
  member_id: string;
  return_url: string | null;
  resource_link_id: string | null;
  data: string | null;
  accept_multiple: number;
  expires_at: number;
  line_item_url: string | null;
  line_items_url: string | null;
}

const DEEP_LINK_COLUMNS =
  'id, registration_id, organization_id, context_id, member_id, return_url, resource_link_id, data, accept_multiple, expires_at, line_item_url, line_items_url';

function toDeepLink(row: DeepLinkRow): LtiDeepLinkRecord {
  return {
    id: row.id,
    registrationId: row.registration_id,
    organizationId: row.organization_id,
    contextId: row.context_id,
    memberId: row.member_id,
    returnUrl: row.return_url,
    resourceLinkId: row.resource_link_id,
    data: row.data,
    acceptMultiple: bool(row.accept_multiple),
    expiresAt: row.expires_at,
    lineItemUrl: row.line_item_url,
    lineItemsUrl: row.line_items_url,
  };
}
