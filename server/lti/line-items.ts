/**
 * A resource link's gradebook column (decisions LTI-120 to LTI-122). A launch's AGS claim names the link's
 * line item (`lineitem`), or only the course's container (`lineitems`: a link a teacher added by hand). The
 * first is kept on the placement; for the second, an assessment placement on a registration granted the
 * line-item scope gets a line item the service creates in the LMS: once per link, however many launches
 * race, on however many instances, because the creation is claimed in the store before the LMS is asked.
 */
import { randomUUID } from 'node:crypto';
import type { Services } from '../http/services.js';
import { lmsFailureReason, sendToLms } from '../scores/ags.js';
import type { LmsPlatform } from '../scores/lms-registry.js';
import type { LtiRegistrationRecord, PlacementRecord } from '../store/index.js';
import { clientCredentialsForm } from './client-credentials.js';
import { platformOf } from './platforms.js';
import { AGS_MEDIA_TYPES, AGS_SCOPE, CLAIMS } from './vocabulary.js';

/**
 * How long a claim holds before another launch may take it over: longer than the token request and the
 * POST can take (10 s each at most), so a live holder is never overtaken.
 */
export const LINE_ITEM_CLAIM_MS = 30_000;
/** How long a launch waits for another launch's creation before it goes on without a column. */
export const LINE_ITEM_WAIT_MS = 12_000;
const POLL_MS = 100;

/** What a launch's AGS claim says of its link's column. */
export interface LinkColumn {
  registration: LtiRegistrationRecord;
  organizationId: string;
  resourceLinkId: string;
  /** `lineitem`: the link's own line item. */
  lineItem: string | null;
  /** `lineitems`: the course's container, where a line item can be created. */
  lineItems: string | null;
}

function absoluteUrl(value: unknown): string | null {
  if (typeof value !== 'string' || value.trim() === '') return null;
  try {
    new URL(value);
    return value;
  } catch {
    return null;
  }
}

/** `lineitem` and `lineitems` of a launch's AGS claim, each null when absent or not a URL. */
export function agsUrlsOf(claims: Record<string, unknown>): { lineItem: string | null; lineItems: string | null } {
  const ags = claims[CLAIMS.ags];
  if (typeof ags !== 'object' || ags === null || Array.isArray(ags)) return { lineItem: null, lineItems: null };
  const o = ags as Record<string, unknown>;
  return { lineItem: absoluteUrl(o['lineitem']), lineItems: absoluteUrl(o['lineitems']) };
}

/** Whether grades reach this registration's LMS at all: the AGS score scope (LTI-121). */
export function grantsScores(registration: Pick<LtiRegistrationRecord, 'scopes'>): boolean {
  return registration.scopes.includes(AGS_SCOPE.score);
}

/** Whether the service may create line items there: the line-item scope, with the score scope (LTI-122). */
export function createsLineItems(registration: Pick<LtiRegistrationRecord, 'scopes'>): boolean {
  return grantsScores(registration) && registration.scopes.includes(AGS_SCOPE.lineItem);
}

/** The placement with the column the launch's link has, or gets (see the module comment). */
export async function withLinkColumn(services: Services, link: LinkColumn, placement: PlacementRecord): Promise<PlacementRecord> {
  if (placement.entry.type !== 'assessment') return placement;
  if (link.lineItem !== null) {
    if (placement.lineItemId === link.lineItem) return placement;
    return (await services.store.placements.setLineItem(placement.id, link.lineItem)) ?? placement;
  }
  if (placement.lineItemId !== null || link.lineItems === null || !createsLineItems(link.registration)) return placement;
  const created = await ensureLineItem(services, link, placement);
  if (created === null) return placement;
  return (await services.store.placements.setLineItem(placement.id, created)) ?? placement;
}

async function ensureLineItem(services: Services, link: LinkColumn, placement: PlacementRecord): Promise<string | null> {
  const { store, log } = services;
  const holder = randomUUID();
  const deadline = Date.now() + LINE_ITEM_WAIT_MS;
  for (;;) {
    const claim = await store.lti.claimLineItem(link.organizationId, link.resourceLinkId, holder, LINE_ITEM_CLAIM_MS);
    if (claim.kind === 'created') return claim.lineItemUrl;
    if (claim.kind === 'holder') {
      const made = await createOrAdopt(services, link, placement, claim.takenOver);
      if (!made.ok) {
        await store.lti.releaseLineItem(link.organizationId, link.resourceLinkId, holder);
        log.warn('lti line item not created', { registration: link.registration.id, resource_link: link.resourceLinkId, reason: made.reason });
        return null;
      }
      if (!(await store.lti.completeLineItem(link.organizationId, link.resourceLinkId, holder, made.url))) {
        // This holder outlived its claim and another took over: the column kept is the other's.
        const kept = await store.lti.lineItemClaim(link.organizationId, link.resourceLinkId);
        log.warn('lti line item claim lost while creating', { resource_link: link.resourceLinkId, created: made.url });
        return kept?.lineItemUrl ?? null;
      }
      log.info('lti line item created', { registration: link.registration.id, resource_link: link.resourceLinkId, placement: placement.id });
      return made.url;
    }
    if (Date.now() >= deadline) {
      log.warn('lti line item still being created elsewhere; this launch goes on without a column', { resource_link: link.resourceLinkId });
      return null;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

type Made = { ok: true; url: string } | { ok: false; reason: string };

/**
 * POSTs the line item. A holder that took over a lapsed claim first looks for one the previous holder
 * may have created before it died (the container filtered by `resource_link_id` and `tag`), so a crash
 * between the LMS's answer and the store's write does not leave two columns.
 */
async function createOrAdopt(services: Services, link: LinkColumn, placement: PlacementRecord, takenOver: boolean): Promise<Made> {
  const platform = platformOf(link.registration, services.lti.lms);
  const tag = placement.entry.extid ?? placement.locationId;
  try {
    const token = await accessToken(services, platform);
    if (!token.ok) return token;
    const auth = { authorization: `Bearer ${token.token}` };
    if (takenOver) {
      const url = new URL(link.lineItems as string);
      url.searchParams.set('resource_link_id', link.resourceLinkId);
      const listed = await sendToLms(platform, 'lineitems', url.toString(), { method: 'GET', headers: { ...auth, accept: AGS_MEDIA_TYPES.lineItemContainer } });
      if (listed.status === 200) {
        const found = parseJson(listed.body);
        const items = Array.isArray(found) ? (found as unknown[]) : [];
        for (const item of items) {
          if (typeof item !== 'object' || item === null) continue;
          const o = item as Record<string, unknown>;
          const id = absoluteUrl(o['id']);
          if (id !== null && o['resourceLinkId'] === link.resourceLinkId && o['tag'] === tag) return { ok: true, url: id };
        }
      }
    }
    const body = {
      scoreMaximum: placement.entry.points ?? 100,
      label: placement.entry.label,
      resourceLinkId: link.resourceLinkId,
      resourceId: placement.id,
      tag,
    };
    const posted = await sendToLms(platform, 'lineitems', link.lineItems as string, {
      method: 'POST',
      headers: { ...auth, 'content-type': AGS_MEDIA_TYPES.lineItem, accept: AGS_MEDIA_TYPES.lineItem },
      body: JSON.stringify(body),
    });
    if (posted.status !== 200 && posted.status !== 201) {
      return { ok: false, reason: `the LMS line-item container refused the new line item (HTTP ${posted.status})` };
    }
    const made = parseJson(posted.body);
    const id = typeof made === 'object' && made !== null ? absoluteUrl((made as Record<string, unknown>)['id']) : null;
    return id !== null ? { ok: true, url: id } : { ok: false, reason: 'the LMS line-item container answered without the new line item\'s id' };
  } catch (err) {
    return { ok: false, reason: lmsFailureReason(err) };
  }
}

/** An access token for the line-item scope; creations are rare, so no cache. */
async function accessToken(services: Services, platform: LmsPlatform): Promise<{ ok: true; token: string } | { ok: false; reason: string }> {
  const form = await clientCredentialsForm(services.signer, services.clock, { clientId: platform.clientId, audience: platform.assertionAudience ?? platform.tokenUrl }, [AGS_SCOPE.lineItem]);
  const answer = await sendToLms(platform, 'token_endpoint', platform.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: form.toString(),
  });
  const parsed = parseJson(answer.body);
  const token = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>)['access_token'] : undefined;
  if (answer.status !== 200 || typeof token !== 'string' || token === '') {
    return { ok: false, reason: `the LMS token endpoint refused an access token for the line-item scope (HTTP ${answer.status})` };
  }
  return { ok: true, token };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}
