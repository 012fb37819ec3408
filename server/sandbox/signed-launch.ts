/**
 * The signed launch of a Sandbox placement as data (decisions OPS-01, LTI-90 to LTI-93): the service does,
 * on the server, what a browser does with the trial user's launch link. It asks its Sandbox LMS for the
 * placement's launch URL as that person, then follows the chain over real HTTP on its own origin (the
 * transport of LTI-40), with a cookie jar for the login's state cookie: the LMS's launch URL, the service's
 * OIDC login, the LMS's authorization endpoint (whose form_post carries the id_token the LMS signs), and the
 * service's `/lti/launch`, which validates it (signature, nonce, state) and redirects to the launch page.
 * There, instead of reading the page's HTML, it runs the launch page's own logic on the page's ticket
 * (`deliverLaunch`) and answers the form the page would POST to the tool.
 */
import { schemas } from '../../generated/dashboard/schemas.js';
import { fillMessage } from '../../rules/messages.js';
import type { Logger } from '../http/log.js';
import { Problem } from '../http/problem.js';
import type { Services } from '../http/services.js';
import type { DeliveredLaunch } from '../launch-page/launch.js';
import { deliverLaunch } from '../launch-page/launch.js';
import { LAUNCH_PAGE_PATH } from '../launch-page/mount.js';
import type { AppRecord, ContextRecord, OrganizationRecord, PlacementRecord } from '../store/index.js';
import { ensureSandbox } from './courses.js';
import type { SandboxRole } from './trial-people.js';
import { trialUserExternalId } from './trial-people.js';
import { sandboxPlacement } from './flow.js';
import { assertSandboxOpen } from './gate.js';
import { lmsAnswer } from './controls/scope.js';
import { SandboxLmsControlError } from './lms-client.js';
import { ensureLmsLink, lmsProblem, withLms } from './lms-courses.js';
import { sandboxLmsUnavailable } from './lms-host.js';
import { sandboxLmsClient } from './lms-registration.js';

/** A browser's chain is four steps (LMS launch, login, authorization, launch); a few more are never needed. */
const MAX_STEPS = 8;
/** Each step is a request to this process; one that takes longer than this is the LMS or the service stuck. */
const STEP_TIMEOUT_MS = 10_000;
/** The service's own LTI routes a launch passes (decision LTI-02). */
const LTI_PATHS: ReadonlySet<string> = new Set(['/lti/login', '/lti/launch']);

export interface SignedLaunchContext {
  requestId: string;
  log: Logger;
}

/**
 * The signed launch a trial user's launch of the placement sends. Whatever stops the launch answers 409:
 * the LMS refusing the person (`launch_lms_refused`), a refusal page on the LTI path (`launch_lti_refused`,
 * the page's words), or the launch page's own stops (`launch_<page kind>`, the page's words).
 */
export async function signedSandboxLaunch(
  services: Services,
  app: AppRecord,
  placementId: string,
  role: SandboxRole,
  ctx: SignedLaunchContext,
): Promise<DeliveredLaunch> {
  // The Sandbox first: its first need may move the placement's course into the LMS school (LTI-53).
  const { school } = await ensureSandbox(services, app.id);
  const { placement, context } = await sandboxPlacement(services, app, placementId);
  assertSandboxOpen(app);
  const launchUrl = await launchUrlOf(services, app.id, school, placement, context, role);
  const ticket = await followToLaunchPage(services, launchUrl, ctx.log);
  const outcome = await deliverLaunch(services, ticket, ctx);
  if ('page' in outcome) {
    const { page } = outcome;
    // The chain just reached the launch page for a placement the guard found, so only the tool's state or
    // the launch's conditions (callback URL, provisioning) can stop it: a conflict, in the page's words.
    throw new Problem(409, `launch_${page.kind}`, page.message ?? `the launch cannot happen now (${page.kind})`);
  }
  return outcome.launch;
}

/**
 * The URL a browser's launch of the placement starts at: the LMS's launch URL of the placement's resource
 * link for the trial user (LTI-45). The LMS refusing to launch that person (not enrolled in the course) is
 * a 409 in the LMS's words, as nothing is wrong with the LMS. Every Sandbox course is in this LMS: the
 * first need moves older ones into it (LTI-53), which `signedSandboxLaunch` asks for before anything else
 * and whose school it passes.
 */
async function launchUrlOf(
  services: Services,
  appId: string,
  school: OrganizationRecord,
  placement: PlacementRecord,
  context: ContextRecord,
  role: SandboxRole,
): Promise<string> {
  const { link } = await withLms(services, appId, () => ensureLmsLink(services, school, context, placement));
  try {
    return (await sandboxLmsClient(services).launch(link.id, trialUserExternalId(role))).url;
  } catch (err) {
    if (err instanceof SandboxLmsControlError && err.status >= 400 && err.status < 500 && err.status !== 401 && err.status !== 404) {
      throw new Problem(409, 'launch_lms_refused', fillMessage(schemas.SandboxLmsCourse['x-messages'].lms_refused, { answer: lmsAnswer(err.answer) }));
    }
    throw lmsProblem(services, appId, err);
  }
}

interface Step {
  url: URL;
  /** A form the previous page posts (the LMS's form_post), or null for a GET. */
  form: URLSearchParams | null;
}

/**
 * Follows a launch link as a browser would, to the launch page's ticket. Only URLs of the service's own
 * public origin are followed, and only its LMS's paths and its LTI routes: the chain is the service talking
 * to itself, so anything else is refused rather than fetched.
 */
async function followToLaunchPage(services: Services, launchUrl: string, log: Logger): Promise<string> {
  const origin = new URL(services.config.publicUrl).origin;
  const lmsPath = new URL(services.sandboxLms.issuer()).pathname;
  const jar = new CookieJar();
  let step: Step = { url: new URL(launchUrl), form: null };
  for (let n = 0; n < MAX_STEPS; n += 1) {
    const { url, form } = step;
    const where = stepName(url, lmsPath);
    const ticket = launchPageTicket(url, origin);
    if (ticket !== null) return ticket;
    if (url.origin !== origin || !(LTI_PATHS.has(url.pathname) || url.pathname === lmsPath || url.pathname.startsWith(`${lmsPath}/`))) {
      log.error('the signed launch was sent off the LTI path', { step: n, to: url.origin === origin ? url.pathname : url.origin });
      throw sandboxLmsUnavailable();
    }
    let res: Response;
    let body: string;
    try {
      const cookie = jar.header(url.pathname);
      res = await fetch(services.sandboxLms.transport(url.href), {
        method: form ? 'POST' : 'GET',
        redirect: 'manual',
        headers: {
          ...(cookie !== null ? { Cookie: cookie } : {}),
          ...(form ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}),
        },
        ...(form ? { body: form.toString() } : {}),
        signal: AbortSignal.timeout(STEP_TIMEOUT_MS),
      });
      body = await res.text();
    } catch (err) {
      log.error('the signed launch could not take a step of the LTI path', { step: where, err });
      throw sandboxLmsUnavailable(err);
    }
    jar.take(res.headers.getSetCookie());
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location !== null) {
      step = { url: new URL(location, url), form: null };
      continue;
    }
    const posted = res.status === 200 ? formOf(body) : null;
    if (posted) {
      step = { url: new URL(posted.action, url), form: posted.fields };
      continue;
    }
    // A page that is neither a redirect nor a form: the launch stops here, as it would in a browser.
    const report = res.headers.get('request-id');
    if (res.status >= 500) {
      log.error('the LTI path failed during a signed launch', { step: where, status: res.status, report });
      throw sandboxLmsUnavailable();
    }
    const words = wordsOf(body);
    if (res.status === 200 || words === null) {
      log.error('the LTI path answered a page the signed launch cannot follow', { step: where, status: res.status, report });
      throw sandboxLmsUnavailable();
    }
    log.info('signed launch refused on the LTI path', { step: where, status: res.status, report });
    throw new Problem(409, 'launch_lti_refused', words);
  }
  log.error('the signed launch did not reach the launch page', { steps: MAX_STEPS });
  throw sandboxLmsUnavailable();
}

/** The ticket of a launch page URL (`{PUBLIC_URL}/launch/{ticket}`), where a browser's chain ends. */
function launchPageTicket(url: URL, origin: string): string | null {
  if (url.origin !== origin || !url.pathname.startsWith(`${LAUNCH_PAGE_PATH}/`)) return null;
  const segment = url.pathname.slice(LAUNCH_PAGE_PATH.length + 1);
  if (segment === '' || segment.includes('/')) return null;
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** A step for the log, without the LMS's message hint (a credential until used) or any query. */
function stepName(url: URL, lmsPath: string): string {
  return url.pathname.startsWith(`${lmsPath}/launch/`) ? `${lmsPath}/launch/{hint}` : url.pathname;
}

/**
 * The state cookie of the login, kept as a browser keeps it: by name, sent to the paths it names. Every
 * request goes to this process's own origin, so the cookie's domain and `Secure` add nothing here.
 */
class CookieJar {
  private readonly cookies = new Map<string, { value: string; path: string }>();

  take(setCookies: readonly string[]): void {
    for (const line of setCookies) {
      const [pair = '', ...attributes] = line.split(';');
      const at = pair.indexOf('=');
      if (at <= 0) continue;
      const name = pair.slice(0, at).trim();
      let path = '/';
      let expired = false;
      for (const attribute of attributes) {
        const [key = '', value = ''] = attribute.split('=').map((s) => s.trim());
        if (key.toLowerCase() === 'path' && value.startsWith('/')) path = value;
        if (key.toLowerCase() === 'max-age' && Number(value) <= 0) expired = true;
      }
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, { value: pair.slice(at + 1).trim(), path });
    }
  }

  header(path: string): string | null {
    const sent = [...this.cookies].filter(([, c]) => path === c.path.replace(/\/$/, '') || path.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`));
    return sent.length === 0 ? null : sent.map(([name, c]) => `${name}=${c.value}`).join('; ');
  }
}

function unescapeHtml(text: string): string {
  return text
    .replace(/&#x([0-9a-f]+);/gi, (_m, hex: string) => String.fromCodePoint(Number.parseInt(hex, 16)))
    .replace(/&#(\d+);/g, (_m, dec: string) => String.fromCodePoint(Number(dec)))
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function attributesOf(tag: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of tag.matchAll(/([a-zA-Z_:][-a-zA-Z0-9_:.]*)\s*=\s*"([^"]*)"/g)) out.set((m[1] ?? '').toLowerCase(), unescapeHtml(m[2] ?? ''));
  return out;
}

/** The auto-submitting POST form of a page (the LMS's OIDC form_post), as a browser would submit it. */
function formOf(html: string): { action: string; fields: URLSearchParams } | null {
  const open = /<form\b[^>]*>/i.exec(html);
  if (!open) return null;
  const form = attributesOf(open[0]);
  const action = form.get('action');
  if (action === undefined || (form.get('method') ?? 'get').toLowerCase() !== 'post') return null;
  const end = html.indexOf('</form>', open.index);
  const inside = html.slice(open.index, end === -1 ? undefined : end);
  const fields = new URLSearchParams();
  for (const m of inside.matchAll(/<input\b[^>]*>/gi)) {
    const input = attributesOf(m[0]);
    const name = input.get('name');
    if (name !== undefined) fields.append(name, input.get('value') ?? '');
  }
  return { action, fields };
}

/** A refusal page's words, its heading and first paragraph, as the launch page's own messages read. */
function wordsOf(html: string): string | null {
  const text = (raw: string | undefined): string => unescapeHtml((raw ?? '').replace(/<[^>]*>/g, '')).trim();
  const heading = text(/<h1\b[^>]*>([\s\S]*?)<\/h1>/i.exec(html)?.[1]);
  const paragraph = text(/<p\b[^>]*>([\s\S]*?)<\/p>/i.exec(html)?.[1]);
  if (heading === '') return null;
  return paragraph === '' ? heading : `${heading.replace(/\.$/, '')}. ${paragraph}`;
}
