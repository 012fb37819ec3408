/**
 * What a verified id_token says about the school, the course and the person (decisions LTI-10 to LTI-13),
 * recorded as the contract's organization, context, user and member; and, for a resource link, the
 * placement it opens. The launch itself then ends where every launch ends: a launch ticket and the launch
 * page (`server/launch-page/`), which checks the tool's state, provisions and POSTs to the tool.
 */
import { groupsFromLmsRoles, isStaff } from '../launches/groups.js';
import type { Services } from '../http/services.js';
import type { ContextRecord, MemberRecord, OrganizationRecord, PlacementRecord, UserRecord } from '../store/index.js';
import type { VerifiedLaunch } from './id-token.js';
import type { LtiRefusal } from './refusals.js';
import { refuse } from './refusals.js';
import { agsUrlsOf, withLinkColumn } from './line-items.js';
import { CLAIMS, PLACEMENT_PARAMETER } from './vocabulary.js';

export interface LaunchParties {
  organization: OrganizationRecord;
  context: ContextRecord;
  user: UserRecord;
  member: MemberRecord;
  staff: boolean;
}

function objectClaim(claims: Record<string, unknown>, name: string): Record<string, unknown> | null {
  const value = claims[name];
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value.trim() !== '' ? value : null;
}

/** The launch's custom parameters, strings only. */
export function customOf(claims: Record<string, unknown>): Record<string, string> {
  const custom = objectClaim(claims, CLAIMS.custom) ?? {};
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(custom)) if (typeof value === 'string') out[name] = value;
  return out;
}

/** Course IDs a course was copied from, nearest first; unsubstituted variables (`$…`) are ignored (LTI-12). */
export function contextHistory(custom: Record<string, string>): string[] {
  const ids: string[] = [];
  for (const name of ['context_history', 'canvas_previous_context_ids']) {
    const value = custom[name];
    if (value === undefined || value.trim().startsWith('$')) continue;
    for (const id of value.split(',')) {
      const trimmed = id.trim();
      if (trimmed !== '' && !ids.includes(trimmed)) ids.push(trimmed);
    }
  }
  return ids;
}

/** Records school, course, person and membership from a verified launch. */
export async function recordParties(services: Services, launch: VerifiedLaunch): Promise<{ ok: true; parties: LaunchParties } | { ok: false; refusal: LtiRefusal }> {
  const { claims, registration, deploymentId } = launch;
  const sub = text(claims.sub);
  if (sub === null) return { ok: false, refusal: refuse(400, 'anonymous', 'launch without sub (anonymous launches are not served)') };
  const contextClaim = objectClaim(claims, CLAIMS.context);
  const contextId = contextClaim ? text(contextClaim['id']) : null;
  if (!contextClaim || contextId === null) return { ok: false, refusal: refuse(400, 'no_context', 'launch without context') };
  const platform = objectClaim(claims, CLAIMS.toolPlatform);
  const title = (platform && text(platform['name'])) ?? registration.title;
  const label = text(contextClaim['label']);
  const name = text(contextClaim['title']) ?? label ?? contextId;
  const roles = Array.isArray(claims[CLAIMS.roles]) ? (claims[CLAIMS.roles] as unknown[]).filter((r): r is string => typeof r === 'string') : [];
  const groups = groupsFromLmsRoles(roles);
  const history = contextHistory(customOf(claims));

  const newDeployment = await services.store.lti.addDeployment(registration.id, deploymentId);
  const parties = await services.store.transaction(async (tx) => {
    const organization = await tx.organizations.upsert({ issuer: registration.issuer, client: registration.clientId, deployment: deploymentId, title });
    const seen = await tx.contexts.findByExternal(organization.id, contextId);
    let context = await tx.contexts.upsert({ organizationId: organization.id, externalId: contextId, name, label });
    if (!seen && context.parentContextId === null) {
      for (const previous of history) {
        const parent = previous === contextId ? null : await tx.contexts.findByExternal(organization.id, previous);
        if (parent) {
          context = (await tx.contexts.setParentIfUnset(context.id, parent.id)) ?? context;
          break;
        }
      }
    }
    const user = await tx.users.upsert({
      organizationId: organization.id,
      externalId: sub,
      ...(text(claims['given_name']) !== null ? { givenName: text(claims['given_name']) } : {}),
      ...(text(claims['family_name']) !== null ? { familyName: text(claims['family_name']) } : {}),
      ...(text(claims['name']) !== null ? { fullName: text(claims['name']) } : {}),
      ...(text(claims['email']) !== null ? { email: text(claims['email']) } : {}),
    });
    const member = await tx.members.upsert({ contextId: context.id, userId: user.id, groups });
    return { organization, context, user, member, staff: isStaff(groups) };
  });
  if (newDeployment) {
    services.log.info('lti deployment seen for the first time: a new school', { registration: registration.id, organization: parties.organization.id });
  }
  return { ok: true, parties };
}

export type PlacementLookup =
  | { kind: 'found'; placement: PlacementRecord }
  /** No placement claims this resource link yet. */
  | { kind: 'unknown'; resourceLinkId: string };

/**
 * The placement a resource link opens (LTI-13): a link already bound; else the `tis_placement` custom
 * parameter of a Deep Linking item, in this course or (a course copy) in another course of the school,
 * from which the same location is placed here; else unknown.
 */
export async function placementFor(services: Services, launch: VerifiedLaunch, parties: LaunchParties): Promise<PlacementLookup | { kind: 'refused'; refusal: LtiRefusal }> {
  const link = objectClaim(launch.claims, CLAIMS.resourceLink);
  const resourceLinkId = link ? text(link['id']) : null;
  if (resourceLinkId === null) return { kind: 'refused', refusal: refuse(400, 'no_resource_link', 'resource link launch without resource_link.id') };
  const { organization, context } = parties;
  const bound = await services.store.lti.findResourceLink(organization.id, resourceLinkId);
  let placement = bound ? await services.store.placements.get(bound) : null;
  if (!placement) {
    const named = customOf(launch.claims)[PLACEMENT_PARAMETER];
    const source = named ? await services.store.placements.findByResourceLink(named) : null;
    const sourceContext = source ? await services.store.contexts.get(source.contextId) : null;
    if (source && sourceContext && sourceContext.organizationId === organization.id) {
      if (source.contextId === context.id) {
        placement = source;
      } else {
        // A course copy: the copied link names a placement of the course it was copied from.
        await services.store.contexts.setParentIfUnset(context.id, sourceContext.id);
        placement = await copyPlacement(services, source, context.id);
      }
    }
    if (!placement) return { kind: 'unknown', resourceLinkId };
    const winner = await services.store.lti.bindResourceLink(organization.id, resourceLinkId, placement.id);
    if (winner !== placement.id) placement = (await services.store.placements.get(winner)) ?? placement;
  }
  const ags = agsUrlsOf(launch.claims);
  placement = await withLinkColumn(services, { registration: launch.registration, organizationId: organization.id, resourceLinkId, ...ags }, placement);
  return { kind: 'found', placement };
}

async function copyPlacement(services: Services, source: PlacementRecord, contextId: string): Promise<PlacementRecord | null> {
  const app = await services.store.apps.get(source.appId);
  const context = await services.store.contexts.get(contextId);
  const location = await services.store.locations.get(source.locationId);
  if (!app || !context || !location) return null;
  // The copy is placed even for a tool that is not available now: the launch page then says so.
  const placement = await services.launches.place({
    appId: app.id,
    contextId: context.id,
    locationId: location.id,
    entry: source.entry,
  });
  return placement;
}
