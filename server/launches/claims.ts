/**
 * The claims of the tokens the service sends tools, as pure functions of the records a launch (or a
 * provision or locations request) gathered and the contract the tool is pinned to (decision NS-18).
 * Each contract's shape is built claim by claim from its own schema's types, so a claim a contract does
 * not have cannot be sent to a tool pinned to it (S-16, GAP-45, GAP-46).
 */
import type { components as Components0819 } from '../../generated/2026-08-19/types.js';
import type { components as Components0825 } from '../../generated/2026-08-25/types.js';
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

export type LaunchClaims20260825 = Components0825['schemas']['LaunchClaims'];
export type ProvisionClaims20260825 = Components0825['schemas']['ProvisionClaims'];
export type LocationsClaims20260825 = Components0825['schemas']['LocationsClaims'];
export type LaunchClaims20260819 = Components0819['schemas']['LaunchClaims'];

/** What a launch sends, by the tool's pin. */
export type AnyLaunchClaims = LaunchClaims | LaunchClaims20260825 | LaunchClaims20260819;
/** 2026-08-19 has no provision or locations requests (the service sends such a tool launches only). */
export type AnyProvisionClaims = ProvisionClaims | ProvisionClaims20260825;
export type AnyLocationsClaims = LocationsClaims | LocationsClaims20260825;

export const CURRENT_CONTRACT = '2026-09-21';
/** Every contract whose tokens this module shapes. */
export const SHAPED_CONTRACTS = ['2026-09-21', '2026-08-25', '2026-08-19'] as const;

/** A token's life (decision GAP-32). */
export const TOKEN_LIFETIME_SECONDS = 300;

export class UnsupportedContractError extends Error {
  constructor(
    readonly version: string,
    message = `contract ${version} is not served by this build yet`,
  ) {
    super(message);
    this.name = 'UnsupportedContractError';
  }
}

/** The request does not exist in the tool's contract (2026-08-19 has no provision or locations requests, S-40). */
export class NoSuchRequestError extends UnsupportedContractError {
  constructor(version: string, request: 'provision' | 'locations') {
    super(version, `contract ${version} has no ${request} requests`);
    this.name = 'NoSuchRequestError';
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

/** The claims every token opens with: when, by whom, for which tool, and the API it calls back. */
function envelope<T extends string | null>(r: TokenEnvelope, appId: string, apiToken: T) {
  const iat = Math.floor(r.nowMs / 1000);
  return {
    iat,
    exp: iat + TOKEN_LIFETIME_SECONDS,
    iss: r.urls.origin,
    aud: appId,
    jti: r.jti,
    api: { domain: r.urls.apiDomain, token: apiToken },
    app: appId,
  };
}

/**
 * An older contract's claims derived from a newer shape by spreading it. A spread escapes the check for
 * claims the target lacks, so this puts it back: a claim left over that the older schema does not have
 * is a compile error, and a claim added to a newer contract cannot reach a tool pinned to an older one.
 */
function only<T>() {
  return <U extends T>(claims: U & Record<Exclude<keyof U, keyof T>, never>): T => claims;
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

/** Narrows what a launch sent to the current contract's shape (the only one with `files`). */
export function isCurrentLaunchClaims(claims: AnyLaunchClaims): claims is LaunchClaims {
  return 'files' in claims;
}

function requireShaped(version: string): void {
  if (!(SHAPED_CONTRACTS as readonly string[]).includes(version)) throw new UnsupportedContractError(version);
}

/**
 * 2026-08-19 `user.role` (S-16): the most privileged mapped group, `student` when none maps, so a member
 * with no group is treated as the student rule treats them (no personal data).
 */
export function roleOf(groups: readonly MemberGroup[]): 'student' | 'instructor' | 'assistant' | 'manager' {
  for (const role of ['manager', 'instructor', 'assistant'] as const) if (groups.includes(role)) return role;
  return 'student';
}

/** `grade_passback` (archived) and a non-null `grade.submit` (current) are true exactly together. */
function gradePassback(r: LaunchClaimRecords): boolean {
  return r.placed.entry.type === 'assessment' && r.hasLineItem;
}

export function launchClaims(r: LaunchClaimRecords, version: string): AnyLaunchClaims {
  requireShaped(version);
  if (version === '2026-08-25') return launchClaims20260825(r);
  if (version === '2026-08-19') return launchClaims20260819(r);
  return currentLaunchClaims(r);
}

function currentLaunchClaims(r: LaunchClaimRecords): LaunchClaims {
  const appId = r.app.id;
  const contextId = r.context.id;
  const locationId = r.placed.location.id;
  const storage = r.urls.rows(contextId, appId, locationId, r.memberId);
  return {
    ...envelope(r, appId, r.apiToken),
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
    grade: { submit: gradePassback(r) ? r.urls.score(contextId, appId, locationId, r.memberId) : null },
    storage,
    files: r.urls.files(storage),
    provision: {
      context: r.urls.provisionContext(contextId, appId),
      location: r.urls.provisionLocation(contextId, appId, locationId),
    },
  } satisfies LaunchClaims;
}

/** 2026-08-25: the current shape with `grade_passback` where `grade` is, and no `files`. */
function launchClaims20260825(r: LaunchClaimRecords): LaunchClaims20260825 {
  const { grade: _grade, files: _files, ...claims } = currentLaunchClaims(r);
  return only<LaunchClaims20260825>()({ ...claims, grade_passback: gradePassback(r) });
}

/**
 * 2026-08-19: the 2026-08-25 shape with `user.role` for `member` and `groups`, `resource_link_id` for
 * `resource_link`, `organization.id` for `deployment`, no `context` or `provision`, and a location with
 * `params` and no `extid`, carrying the stored location's current values because that contract's changes
 * apply at once (S-16, GAP-45). The role rule and the staff rule agree on who sees personal data.
 */
function launchClaims20260819(r: LaunchClaimRecords): LaunchClaims20260819 {
  const { context: _context, provision: _provision, location: _entry, resource_link, organization, user, ...claims } =
    launchClaims20260825(r);
  const { deployment, ...issuer } = organization;
  const { member: _member, groups: _groups, ...person } = user;
  const location = r.placed.location;
  return only<LaunchClaims20260819>()({
    ...claims,
    organization: { ...issuer, id: deployment },
    user: { ...person, role: roleOf(r.groups) },
    location: { id: location.id, type: location.type, label: location.label, params: { ...(location.params ?? {}) } },
    resource_link_id: resource_link,
  });
}

export function provisionClaims(r: ProvisionClaimRecords, version: string): AnyProvisionClaims {
  requireShaped(version);
  if (version === '2026-08-19') throw new NoSuchRequestError(version, 'provision');
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
  const claims = {
    ...envelope(r, appId, r.apiToken),
    context: contextId,
    course: courseClaim(r.context),
    organization: organizationClaim(r.organization),
    location: r.placed === null ? null : locationClaim(r.placed),
    storage,
    provision: {
      context: r.urls.provisionContext(contextId, appId),
      location: locationId === null ? null : r.urls.provisionLocation(contextId, appId, locationId),
    },
  } satisfies ProvisionClaims20260825;
  // 2026-08-25 is the current shape without `files` (no files before 2026-09-21).
  if (version === '2026-08-25') return claims;
  return {
    ...claims,
    files: { context: r.urls.filesOf(contextRow), location: locationRow === null ? null : r.urls.filesOf(locationRow) },
  } satisfies ProvisionClaims;
}

export function locationsClaims(r: LocationsClaimRecords, version: string): AnyLocationsClaims {
  requireShaped(version);
  if (version === '2026-08-19') throw new NoSuchRequestError(version, 'locations');
  // The same claims in 2026-08-25 and 2026-09-21: the request did not change between them.
  return {
    ...envelope(r, r.app.id, null),
    context: r.contextId,
    organization: organizationClaim(r.organization),
    user: {
      id: r.user?.id ?? null,
      member: r.memberId,
      groups: r.groups === null ? null : [...r.groups],
      ...personalData(r.user, r.groups),
    },
  } satisfies LocationsClaims & LocationsClaims20260825;
}
