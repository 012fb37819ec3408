/**
 * The LMS-facing routes (decision LTI-02), mounted before the contract dispatch: browsers and LMSes reach
 * them with no contract credential, and they answer HTML pages or LTI's own JSON documents, never a
 * contract Problem. Every refusal is a page with a 4xx, the report ID and a log line with the reason.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { RequestLocals } from '../http/locals.js';
import type { Services } from '../http/services.js';
import { readRawBody } from '../http/body.js';
import { Problem } from '../http/problem.js';
import { writePage } from '../launch-page/handler.js';
import type { RenderedPage } from '../launch-page/pages.js';
import { internalErrorPage } from '../launch-page/launch.js';
import { issueLaunchTicket } from '../launch-page/tickets.js';
import type { Logger } from '../http/log.js';
import type { ChoiceOutcome } from './deep-linking.js';
import { continueChoice, startDeepLinking, startLinkChoice } from './deep-linking.js';
import { judgeIdToken } from './id-token.js';
import { placementFor, recordParties } from './launch.js';
import { startLogin } from './login.js';
import { askStatePage, refusalPage, registeredPage, storeStatePage } from './pages.js';
import type { VerifiedLaunch } from './id-token.js';
import type { RefusalSource } from './refusal-log.js';
import { claimedMessage, claimedSender, keepRefusal } from './refusal-log.js';
import type { LtiRefusal } from './refusals.js';
import { refuse } from './refusals.js';
import { canvasConfiguration, registerDynamically } from './registration.js';
import { LtiUrls } from './urls.js';
import { MESSAGE_TYPES } from './vocabulary.js';

/** Form bodies from LMSes are small: an id_token of a few kilobytes. */
const FORM_LIMIT_BYTES = 256 * 1024;

type Route = (services: Services, req: Request, res: Response, ctx: RouteContext) => Promise<void>;

interface RouteContext {
  requestId: string;
  log: Logger;
  services: Services;
}

/** Which LMS message each route's refusals are kept as (LTI-126). */
const ROUTE_MESSAGES: Readonly<Record<string, RefusalSource['message']>> = {
  '/lti/register': 'registration',
  '/lti/login': 'login',
  '/lti/launch': 'launch',
  '/lti/deep-linking': 'deep_linking',
};

const ROUTES: Readonly<Record<string, { methods: readonly string[]; handle: Route }>> = {
  '/lti/register': { methods: ['GET'], handle: register },
  '/lti/login': { methods: ['GET', 'POST'], handle: login },
  '/lti/launch': { methods: ['POST'], handle: launch },
  '/lti/deep-linking': { methods: ['POST'], handle: choice },
  '/lti/canvas.json': { methods: ['GET'], handle: canvas },
};

export function ltiRoutes(services: Services): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const route = ROUTES[req.path];
    if (!route) {
      next();
      return;
    }
    const locals = res.locals as RequestLocals & { route?: string; operationId?: string };
    locals.route = req.path;
    if (!route.methods.includes(req.method)) {
      next(new Problem(405, 'method_not_allowed', `${req.method} is not allowed here; allowed: ${route.methods.join(', ')}`, { headers: { Allow: route.methods.join(', ') } }));
      return;
    }
    const log = (locals.log ?? services.log).child({ operation: `lti ${req.path}` });
    const ctx: RouteContext = { requestId: locals.requestId, log, services };
    try {
      await route.handle(services, req, res, ctx);
    } catch (err) {
      if (err instanceof Problem && err.status < 500) {
        await writeRefusal(res, refuse(400, err.code, err.detail), ctx, { message: ROUTE_MESSAGES[req.path] ?? 'launch' });
        return;
      }
      log.error('lti route failed', { err });
      if (res.headersSent) {
        res.destroy();
        return;
      }
      writePage(res, internalErrorPage(locals.requestId));
    }
  };
}

/** The refusal page with its report ID, after the refusal is kept for the LMS's administrator (LTI-126). */
async function writeRefusal(res: Response, refusal: LtiRefusal, ctx: RouteContext, source: RefusalSource): Promise<void> {
  ctx.log.info('lti request refused', { reason: refusal.reason, code: refusal.code, status: refusal.status });
  await keepRefusal(ctx.services, ctx.requestId, refusal, source);
  writePage(res, refusalPage(refusal, ctx.requestId));
}

/** A verified message's source: its registration, checked. */
function verifiedSource(launch: VerifiedLaunch): RefusalSource {
  return {
    message: launch.messageType === MESSAGE_TYPES.deepLinking ? 'deep_linking' : 'launch',
    registrationId: launch.registration.id,
    issuer: launch.registration.issuer,
    clientId: launch.registration.clientId,
    deploymentId: launch.deploymentId,
  };
}

/** The query (GET) or the form body (POST) as single strings; repeated names keep the first, except `extid`. */
async function params(req: Request): Promise<{ one: Record<string, string>; all: URLSearchParams }> {
  let all: URLSearchParams;
  if (req.method === 'POST') {
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded') {
      throw new Problem(400, 'not_a_form', 'the request must be an HTML form post');
    }
    all = new URLSearchParams((await readRawBody(req, FORM_LIMIT_BYTES)).toString('utf8'));
  } else {
    all = new URL(req.originalUrl, 'http://query.invalid').searchParams;
  }
  const one: Record<string, string> = {};
  for (const [name, value] of all) if (!(name in one)) one[name] = value;
  return { one, all };
}

function redirect(res: Response, location: string, cookie?: string): void {
  res.status(cookie === undefined ? 303 : 302);
  if (cookie !== undefined) res.setHeader('Set-Cookie', cookie);
  res.setHeader('Location', location);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.end();
}

async function register(services: Services, req: Request, res: Response, ctx: RouteContext): Promise<void> {
  const { one } = await params(req);
  const outcome = await registerDynamically(
    { store: services.store, config: services.config, lms: services.lti.lms },
    { openidConfiguration: one['openid_configuration'], registrationToken: one['registration_token'] },
  );
  if (!outcome.ok) {
    await writeRefusal(res, refuse(outcome.status, 'registration_failed', outcome.reason), ctx, { message: 'registration' });
    return;
  }
  ctx.log.info('lti registration stored', { registration: outcome.registration.id, status: outcome.registration.status });
  writePage(res, registeredPage({ title: outcome.registration.title, status: outcome.registration.status }));
}

async function login(services: Services, req: Request, res: Response, ctx: RouteContext): Promise<void> {
  const { one } = await params(req);
  const outcome = await startLogin({ store: services.store, clock: services.clock, urls: new LtiUrls(services.config.publicUrl) }, one);
  const source: RefusalSource = { message: 'login', issuer: one['iss'] ?? null, clientId: one['client_id'] ?? null, deploymentId: one['lti_deployment_id'] ?? null };
  if (!outcome.ok) {
    await writeRefusal(res, outcome.refusal, ctx, source);
    return;
  }
  const auth = await services.lti.lms.check(outcome.registration.authUrl, 'authorization_endpoint');
  if (!auth.ok) {
    await writeRefusal(res, refuse(502, 'auth_url_rule', auth.message), ctx, { ...source, registrationId: outcome.registration.id });
    return;
  }
  if (outcome.storageTarget !== null) {
    res.setHeader('Set-Cookie', outcome.cookie);
    writePage(
      res,
      storeStatePage({
        authUrl: outcome.location,
        storageTarget: outcome.storageTarget,
        platformOrigin: new URL(outcome.registration.authUrl).origin,
        state: outcome.state,
      }),
    );
    return;
  }
  redirect(res, outcome.location, outcome.cookie);
}

async function launch(services: Services, req: Request, res: Response, ctx: RouteContext): Promise<void> {
  const { one } = await params(req);
  const judged = await judgeIdToken(
    { store: services.store, clock: services.clock, keys: services.lti.keys, urls: new LtiUrls(services.config.publicUrl) },
    { id_token: one['id_token'], state: one['state'], lti_storage_value: one['lti_storage_value'] },
    req.headers.cookie,
  );
  if (judged.ok === 'ask_storage') {
    const registration = await services.store.lti.getRegistration(judged.login.registrationId);
    if (!registration) throw new Error('login without registration');
    writePage(
      res,
      askStatePage({
        action: new LtiUrls(services.config.publicUrl).launch(),
        idToken: one['id_token'] ?? '',
        state: judged.login.state,
        storageTarget: judged.login.storageTarget ?? '',
        platformOrigin: new URL(registration.authUrl).origin,
      }),
    );
    return;
  }
  if (!judged.ok) {
    // Not verified: filed under the LMS the token claims to come from, to be found by its administrator.
    const claimed = claimedSender(one['id_token']);
    await writeRefusal(res, judged.refusal, ctx, { message: claimedMessage(one['id_token']), ...claimed });
    return;
  }
  const source = verifiedSource(judged.launch);
  const recorded = await recordParties(services, judged.launch);
  if (!recorded.ok) {
    await writeRefusal(res, recorded.refusal, ctx, source);
    return;
  }
  const { parties } = recorded;
  ctx.log.info('lti launch verified', {
    registration: judged.launch.registration.id,
    organization: parties.organization.id,
    context: parties.context.id,
    message: judged.launch.messageType,
  });
  if (judged.launch.messageType === MESSAGE_TYPES.deepLinking) {
    await answerChoice(res, await startDeepLinking(services, judged.launch, parties), ctx, source);
    return;
  }
  const found = await placementFor(services, judged.launch, parties);
  if (found.kind === 'refused') {
    await writeRefusal(res, found.refusal, ctx, source);
    return;
  }
  if (found.kind === 'unknown') {
    if (parties.staff) {
      await answerChoice(res, await startLinkChoice(services, judged.launch, parties, found.resourceLinkId), ctx, source);
      return;
    }
    await writeRefusal(res, refuse(404, 'link_not_set_up', `resource link ${found.resourceLinkId} has no placement yet`), ctx, source);
    return;
  }
  // From here a launch is a launch: the ticket and the launch page (tool state, provisioning, the form).
  const ticket = await issueLaunchTicket(services, { placementId: found.placement.id, memberId: parties.member.id });
  redirect(res, ticket.launchUrl);
}

async function answerChoice(res: Response, outcome: ChoiceOutcome, ctx: RouteContext, source: RefusalSource): Promise<void> {
  if (outcome.kind === 'refused') await writeRefusal(res, outcome.refusal, ctx, source);
  else if (outcome.kind === 'redirect') redirect(res, outcome.location);
  else writePage(res, outcome.page);
}

async function choice(services: Services, req: Request, res: Response, ctx: RouteContext): Promise<void> {
  const { one, all } = await params(req);
  // The choice's registration, read before the choice may be used up, files a refusal under its LMS.
  const pending = one['key'] ? await services.store.lti.getDeepLink(one['key']) : null;
  const outcome = await continueChoice(services, { key: one['key'], app: one['app'], confirm: one['confirm'], cancel: one['cancel'], extids: all.getAll('extid') });
  await answerChoice(res, outcome, ctx, { message: 'deep_linking', registrationId: pending?.registrationId ?? null });
}

async function canvas(services: Services, _req: Request, res: Response): Promise<void> {
  res.status(200);
  res.setHeader('Cache-Control', 'public, max-age=300');
  res.json(canvasConfiguration(services.config.publicUrl));
}

export type { RenderedPage };
