/**
 * Who the Sandbox LMS is: one Sandbox school per tool (decision S-12), whose LTI issuer is the Sandbox
 * LMS at the service's own origin and whose client is `sandbox-<app_id>`. The service is that school's
 * only tool-side client: it signs its client assertions with its own keys, and the Sandbox LMS trusts
 * the service's JWKS.
 */
import type { OrganizationRecord, Repositories } from '../store/index.js';

export const SANDBOX_LMS_PATH = '/sandbox-lms';

// LTI's own words live in `server/lti/vocabulary.ts`; named here as the S-12 code and its tests know them.
export { AGS_MEDIA_TYPES, AGS_SCOPE as AGS_SCOPES } from '../lti/vocabulary.js';

/** Access tokens of the Sandbox LMS live an hour (decision S-12). */
export const SANDBOX_LMS_TOKEN_TTL_SECONDS = 3600;
export { MAX_ASSERTION_LIFETIME_SECONDS } from '../lti/vocabulary.js';

function origin(publicUrl: string): string {
  return new URL(publicUrl).origin;
}

/** The LTI issuer of every Sandbox school, e.g. `https://tis.example.edu/sandbox-lms`. */
export function sandboxIssuer(publicUrl: string): string {
  return `${origin(publicUrl)}${SANDBOX_LMS_PATH}`;
}

/** The token endpoint's URL: the `aud` a client assertion must carry. */
export function sandboxTokenUrl(publicUrl: string): string {
  return `${sandboxIssuer(publicUrl)}/token`;
}

export function sandboxClientId(appId: string): string {
  return `sandbox-${appId}`;
}

export function sandboxLineItemsUrl(publicUrl: string, contextId: string): string {
  return `${sandboxIssuer(publicUrl)}/contexts/${encodeURIComponent(contextId)}/lineitems`;
}

/** A line item's LTI `id`: its URL. */
export function sandboxLineItemUrl(publicUrl: string, contextId: string, lineItemId: string): string {
  return `${sandboxLineItemsUrl(publicUrl, contextId)}/${encodeURIComponent(lineItemId)}`;
}

export function isSandboxSchool(organization: Pick<OrganizationRecord, 'issuer'>, publicUrl: string): boolean {
  return organization.issuer === sandboxIssuer(publicUrl);
}

/**
 * The tool's Sandbox school, created on first need. Its deployment is its client ID: one school, one
 * deployment, per tool.
 */
export async function ensureSandboxSchool(
  repos: Pick<Repositories, 'organizations'>,
  appId: string,
  publicUrl: string,
  title = 'Sandbox',
): Promise<OrganizationRecord> {
  const client = sandboxClientId(appId);
  const existing = await repos.organizations.find(sandboxIssuer(publicUrl), client, client);
  if (existing) return existing;
  return repos.organizations.upsert({ issuer: sandboxIssuer(publicUrl), client, deployment: client, title });
}

/**
 * `PUT /dashboard/v1/apps/{app_id}/sandbox/school` (`server/dashboard/sandbox.ts`): whether the school grants
 * the line-item scope. Takes effect for the next token; tokens already issued keep their scopes.
 */
export async function setSandboxSchoolGrantsLineItemScope(
  repos: Pick<Repositories, 'organizations'>,
  appId: string,
  publicUrl: string,
  grants: boolean,
): Promise<{ grants_line_item_scope: boolean }> {
  const school = await ensureSandboxSchool(repos, appId, publicUrl);
  const updated = await repos.organizations.setGrantsLineItemScope(school.id, grants);
  return { grants_line_item_scope: updated?.grantsLineItemScope ?? grants };
}

export async function getSandboxSchool(
  repos: Pick<Repositories, 'organizations'>,
  appId: string,
  publicUrl: string,
): Promise<{ grants_line_item_scope: boolean }> {
  const school = await ensureSandboxSchool(repos, appId, publicUrl);
  return { grants_line_item_scope: school.grantsLineItemScope };
}
