/**
 * The claims of the tokens the service sends tools, as pure functions of the records a launch (or a
 * provision or locations request) gathered and the contract the tool is pinned to (decision NS-18).
 * Only the current contract's shapes exist yet; the archived ones are added here, beside them.
 */
import type { components } from '../../generated/2026-09-21/types.js';
import type {
  AppRecord,
  ContextRecord,
  LocationRecord,
  MemberGroup,
  OrganizationRecord,
  PlacementEntry,
  UserRecord,
} from '../store/index.js';
import { isStaff } from './groups.js';
import type { ServiceUrls } from './urls.js';

export type LaunchClaims = components['schemas']['LaunchClaims'];
export type ProvisionClaims = components['schemas']['ProvisionClaims'];
export type LocationsClaims = components['schemas']['LocationsClaims'];

export const CURRENT_CONTRACT = '2026-09-21';

/** A token's life (decision GAP-32). */
export const TOKEN_LIFETIME_SECONDS = 300;

export class UnsupportedContractError extends Error {
  constructor(readonly version: string) {
    super(`contract ${version} is not served by this build yet`);
    this.name = 'UnsupportedContractError';
  }
}

/** What every token shares: when, by whom, for whom. */
export interface TokenEnvelope {
  nowMs: number;
  jti: string;
  urls: ServiceUrls;
}

export interface PlacedLocation {
  location: LocationRecord;
  /** The copy of the entry captured at placement (the launch carries it, not the current list). */
  entry: PlacementEntry;
}

export interface LaunchClaimRecords extends TokenEnvelope {
  app: AppRecord;
  organization: OrganizationRecord;
  context: ContextRecord;
  user: UserRecord;
  memberId: string;
  groups: readonly MemberGroup[];
  launchId: string;
  placed: PlacedLocation;
  resourceLink: string;
  /** The placement has a gradebook column. */
  hasLineItem: boolean;
  apiToken: string;
}

export interface ProvisionClaimRecords extends TokenEnvelope {
  app: AppRecord;
  organization: OrganizationRecord;
  context: ContextRecord;
  /** null for a course-level request. */
  placed: PlacedLocation | null;
  apiToken: string;
}

export interface LocationsClaimRecords extends TokenEnvelope {
  app: AppRecord;
  organization: OrganizationRecord;
  contextId: string;
  /** Unknown when the picker was reached without a known person (every user field is then null). */
  user: UserRecord | null;
  memberId: string | null;
  groups: readonly MemberGroup[] | null;
}

function times(nowMs: number): { iat: number; exp: number } {
  const iat = Math.floor(nowMs / 1000);
  return { iat, exp: iat + TOKEN_LIFETIME_SECONDS };
}

function organizationClaim(org: OrganizationRecord): LaunchClaims['organization'] {
  return { title: org.title, issuer: org.issuer, client: org.client, deployment: org.deployment };
}

function courseClaim(context: ContextRecord): LaunchClaims['course'] {
  return { name: context.name, label: context.label };
}

function locationClaim(placed: PlacedLocation): LaunchClaims['location'] {
  return {
    id: placed.location.id,
    // 2026-08-19 stored locations can lack an extid; the current claim requires one, and the ID is stable.
    extid: placed.entry.extid ?? placed.location.extid ?? placed.location.id,
    type: placed.entry.type,
    label: placed.entry.label,
  };
}

/** Staff see names and email; a student launch carries no personal data (contract, Launch claims). */
function personalData(user: UserRecord | null, groups: readonly string[] | null) {
  const show = user !== null && groups !== null && isStaff(groups);
  return {
    given_name: show ? user.givenName : null,
    family_name: show ? user.familyName : null,
    full_name: show ? user.fullName : null,
    email: show ? user.email : null,
  };
}

function requireCurrent(version: string): void {
  if (version !== CURRENT_CONTRACT) throw new UnsupportedContractError(version);
}

export function launchClaims(r: LaunchClaimRecords, version: string): LaunchClaims {
  requireCurrent(version);
  const appId = r.app.id;
  const contextId = r.context.id;
  const locationId = r.placed.location.id;
  const storage = r.urls.rows(contextId, appId, locationId, r.memberId);
  const assessment = r.placed.entry.type === 'assessment';
  return {
    ...times(r.nowMs),
    iss: r.urls.origin,
    aud: appId,
    jti: r.jti,
    api: { domain: r.urls.apiDomain, token: r.apiToken },
    app: appId,
    context: contextId,
    course: courseClaim(r.context),
    organization: organizationClaim(r.organization),
    user: {
      id: r.user.id,
      member: r.memberId,
      groups: [...r.groups],
      ...personalData(r.user, r.groups),
    },
    launch_id: r.launchId,
    location: locationClaim(r.placed),
    resource_link: r.resourceLink,
    grade: { submit: assessment && r.hasLineItem ? r.urls.score(contextId, appId, locationId, r.memberId) : null },
    storage,
    files: r.urls.files(storage),
    provision: {
      context: r.urls.provisionContext(contextId, appId),
      location: r.urls.provisionLocation(contextId, appId, locationId),
    },
  };
}

export function provisionClaims(r: ProvisionClaimRecords, version: string): ProvisionClaims {
  requireCurrent(version);
  const appId = r.app.id;
  const contextId = r.context.id;
  const locationId = r.placed?.location.id ?? null;
  const contextRow = r.urls.contextRow(contextId, appId);
  const locationRow = locationId === null ? null : r.urls.locationRow(contextId, appId, locationId);
  const parent = r.context.parentContextId;
  const storage: ProvisionClaims['storage'] = { context: contextRow, location: locationRow };
  if (parent !== null) {
    storage.parent_context = r.urls.contextRow(parent, appId);
    if (locationId !== null) storage.parent_location = r.urls.locationRow(parent, appId, locationId);
  }
  return {
    ...times(r.nowMs),
    iss: r.urls.origin,
    aud: appId,
    jti: r.jti,
    api: { domain: r.urls.apiDomain, token: r.apiToken },
    app: appId,
    context: contextId,
    course: courseClaim(r.context),
    organization: organizationClaim(r.organization),
    location: r.placed === null ? null : locationClaim(r.placed),
    storage,
    files: { context: r.urls.filesOf(contextRow), location: locationRow === null ? null : r.urls.filesOf(locationRow) },
    provision: {
      context: r.urls.provisionContext(contextId, appId),
      location: locationId === null ? null : r.urls.provisionLocation(contextId, appId, locationId),
    },
  };
}

export function locationsClaims(r: LocationsClaimRecords, version: string): LocationsClaims {
  requireCurrent(version);
  return {
    ...times(r.nowMs),
    iss: r.urls.origin,
    aud: r.app.id,
    jti: r.jti,
    api: { domain: r.urls.apiDomain, token: null },
    app: r.app.id,
    context: r.contextId,
    organization: organizationClaim(r.organization),
    user: {
      id: r.user?.id ?? null,
      member: r.memberId,
      groups: r.groups === null ? null : [...r.groups],
      ...personalData(r.user, r.groups),
    },
  };
}
