/**
 * The launch service: records what a launch reveals and produces the tokens the service sends tools.
 * The service is never told about schools, courses or people ahead of time, so a launch is where they
 * appear: an unseen deployment is a new school, an unseen `resource_link` a new placement, and the
 * member's rows are open from the first launch. Delivering the launch to the tool's browser (tickets,
 * launch page) and sending provision/locations requests build on this (issue 4).
 */
import { randomUUID } from 'node:crypto';
import type {
  ApiTokenRecord,
  AppRecord,
  Clock,
  ContextRecord,
  LaunchRecord,
  LocationRecord,
  MemberGroup,
  MemberRecord,
  OrganizationRecord,
  PlacementEntry,
  PlacementRecord,
  Repositories,
  Store,
  UserRecord,
} from '../store/index.js';
import type { Signer } from '../signing/signer.js';
import type { AnyLaunchClaims, AnyLocationsClaims, AnyProvisionClaims, PlacedLocation } from './claims.js';
import { launchClaims, locationsClaims, provisionClaims } from './claims.js';
import { groupsFromLmsRoles } from './groups.js';
import { ServiceUrls } from './urls.js';

export interface OrganizationInput {
  issuer: string;
  client: string;
  deployment: string;
  title: string;
  /** Whether the school's LMS key grants the line-item scope; kept as is for a school already seen. */
  grantsLineItemScope?: boolean;
}

export type CourseInput =
  | { externalId: string; name: string; label?: string | null }
  /** A course the service already knows (Sandbox trial course, copy). */
  | { contextId: string };

export interface PersonInput {
  /** The LMS's identifier of the person at this school; never handed to a tool. */
  externalId: string;
  givenName?: string | null;
  familyName?: string | null;
  fullName?: string | null;
  email?: string | null;
  /** LMS roles (LTI role URIs or short names), mapped by NS-07; or `groups` directly. */
  roles?: readonly string[];
  groups?: readonly MemberGroup[];
}

export interface PlacementInput {
  appId: string;
  locationId: string;
  /** One instructor's one link; an unseen value creates the placement. */
  resourceLink: string;
  /** The entry copy for a new placement; defaults to the location's current values. */
  entry?: PlacementEntry;
}

export interface PlaceInput extends Omit<PlacementInput, 'resourceLink'> {
  contextId: string;
  /** Defaults to a fresh opaque value (NS-04). */
  resourceLink?: string;
}

export interface LaunchInput {
  organization: OrganizationInput;
  course: CourseInput;
  user: PersonInput;
  placement: PlacementInput;
  /** Dashboard trial launch (archived `POST /grades` treats it specially, GAP-43). */
  trial?: boolean;
  /** Claims shape; defaults to the tool's pinned contract (NS-18). */
  contractVersion?: string;
  /**
   * False when the school's LMS takes no scores from the service (its registration lacks the AGS score
   * scope): the launch then has no gradebook column, whatever the placement holds (LTI-121).
   */
  scoresAccepted?: boolean;
}

export interface LaunchOutcome {
  /** Shaped by the tool's pinned contract (or `contractVersion`), claim by claim. */
  claims: AnyLaunchClaims;
  /** The signed `launch_data` JWT. */
  token: string;
  /** The opaque `api.token` (only here; the store keeps its digest). */
  apiToken: string;
  apiTokenRecord: ApiTokenRecord;
  launch: LaunchRecord;
  app: AppRecord;
  organization: OrganizationRecord;
  context: ContextRecord;
  user: UserRecord;
  member: MemberRecord;
  location: LocationRecord;
  placement: PlacementRecord;
  newOrganization: boolean;
  newPlacement: boolean;
}

export interface ProvisionRequestInput {
  appId: string;
  contextId: string;
  /** Location level when set; course level otherwise. */
  locationId?: string | null;
  /** The placement's entry copy; defaults to the location's current values. */
  entry?: PlacementEntry;
  contractVersion?: string;
}

export interface ProvisionRequestOutcome {
  claims: AnyProvisionClaims;
  token: string;
  apiToken: string;
  apiTokenRecord: ApiTokenRecord;
}

export interface LocationsRequestInput {
  appId: string;
  contextId: string;
  /** The instructor, when known. */
  memberId?: string | null;
  contractVersion?: string;
}

/**
 * Whether a tool pinned to `version` is ever sent this request (S-40): 2026-08-19 has neither, so asking
 * for one is a `NoSuchRequestError`. Callers decide from this instead of catching that error.
 */
export function pinHasRequest(version: string, request: 'provision' | 'locations'): boolean {
  return !PINS_WITHOUT[request].includes(version);
}

const PINS_WITHOUT: Readonly<Record<'provision' | 'locations', readonly string[]>> = {
  provision: ['2026-08-19'],
  locations: ['2026-08-19'],
};

/**
 * 2026-08-19: "deleting a placed location breaks those placements" (H-10). Its placements launch the stored
 * location's current values (S-16), so once the location is deleted they have nothing to launch. Later
 * contracts launch the copy taken at placement, which a deletion does not touch.
 */
export function placementBroken(app: Pick<AppRecord, 'contractVersion'>, location: Pick<LocationRecord, 'deletedAt'>): boolean {
  return app.contractVersion === '2026-08-19' && location.deletedAt !== null;
}

export const LOCATION_DELETED_MESSAGE = (locationId: string): string =>
  `location ${locationId} was deleted by the tool; its placements no longer launch`;

export class LaunchError extends Error {
  constructor(
    readonly reason:
      | 'unknown_app'
      | 'unknown_context'
      | 'unknown_location'
      | 'unknown_member'
      | 'resource_link_taken'
      | 'location_deleted',
    message: string,
  ) {
    super(message);
    this.name = 'LaunchError';
  }
}

export interface LaunchServiceOptions {
  store: Store;
  signer: Signer;
  publicUrl: string;
  /** `api.token` lifetime of a launch (NS-14). */
  apiTokenTtlSeconds: number;
  clock?: Clock;
}

function entryOf(location: LocationRecord): PlacementEntry {
  return {
    extid: location.extid,
    type: location.type,
    label: location.label,
    description: location.description,
    points: location.points,
  };
}

export class LaunchService {
  readonly urls: ServiceUrls;
  private readonly store: Store;
  private readonly signer: Signer;
  private readonly clock: Clock;
  private readonly apiTokenTtlSeconds: number;

  constructor(options: LaunchServiceOptions) {
    this.store = options.store;
    this.signer = options.signer;
    this.urls = new ServiceUrls(options.publicUrl);
    this.clock = options.clock ?? { nowMs: () => Date.now() };
    this.apiTokenTtlSeconds = options.apiTokenTtlSeconds;
  }

  /** Records the launch and returns its claims, signed token and `api.token`. */
  async launch(input: LaunchInput): Promise<LaunchOutcome> {
    const recorded = await this.store.transaction(async (tx) => {
      const app = await tx.apps.get(input.placement.appId);
      if (!app) throw new LaunchError('unknown_app', `no tool ${input.placement.appId}`);
      const existingOrg = await tx.organizations.find(
        input.organization.issuer,
        input.organization.client,
        input.organization.deployment,
      );
      const organization = await tx.organizations.upsert(
        existingOrg
          ? { ...input.organization, grantsLineItemScope: existingOrg.grantsLineItemScope }
          : input.organization,
      );
      const context = await this.course(tx, organization, input.course);
      const user = await tx.users.upsert({
        organizationId: organization.id,
        externalId: input.user.externalId,
        givenName: input.user.givenName ?? null,
        familyName: input.user.familyName ?? null,
        fullName: input.user.fullName ?? null,
        email: input.user.email ?? null,
      });
      const groups = input.user.groups ? [...input.user.groups] : groupsFromLmsRoles(input.user.roles ?? []);
      const member = await tx.members.upsert({ contextId: context.id, userId: user.id, groups });
      const location = await tx.locations.get(input.placement.locationId);
      if (!location || location.appId !== app.id) {
        throw new LaunchError('unknown_location', `tool ${app.id} has no location ${input.placement.locationId}`);
      }
      if (placementBroken(app, location)) {
        throw new LaunchError('location_deleted', LOCATION_DELETED_MESSAGE(location.id));
      }
      const { placement, created } = await this.placement(tx, app, context, location, input.placement);
      const hasLineItem = placement.lineItemId !== null && input.scoresAccepted !== false;
      const launch = await tx.launches.create({
        appId: app.id,
        placementId: placement.id,
        contextId: context.id,
        locationId: location.id,
        memberId: member.id,
        gradePassback: hasLineItem && placement.entry.type === 'assessment',
        trial: input.trial ?? false,
      });
      const issued = await tx.apiTokens.issue({
        kind: 'launch',
        appId: app.id,
        contextId: context.id,
        userId: user.id,
        memberId: member.id,
        locationId: location.id,
        launchId: launch.id,
        ttlSeconds: this.apiTokenTtlSeconds,
      });
      return {
        app,
        organization,
        newOrganization: existingOrg === null,
        context,
        user,
        member,
        location,
        placement,
        newPlacement: created,
        launch,
        issued,
      };
    });
    const claims = launchClaims(
      {
        nowMs: this.clock.nowMs(),
        jti: randomUUID(),
        urls: this.urls,
        app: recorded.app,
        organization: recorded.organization,
        context: recorded.context,
        user: recorded.user,
        memberId: recorded.member.id,
        groups: recorded.member.groups,
        launchId: recorded.launch.id,
        placed: { location: recorded.location, entry: recorded.placement.entry },
        resourceLink: recorded.placement.resourceLink,
        hasLineItem: recorded.launch.gradePassback,
        apiToken: recorded.issued.token,
      },
      input.contractVersion ?? recorded.app.contractVersion,
    );
    const token = await this.signer.sign(claims);
    return {
      claims,
      token,
      apiToken: recorded.issued.token,
      apiTokenRecord: recorded.issued.record,
      launch: recorded.launch,
      app: recorded.app,
      organization: recorded.organization,
      context: recorded.context,
      user: recorded.user,
      member: recorded.member,
      location: recorded.location,
      placement: recorded.placement,
      newOrganization: recorded.newOrganization,
      newPlacement: recorded.newPlacement,
    };
  }

  /**
   * The claims and token of a provision request, with its provision token: a course-level request names
   * the context level; a location-level one names both levels, whose URLs its claims carry (NS-06).
   */
  async provisionRequest(input: ProvisionRequestInput): Promise<ProvisionRequestOutcome> {
    const app = await this.store.apps.get(input.appId);
    if (!app) throw new LaunchError('unknown_app', `no tool ${input.appId}`);
    const context = await this.store.contexts.get(input.contextId);
    if (!context) throw new LaunchError('unknown_context', `no context ${input.contextId}`);
    const organization = await this.store.organizations.get(context.organizationId);
    if (!organization) throw new LaunchError('unknown_context', `context ${context.id} has no organization`);
    let placed: PlacedLocation | null = null;
    if (input.locationId !== undefined && input.locationId !== null) {
      const location = await this.store.locations.get(input.locationId);
      if (!location || location.appId !== app.id) {
        throw new LaunchError('unknown_location', `tool ${app.id} has no location ${input.locationId}`);
      }
      placed = { location, entry: input.entry ?? entryOf(location) };
    }
    const issued = await this.store.apiTokens.issue({
      kind: 'provision',
      appId: app.id,
      contextId: context.id,
      locationId: placed?.location.id ?? null,
      parentContextId: context.parentContextId,
      provisionLevels: placed ? ['context', 'location'] : ['context'],
    });
    const claims = provisionClaims(
      {
        nowMs: this.clock.nowMs(),
        jti: randomUUID(),
        urls: this.urls,
        app,
        organization,
        context,
        placed,
        apiToken: issued.token,
      },
      input.contractVersion ?? app.contractVersion,
    );
    const token = await this.signer.sign(claims);
    return { claims, token, apiToken: issued.token, apiTokenRecord: issued.record };
  }

  /** The claims and token of a locations request; it grants no API access (`api.token` null). */
  async locationsRequest(input: LocationsRequestInput): Promise<{ claims: AnyLocationsClaims; token: string }> {
    const app = await this.store.apps.get(input.appId);
    if (!app) throw new LaunchError('unknown_app', `no tool ${input.appId}`);
    const context = await this.store.contexts.get(input.contextId);
    if (!context) throw new LaunchError('unknown_context', `no context ${input.contextId}`);
    const organization = await this.store.organizations.get(context.organizationId);
    if (!organization) throw new LaunchError('unknown_context', `context ${context.id} has no organization`);
    let member: MemberRecord | null = null;
    let user: UserRecord | null = null;
    if (input.memberId !== undefined && input.memberId !== null) {
      member = await this.store.members.getInContext(context.id, input.memberId);
      if (!member) throw new LaunchError('unknown_member', `member ${input.memberId} is not a member of context ${context.id}`);
      user = await this.store.users.get(member.userId);
    }
    const claims = locationsClaims(
      {
        nowMs: this.clock.nowMs(),
        jti: randomUUID(),
        urls: this.urls,
        app,
        organization,
        contextId: context.id,
        user,
        memberId: member?.id ?? null,
        groups: member?.groups ?? null,
      },
      input.contractVersion ?? app.contractVersion,
    );
    return { claims, token: await this.signer.sign(claims) };
  }

  /**
   * Places a location in a course: the placement with its copy of the entry. Its gradebook column is the
   * LMS's, never the service's: a school's LMS makes it and names it in the launch's AGS claim (LTI-15), the
   * Sandbox's LMS with the placement's resource link (LTI-45). What an instructor's picker confirmation
   * records; a launch with an unseen `resource_link` does the same.
   */
  async place(input: PlaceInput): Promise<PlacementRecord> {
    return this.store.transaction(async (tx) => {
      const app = await tx.apps.get(input.appId);
      if (!app) throw new LaunchError('unknown_app', `no tool ${input.appId}`);
      const context = await tx.contexts.get(input.contextId);
      if (!context) throw new LaunchError('unknown_context', `no context ${input.contextId}`);
      const location = await tx.locations.get(input.locationId);
      if (!location || location.appId !== app.id) {
        throw new LaunchError('unknown_location', `tool ${app.id} has no location ${input.locationId}`);
      }
      const { placement } = await this.placement(tx, app, context, location, {
        ...input,
        resourceLink: input.resourceLink ?? `rl_${randomUUID()}`,
      });
      return placement;
    });
  }

  private async course(tx: Repositories, organization: OrganizationRecord, course: CourseInput): Promise<ContextRecord> {
    if ('contextId' in course) {
      const context = await tx.contexts.get(course.contextId);
      if (!context) throw new LaunchError('unknown_context', `no context ${course.contextId}`);
      return context;
    }
    return tx.contexts.upsert({
      organizationId: organization.id,
      externalId: course.externalId,
      name: course.name,
      label: course.label ?? null,
    });
  }

  private async placement(
    tx: Repositories,
    app: AppRecord,
    context: ContextRecord,
    location: LocationRecord,
    input: PlacementInput,
  ): Promise<{ placement: PlacementRecord; created: boolean }> {
    const existing = await tx.placements.findByResourceLink(input.resourceLink);
    if (existing) {
      if (existing.appId !== app.id || existing.contextId !== context.id) {
        throw new LaunchError('resource_link_taken', `resource_link ${input.resourceLink} names another placement`);
      }
      return { placement: existing, created: false };
    }
    const entry = input.entry ?? entryOf(location);
    const placement = await tx.placements.create({
      appId: app.id,
      contextId: context.id,
      locationId: location.id,
      entry,
      resourceLink: input.resourceLink,
    });
    return { placement, created: true };
  }
}
