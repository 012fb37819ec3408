/**
 * The picker over LTI (decisions LTI-13 to LTI-15). A Deep Linking request, or an instructor opening a
 * resource link no placement claims, opens a choice kept server-side under a random key: first the tools
 * available in the course under their registered names, then the chosen tool's live locations (the
 * contract's picker rules, `server/placements/picker.ts`). Confirming places each chosen location and
 * answers either the signed `LtiDeepLinkingResponse` for the LMS or, for an unknown link, the launch.
 */
import { randomUUID } from 'node:crypto';
import type { Services } from '../http/services.js';
import type { RenderedPage } from '../launch-page/pages.js';
import { issueLaunchTicket } from '../launch-page/tickets.js';
import { availability, lastPickerAnswer, openPicker, placeFromPicker, placementErrorOf } from '../placements/index.js';
import type { AppRecord, LtiDeepLinkRecord, PlacementRecord } from '../store/index.js';
import type { Picker } from '../placements/index.js';
import type { VerifiedLaunch } from './id-token.js';
import type { LaunchParties } from './launch.js';
import { agsUrlsOf, withLinkColumn } from './line-items.js';
import { deepLinkingResponsePage, linkNotChosenPage, locationsPage, toolsPage } from './picker-page.js';
import type { LtiRefusal } from './refusals.js';
import { refuse } from './refusals.js';
import { LtiUrls } from './urls.js';
import { CLAIMS, LTI_VERSION, MESSAGE_TYPES, PLACEMENT_PARAMETER } from './vocabulary.js';

/** How long a choice stays open: the login's lifetime. */
export const CHOICE_TTL_MS = 10 * 60_000;
/** The Deep Linking response's lifetime. */
const RESPONSE_TTL_SECONDS = 300;

export type ChoiceOutcome = { kind: 'page'; page: RenderedPage } | { kind: 'redirect'; location: string } | { kind: 'refused'; refusal: LtiRefusal };

async function availableApps(services: Services, contextId: string): Promise<AppRecord[]> {
  const context = await services.store.contexts.get(contextId);
  if (!context) return [];
  const apps = await services.store.apps.list();
  // Draft and suspended tools are never offered (a draft tool only in its own Sandbox course); hosted
  // tools cannot be launched by this deployment.
  return apps.filter((app) => availability(app, context).ok && app.hosting === 'self_hosted').sort((a, b) => a.name.localeCompare(b.name));
}

function settingsOf(claims: Record<string, unknown>): Record<string, unknown> | null {
  const value = claims[CLAIMS.deepLinkingSettings];
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** An `LtiDeepLinkingRequest`: the tools page, or a refusal. */
export async function startDeepLinking(services: Services, launch: VerifiedLaunch, parties: LaunchParties): Promise<ChoiceOutcome> {
  const settings = settingsOf(launch.claims);
  const returnUrl = settings && typeof settings['deep_link_return_url'] === 'string' ? settings['deep_link_return_url'] : null;
  if (!settings || returnUrl === null) return { kind: 'refused', refusal: refuse(400, 'no_return_url', 'deep linking request without deep_link_return_url') };
  const accepted = Array.isArray(settings['accept_types']) ? settings['accept_types'] : [];
  if (!accepted.includes('ltiResourceLink')) {
    return { kind: 'refused', refusal: refuse(400, 'no_resource_link_type', 'deep linking request does not accept ltiResourceLink') };
  }
  if (!parties.staff) return { kind: 'refused', refusal: refuse(403, 'not_staff', 'deep linking by a member who is not staff') };
  const check = await services.lti.lms.check(returnUrl, 'deep_link_return_url');
  if (!check.ok) return { kind: 'refused', refusal: refuse(400, 'return_url_rule', check.message) };
  const data = typeof settings['data'] === 'string' ? settings['data'] : null;
  const choice = await services.store.lti.createDeepLink({
    registrationId: launch.registration.id,
    organizationId: parties.organization.id,
    contextId: parties.context.id,
    memberId: parties.member.id,
    returnUrl,
    resourceLinkId: null,
    data,
    acceptMultiple: settings['accept_multiple'] !== false,
    expiresAt: services.clock.nowMs() + CHOICE_TTL_MS,
    lineItemUrl: null,
    lineItemsUrl: null,
  });
  return { kind: 'page', page: await toolsStep(services, choice, 'Choose the tool whose activities you want to add to your course.') };
}

/** An instructor opening a resource link no placement claims: the same choice, binding that link. */
export async function startLinkChoice(services: Services, launch: VerifiedLaunch, parties: LaunchParties, resourceLinkId: string): Promise<ChoiceOutcome> {
  const choice = await services.store.lti.createDeepLink({
    registrationId: launch.registration.id,
    organizationId: parties.organization.id,
    contextId: parties.context.id,
    memberId: parties.member.id,
    returnUrl: null,
    resourceLinkId,
    data: null,
    acceptMultiple: false,
    expiresAt: services.clock.nowMs() + CHOICE_TTL_MS,
    // The launch's AGS claim, so the launch that places the link carries its column (LTI-120).
    lineItemUrl: agsUrlsOf(launch.claims).lineItem,
    lineItemsUrl: agsUrlsOf(launch.claims).lineItems,
  });
  return {
    kind: 'page',
    page: await toolsStep(services, choice, 'This link is not set up yet. Choose the tool and the activity it opens; students will then see that activity.'),
  };
}

async function toolsStep(services: Services, choice: LtiDeepLinkRecord, intro: string): Promise<RenderedPage> {
  const urls = new LtiUrls(services.config.publicUrl);
  return toolsPage({ action: urls.deepLinking(), key: choice.id, apps: await availableApps(services, choice.contextId), intro, cancellable: choice.returnUrl !== null });
}

export interface ChoicePost {
  key?: string | undefined;
  app?: string | undefined;
  confirm?: string | undefined;
  /** Cancel: the choice ends with nothing added (LTI-113). */
  cancel?: string | undefined;
  extids: string[];
}

/** `POST /lti/deep-linking`: the locations of the chosen tool, the confirmation, or Cancel. */
export async function continueChoice(services: Services, post: ChoicePost): Promise<ChoiceOutcome> {
  const urls = new LtiUrls(services.config.publicUrl);
  const choice = post.key ? await services.store.lti.getDeepLink(post.key) : null;
  if (!choice) return { kind: 'refused', refusal: refuse(400, 'choice_expired', 'unknown, used or expired picker key') };
  if (post.cancel === '1') return cancelChoice(services, choice);
  const app = post.app ? await services.store.apps.get(post.app) : null;
  const offered = await availableApps(services, choice.contextId);
  if (!app || !offered.some((a) => a.id === app.id)) {
    return { kind: 'page', page: await toolsStep(services, choice, 'That tool is not available in this course. Choose another.') };
  }
  const pickerPage = (picker: Picker, nothingChosen: boolean): ChoiceOutcome => ({
    kind: 'page',
    page: locationsPage({ action: urls.deepLinking(), key: choice.id, app, picker, multiple: choice.acceptMultiple, cancellable: choice.returnUrl !== null, nothingChosen }),
  });
  // An extid ticked twice (a location shown in two groups) is one location, placed once.
  const extids = [...new Set(choice.acceptMultiple ? post.extids : post.extids.slice(0, 1))];
  if (post.confirm !== '1' || extids.length === 0) {
    // Nothing chosen on a confirmation (the page's script says so first): the same picker again, saying
    // what to do, from the answer placements are made from when there is one (LTI-112).
    const kept = post.confirm === '1' ? await lastPickerAnswer(services, app.id, choice.contextId) : null;
    if (kept) return pickerPage(kept, true);
    try {
      return pickerPage(await openPicker(services, { appId: app.id, contextId: choice.contextId, memberId: choice.memberId }), post.confirm === '1');
    } catch (err) {
      const problem = placementErrorOf(err);
      if (!problem) throw err;
      services.log.info('lti picker failed', { app: app.id, code: problem.code });
      return { kind: 'page', page: await toolsStep(services, choice, `${app.name} could not list its activities: ${problem.detail}`) };
    }
  }
  // The choice is used up before placing, so a double submit cannot place twice.
  const used = await services.store.lti.consumeDeepLink(choice.id);
  if (!used) return { kind: 'refused', refusal: refuse(400, 'choice_expired', 'picker key used meanwhile') };
  const placed: PlacementRecord[] = [];
  for (const extid of extids) {
    try {
      const outcome = await placeFromPicker(services, { appId: app.id, contextId: choice.contextId, extid });
      placed.push(outcome.placement);
    } catch (err) {
      const problem = placementErrorOf(err);
      if (!problem) throw err;
      services.log.info('lti placement refused', { app: app.id, extid, code: problem.code });
      return { kind: 'refused', refusal: refuse(400, problem.code, problem.detail) };
    }
  }
  if (choice.resourceLinkId !== null) return launchChosen(services, choice, placed[0] as PlacementRecord);
  return { kind: 'page', page: await deepLinkingResponse(services, choice, placed, app) };
}

/**
 * Cancel (LTI-113): a Deep Linking choice answers the LMS with no content item, so the LMS closes its
 * dialog; an unknown link's choice leaves the link as it was. Either way the choice is used up.
 */
async function cancelChoice(services: Services, choice: LtiDeepLinkRecord): Promise<ChoiceOutcome> {
  const used = await services.store.lti.consumeDeepLink(choice.id);
  if (!used) return { kind: 'refused', refusal: refuse(400, 'choice_expired', 'picker key used meanwhile') };
  services.log.info('lti choice cancelled', { registration: choice.registrationId, context: choice.contextId });
  if (choice.returnUrl === null) return { kind: 'page', page: linkNotChosenPage(new LtiUrls(services.config.publicUrl).deepLinking()) };
  return { kind: 'page', page: await deepLinkingResponse(services, choice, [], null) };
}

async function launchChosen(services: Services, choice: LtiDeepLinkRecord, placement: PlacementRecord): Promise<ChoiceOutcome> {
  const resourceLinkId = choice.resourceLinkId as string;
  const bound = await services.store.lti.bindResourceLink(choice.organizationId, resourceLinkId, placement.id);
  const registration = await services.store.lti.getRegistration(choice.registrationId);
  const placed = bound === placement.id ? placement : await services.store.placements.get(bound);
  if (registration && placed) {
    await withLinkColumn(services, { registration, organizationId: choice.organizationId, resourceLinkId, lineItem: choice.lineItemUrl, lineItems: choice.lineItemsUrl }, placed);
  }
  const ticket = await issueLaunchTicket(services, { placementId: bound, memberId: choice.memberId });
  return { kind: 'redirect', location: ticket.launchUrl };
}

async function deepLinkingResponse(services: Services, choice: LtiDeepLinkRecord, placed: readonly PlacementRecord[], app: AppRecord | null): Promise<RenderedPage> {
  const registration = await services.store.lti.getRegistration(choice.registrationId);
  const organization = await services.store.organizations.get(choice.organizationId);
  if (!registration || !organization) throw new Error(`deep link ${choice.id} lost its registration or school`);
  const urls = new LtiUrls(services.config.publicUrl);
  const nowSeconds = Math.floor(services.clock.nowMs() / 1000);
  const contentItems = placed.map((placement) => ({
    type: 'ltiResourceLink',
    title: placement.entry.label,
    url: urls.launch(),
    custom: { [PLACEMENT_PARAMETER]: placement.resourceLink },
    ...(placement.entry.type === 'assessment'
      ? {
          lineItem: {
            scoreMaximum: placement.entry.points ?? 1,
            label: placement.entry.label,
            resourceId: placement.id,
            tag: placement.entry.extid ?? placement.locationId,
          },
        }
      : {}),
  }));
  const claims: Record<string, unknown> = {
    iss: registration.clientId,
    aud: registration.issuer,
    iat: nowSeconds,
    exp: nowSeconds + RESPONSE_TTL_SECONDS,
    nonce: randomUUID(),
    [CLAIMS.deploymentId]: organization.deployment,
    [CLAIMS.messageType]: MESSAGE_TYPES.deepLinkingResponse,
    [CLAIMS.version]: LTI_VERSION,
    [CLAIMS.contentItems]: contentItems,
    // What the LMS may show the teacher on return (Deep Linking 2.0 §4.5.3); Cancel says nothing (LTI-114).
    ...(app !== null && placed.length > 0 ? { [CLAIMS.deepLinkingMessage]: addedMessage(app, placed) } : {}),
    ...(choice.data !== null ? { [CLAIMS.deepLinkingData]: choice.data } : {}),
  };
  const jwt = await services.signer.sign(claims);
  services.log.info('lti deep linking response', { registration: registration.id, context: choice.contextId, placements: placed.map((p) => p.id) });
  return deepLinkingResponsePage({
    returnUrl: choice.returnUrl as string,
    jwt,
    appName: app?.name ?? null,
    added: placed.map((p) => ({ label: p.entry.label, type: p.entry.type, points: p.entry.type === 'assessment' ? (p.entry.points ?? null) : null })),
  });
}

function addedMessage(app: AppRecord, placed: readonly PlacementRecord[]): string {
  return `${placed.length === 1 ? '1 activity' : `${placed.length} activities`} added from ${app.name}.`;
}
