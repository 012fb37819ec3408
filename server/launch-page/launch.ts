/**
 * What `GET /launch/{ticket}` answers (decision S-10), in the order the dashboard spec lists its checks:
 *
 * 1. the ticket: unknown 404; used or expired 410;
 * 2. the tool's status: suspended, or draft outside its Sandbox, 403 (contract: the tool is not called);
 * 3. whether it can be launched: a hosted tool (NS-01), or a callback URL unset or failing the URL
 *    rules now (GAP-26), 409;
 * 4. provisioning of the course and location levels (GAP-16 to GAP-18): a request goes out when one is
 *    due; 202 the Provisioning page while a level waits for the tool's PUT, 503 the not-set-up page
 *    (`Retry-After: 60`) when the last request failed. Neither uses up the ticket;
 * 5. otherwise the ticket is used up, the launch is recorded and signed by the launch service, and the
 *    page POSTs `launch_data` to the callback URL.
 *
 * Every page but the form carries the report ID, the response's `Request-Id`.
 */
import type { Logger } from '../http/log.js';
import type { Services } from '../http/services.js';
import { CURRENT_CONTRACT } from '../launches/claims.js';
import { placementBroken } from '../launches/service.js';
import { UnsupportedContractError } from '../launches/claims.js';
import { availability } from '../placements/availability.js';
import { PlacementError } from '../placements/errors.js';
import { ensureProvisioned, isProvisioned } from '../placements/provision.js';
import type { AppRecord } from '../store/index.js';
import type { RenderedPage } from './pages.js';
import { launchFormPage, messagePage } from './pages.js';
import { readTicketPayload } from './tickets.js';
import { AGS_SCOPE } from '../lti/vocabulary.js';

/** How often the Provisioning page reloads itself, and when the not-set-up page tries again. */
export const PROVISIONING_REFRESH_SECONDS = 3;
export const NOT_SET_UP_RETRY_SECONDS = 60;

const LINK_TITLE = 'This link cannot be used';

function cannotOpen(app: AppRecord): string {
  return `${app.name} cannot be opened`;
}

function ticketPage(status: 404 | 410, which: 'unknown' | 'used' | 'expired', reportId: string): RenderedPage {
  const pages = {
    unknown: { heading: 'This launch link is not valid', text: 'Open the activity again from your course.' },
    used: {
      heading: 'This launch link has already been used',
      text: 'Each launch link opens the tool once. Open the activity again from your course.',
    },
    expired: {
      heading: 'This launch link has expired',
      text: 'Launch links are valid for two minutes. Open the activity again from your course.',
    },
  } as const;
  return messagePage({ status, kind: `ticket_${which}`, title: LINK_TITLE, ...pages[which], reportId });
}

export interface LaunchPageContext {
  requestId: string;
  log: Logger;
}

/** The signed launch a ticket delivers: what the launch form POSTs, and to where. */
export interface DeliveredLaunch {
  appName: string;
  callbackUrl: string;
  launchData: string;
  /** The launch token's `exp`, seconds since the epoch. */
  exp: number;
}

/** The page for a ticket; never throws for anything a person, a tool or the network does. */
export async function renderLaunchPage(services: Services, ticket: string, ctx: LaunchPageContext): Promise<RenderedPage> {
  const outcome = await deliverLaunch(services, ticket, ctx);
  return 'page' in outcome ? outcome.page : launchFormPage(outcome.launch);
}

/**
 * Either the page that stops the launch, or the signed launch itself: the launch page renders the latter as
 * its form, the dashboard's signed-launch call answers it as JSON (decision OPS-01).
 */
export async function deliverLaunch(
  services: Services,
  ticket: string,
  ctx: LaunchPageContext,
): Promise<{ page: RenderedPage } | { launch: DeliveredLaunch }> {
  const page = (rendered: RenderedPage): { page: RenderedPage } => ({ page: rendered });
  const { store } = services;
  const reportId = ctx.requestId;
  const peeked = await store.launches.peekTicket(ticket);
  if (peeked.status === 'unknown') return page(ticketPage(404, 'unknown', reportId));
  if (peeked.status !== 'ok') return page(ticketPage(410, peeked.status, reportId));
  const payload = readTicketPayload(peeked.payload);
  const placement = payload ? await store.placements.get(payload.placement_id) : null;
  const member = payload && placement ? await store.members.getInContext(placement.contextId, payload.member_id) : null;
  const app = placement ? await store.apps.get(placement.appId) : null;
  const context = placement ? await store.contexts.get(placement.contextId) : null;
  if (!payload || !placement || !member || !app || !context) {
    // What the ticket named is gone (a deleted course or tool): the link is dead.
    ctx.log.warn('launch ticket names records that no longer exist', { placement: payload?.placement_id ?? null });
    return page(ticketPage(410, 'expired', reportId));
  }

  const available = availability(app, context);
  if (!available.ok) {
    if (available.reason === 'suspended') {
      return page(messagePage({
        status: 403,
        kind: 'app_suspended',
        title: cannotOpen(app),
        heading: `${app.name} is unavailable`,
        text: 'This tool has been suspended by the platform team.',
        reportId,
      }));
    }
    return page(messagePage({
      status: 403,
      kind: 'app_draft',
      title: cannotOpen(app),
      heading: `${app.name} is not available yet`,
      text: 'This tool is still being set up by its makers and can only be tried in its Sandbox.',
      reportId,
    }));
  }

  if (app.hosting === 'hosted') {
    return page(messagePage({
      status: 409,
      kind: 'app_hosted',
      title: cannotOpen(app),
      heading: `${app.name} cannot be opened here`,
      text: 'Hosted tools are not run by this deployment.',
      reportId,
    }));
  }
  if (app.callbackUrl === null || app.callbackUrl.trim() === '') {
    return page(messagePage({
      status: 409,
      kind: 'callback_unset',
      title: cannotOpen(app),
      heading: `${app.name} could not be reached`,
      text: 'The tool has no launch address set yet.',
      reportId,
    }));
  }
  // The launch's call toward the tool: its address resolved and checked before every launch (OPS-10).
  const checkStarted = performance.now();
  const callback = await services.outbound.check(app.callbackUrl, 'callback_url');
  services.metrics.toolRequest('launch', (performance.now() - checkStarted) / 1000);
  if (!callback.ok) {
    ctx.log.info('callback URL fails the URL rules', { app: app.id, rule: callback.rule });
    return page(messagePage({
      status: 409,
      kind: 'callback_rule',
      title: cannotOpen(app),
      heading: `${app.name} could not be reached`,
      text: `The tool's launch address is not valid: ${callback.message}.`,
      reportId,
    }));
  }

  const location = await store.locations.get(placement.locationId);
  if (location && placementBroken(app, location)) {
    ctx.log.info('launch refused: the placed location was deleted', { app: app.id, placement: placement.id, location: location.id });
    return page(messagePage({
      status: 410,
      kind: 'location_deleted',
      title: cannotOpen(app),
      heading: 'This activity is no longer available',
      text: `${app.name} removed this activity. Ask your instructor to place it again.`,
      reportId,
    }));
  }

  let provisioning;
  try {
    provisioning = await ensureProvisioned(services, { app, context, locationId: placement.locationId, entry: placement.entry });
  } catch (err) {
    if (!(err instanceof PlacementError)) throw err;
    // Availability was checked above; a tool suspended in between is refused like any suspended tool.
    return page(messagePage({
      status: 403,
      kind: 'app_unavailable',
      title: cannotOpen(app),
      heading: `${app.name} is unavailable`,
      text: err.detail,
      reportId,
    }));
  }
  if (!isProvisioned(provisioning)) {
    const failed = provisioning.context.state === 'failed' || provisioning.location?.state === 'failed';
    if (failed) {
      ctx.log.info('launch held: provisioning failed', { app: app.id, context: context.id, error: provisioning.error });
      return page(messagePage({
        status: 503,
        kind: 'not_set_up',
        title: `${app.name} is not set up`,
        heading: `${app.name} is not set up for this course yet`,
        text:
          "The tool did not answer the request to set up this course. Try again in a minute; if this keeps happening, send the report ID to your school's support team.",
        reportId,
        refreshSeconds: NOT_SET_UP_RETRY_SECONDS,
        headers: { 'Retry-After': String(NOT_SET_UP_RETRY_SECONDS) },
      }));
    }
    return page(messagePage({
      status: 202,
      kind: 'provisioning',
      title: `Setting up ${app.name}`,
      heading: `${app.name} is setting up this course`,
      text: `This page reloads by itself and opens ${app.name} as soon as the course is ready.`,
      reportId,
      refreshSeconds: PROVISIONING_REFRESH_SECONDS,
    }));
  }

  // From here the launch happens: the ticket is used up first, so two tabs cannot both launch.
  const consumed = await store.launches.consumeTicket(ticket);
  if (consumed.status !== 'ok') {
    return page(consumed.status === 'unknown' ? ticketPage(404, 'unknown', reportId) : ticketPage(410, consumed.status, reportId));
  }
  const organization = await store.organizations.get(context.organizationId);
  const user = await store.users.get(member.userId);
  if (!organization || !user) throw new Error(`course ${context.id} or member ${member.id} lost its school or person`);
  const scopes = await store.lti.scopesOf(organization.issuer, organization.client);
  let launchData: string;
  let exp: number;
  try {
    const outcome = await services.launches.launch({
      organization: {
        issuer: organization.issuer,
        client: organization.client,
        deployment: organization.deployment,
        title: organization.title,
      },
      course: { contextId: context.id },
      user: {
        externalId: user.externalId,
        givenName: user.givenName,
        familyName: user.familyName,
        fullName: user.fullName,
        email: user.email,
        groups: member.groups,
      },
      placement: { appId: app.id, locationId: placement.locationId, resourceLink: placement.resourceLink },
      // The Sandbox of a tool pinned to 2026-08-25 is that contract's Test tab, whose launches are trials (GAP-43).
      trial: available.sandbox && app.contractVersion === '2026-08-25',
      // A registration without the AGS score scope takes no grades: the launch says so (LTI-121).
      scoresAccepted: scopes === null || scopes.includes(AGS_SCOPE.score),
    });
    launchData = outcome.token;
    exp = outcome.claims.exp;
    ctx.log.info('launch delivered', { app: app.id, context: context.id, placement: placement.id, launch: outcome.launch.id });
  } catch (err) {
    if (!(err instanceof UnsupportedContractError)) throw err;
    return page(messagePage({
      status: 409,
      kind: 'contract_not_served',
      title: cannotOpen(app),
      heading: `${app.name} cannot be opened here`,
      text: `The tool is pinned to contract ${app.contractVersion}, which this deployment does not serve yet (it serves ${CURRENT_CONTRACT}).`,
      reportId,
    }));
  }
  return { launch: { appName: app.name, callbackUrl: callback.url, launchData, exp } };
}

/** The page for an unexpected failure: the person gets a report ID, the log gets the error. */
export function internalErrorPage(reportId: string): RenderedPage {
  return messagePage({
    status: 500,
    kind: 'internal_error',
    title: 'The tool cannot be opened',
    heading: 'Something went wrong on our side',
    text: "The tool could not be opened. Try again; if this keeps happening, send the report ID to your school's support team.",
    reportId,
  });
}
