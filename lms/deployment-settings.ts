/**
 * A deployment's own settings (decisions LTI-71, LTI-72): token lifetimes and the line-item scope, each
 * either the deployment's own or, when it has none, the LMS-wide one (the settings for lifetimes, the
 * registration's developer key for the scope). A school's administrator sets them for that school only.
 *
 * Where each is applied: a launch names its deployment, so its launch URL and id_token live that
 * deployment's lifetimes and its AGS claim offers that deployment's scopes. A client_credentials token
 * request names no deployment (it is the client's), so the token endpoint grants a line-item scope that
 * the registration or any of its deployments grants, and the deployment's own rules are applied when the
 * token is used: every AGS URL is a course's, and a course is one deployment's, so a token used on a course
 * is refused (401, expired) once it is older than that deployment's access-token lifetime, and its
 * line-item scopes count only where that deployment grants them (403 `insufficient_scope` otherwise).
 */
import { LmsError } from './http.js';
import type { LmsSettings, Platform } from './platform.js';
import { LINE_ITEM_SCOPES, settingsOf } from './platform.js';
import type { DeploymentRow, LmsDb, RegistrationRow } from './store.js';
import { deploymentOf, registrationOf } from './store.js';

export const LIFETIMES = ['access_token_ttl_seconds', 'id_token_ttl_seconds', 'launch_ttl_seconds'] as const;
export type Lifetime = (typeof LIFETIMES)[number];

/** What a deployment sets itself; null: the LMS-wide value applies. */
export type DeploymentOverrides = { [K in Lifetime]: number | null } & { grants_line_item_scope: boolean | null };

export type EffectiveSettings = Pick<LmsSettings, Lifetime> & { grants_line_item_scope: boolean };

export const NO_OVERRIDES: Readonly<DeploymentOverrides> = {
  access_token_ttl_seconds: null,
  id_token_ttl_seconds: null,
  launch_ttl_seconds: null,
  grants_line_item_scope: null,
};

/** Read at each use, never cached: another process sharing the store may have changed them (LTI-80). */
export async function overridesOf(db: LmsDb, deploymentId: string): Promise<DeploymentOverrides> {
  const row = await db.get<{ settings: string }>('SELECT settings FROM lms_deployment_settings WHERE deployment_id = ?', [deploymentId]);
  return overridesFrom(row?.settings ?? null);
}

/** A deployment's overrides from their stored JSON (`lms_deployment_settings.settings`), or none. */
export function overridesFrom(raw: string | null): DeploymentOverrides {
  return raw ? { ...NO_OVERRIDES, ...(JSON.parse(raw) as Partial<DeploymentOverrides>) } : { ...NO_OVERRIDES };
}

export function effectiveOf(settings: LmsSettings, registration: Pick<RegistrationRow, 'grants_line_item_scope'>, own: DeploymentOverrides): EffectiveSettings {
  return {
    access_token_ttl_seconds: own.access_token_ttl_seconds ?? settings.access_token_ttl_seconds,
    id_token_ttl_seconds: own.id_token_ttl_seconds ?? settings.id_token_ttl_seconds,
    launch_ttl_seconds: own.launch_ttl_seconds ?? settings.launch_ttl_seconds,
    grants_line_item_scope: own.grants_line_item_scope ?? registration.grants_line_item_scope === 1,
  };
}

/** The settings that apply in a deployment now; a deployment the LMS does not know has the LMS-wide ones. */
export async function effectiveSettings(platform: Platform, deploymentId: string): Promise<EffectiveSettings> {
  const settings = await settingsOf(platform);
  const deployment = await deploymentOf(platform.db, deploymentId);
  const registration = deployment ? await registrationOf(platform.db, deployment.client_id) : null;
  return effectiveOf(settings, registration ?? { grants_line_item_scope: 1 }, deployment ? await overridesOf(platform.db, deploymentId) : { ...NO_OVERRIDES });
}

/**
 * The scopes that count in a deployment: of `scopes` (the registration's, or a token's), the line-item
 * ones only where the deployment grants them.
 */
export function scopesIn(effective: Pick<EffectiveSettings, 'grants_line_item_scope'>, scopes: readonly string[]): string[] {
  return scopes.filter((s) => effective.grants_line_item_scope || !LINE_ITEM_SCOPES.includes(s));
}

/** Whether any deployment of the client grants the line-item scope of its own (the token endpoint's question). */
export async function anyDeploymentGrantsLineItems(db: LmsDb, clientId: string): Promise<boolean> {
  for (const row of await db.all<{ settings: string }>(
    'SELECT s.settings FROM lms_deployment_settings s JOIN lms_deployments d ON d.deployment_id = s.deployment_id WHERE d.client_id = ?',
    [clientId],
  )) {
    if ((JSON.parse(row.settings) as Partial<DeploymentOverrides>).grants_line_item_scope === true) return true;
  }
  return false;
}

/** The longest access-token lifetime any deployment of the client has of its own (null: none has one). */
export async function longestOwnAccessLifetime(db: LmsDb, clientId: string): Promise<number | null> {
  let longest: number | null = null;
  for (const row of await db.all<{ settings: string }>(
    'SELECT s.settings FROM lms_deployment_settings s JOIN lms_deployments d ON d.deployment_id = s.deployment_id WHERE d.client_id = ?',
    [clientId],
  )) {
    const own = (JSON.parse(row.settings) as Partial<DeploymentOverrides>).access_token_ttl_seconds;
    if (typeof own === 'number') longest = Math.max(longest ?? 0, own);
  }
  return longest;
}

async function requireDeployment(platform: Platform, deploymentId: string): Promise<DeploymentRow> {
  const deployment = await deploymentOf(platform.db, deploymentId);
  if (!deployment) throw new LmsError(404, 'not_found', `deployment ${deploymentId} not found`);
  return deployment;
}

export async function deploymentSettingsJson(platform: Platform, deploymentId: string): Promise<Record<string, unknown>> {
  const deployment = await requireDeployment(platform, deploymentId);
  const registration = await registrationOf(platform.db, deployment.client_id);
  const own = await overridesOf(platform.db, deploymentId);
  return {
    deployment_id: deployment.deployment_id,
    client_id: deployment.client_id,
    own,
    effective: effectiveOf(await settingsOf(platform), registration ?? { grants_line_item_scope: 1 }, own),
  };
}

/**
 * Sets the fields the body names: an integer from 1 to 86400 (a lifetime) or a boolean (the scope) is the
 * deployment's own, null hands the field back to the LMS-wide value; fields not named stay as they are.
 * `reset` clears them all.
 */
export async function putDeploymentSettings(platform: Platform, deploymentId: string, body: Record<string, unknown> | 'reset'): Promise<Record<string, unknown>> {
  await requireDeployment(platform, deploymentId);
  const patch = body === 'reset' ? { ...NO_OVERRIDES } : parsePatch(body);
  // Read and written under the row's lock (PostgreSQL) or the one writer (SQLite): two administrators
  // changing different fields at once lose neither.
  await platform.db.transaction(async (tx) => {
    await tx.run('INSERT INTO lms_deployment_settings (deployment_id, settings) VALUES (?, ?) ON CONFLICT (deployment_id) DO NOTHING', [deploymentId, '{}']);
    const row = await tx.get<{ settings: string }>(
      `SELECT settings FROM lms_deployment_settings WHERE deployment_id = ?${tx.dialect === 'postgres' ? ' FOR UPDATE' : ''}`,
      [deploymentId],
    );
    const next = { ...NO_OVERRIDES, ...(JSON.parse(row?.settings ?? '{}') as Partial<DeploymentOverrides>), ...patch };
    await tx.run('UPDATE lms_deployment_settings SET settings = ? WHERE deployment_id = ?', [JSON.stringify(next), deploymentId]);
  });
  return deploymentSettingsJson(platform, deploymentId);
}

function parsePatch(body: Record<string, unknown>): Partial<DeploymentOverrides> {
  const known = new Set<string>([...LIFETIMES, 'grants_line_item_scope']);
  const unknown = Object.keys(body).find((k) => !known.has(k));
  if (unknown !== undefined) throw new LmsError(400, 'invalid_request', `${unknown} is not a deployment setting`);
  const patch: Partial<DeploymentOverrides> = {};
  for (const name of LIFETIMES) {
    const value = body[name];
    if (value === undefined) continue;
    if (value !== null && (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 86_400)) {
      throw new LmsError(400, 'invalid_request', `${name} must be an integer from 1 to 86400, or null`);
    }
    patch[name] = value;
  }
  const scope = body['grants_line_item_scope'];
  if (scope !== undefined) {
    if (scope !== null && typeof scope !== 'boolean') throw new LmsError(400, 'invalid_request', 'grants_line_item_scope must be a boolean, or null');
    patch.grants_line_item_scope = scope;
  }
  return patch;
}
