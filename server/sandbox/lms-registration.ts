/**
 * The service's registration with its Sandbox LMS (decision LTI-40): made through Dynamic Registration on
 * first need, exactly as a school's administrator makes one (the LMS opens the service's `/lti/register`
 * with its OpenID configuration and a registration token), and active at once: the Sandbox's own LMS
 * needs no platform-team approval, whatever `LMS_AUTO_ACTIVATE` says for schools.
 */
import type { Services } from '../http/services.js';
import type { LtiRegistrationRecord } from '../store/index.js';
import { SandboxLmsClient } from './lms-client.js';

/** One registration in flight per process: two first needs at once make one registration. */
const inFlight = new WeakMap<Services, Promise<LtiRegistrationRecord>>();

export function sandboxLmsClient(services: Pick<Services, 'sandboxLms'>): SandboxLmsClient {
  const host = services.sandboxLms;
  return new SandboxLmsClient(host.issuer(), host.controlToken, (url) => host.transport(url));
}

/**
 * The stored registration this LMS knows. On SQLite one process owns both stores, so a stored one whose
 * client the LMS does not know (its file was lost) is set inactive, never used: its grades and launches
 * would only meet an LMS that refuses them. On PostgreSQL it is left alone: it may be another instance's,
 * whose LMS (in memory, one per instance) knows it (decision LTI-41).
 */
async function knownRegistration(services: Services, issuer: string): Promise<LtiRegistrationRecord | null> {
  const known = new Set((await sandboxLmsClient(services).registrations()).registrations.map((r) => r.client_id));
  const ownsEveryRegistration = services.config.databaseUrl === null;
  let found: LtiRegistrationRecord | null = null;
  for (const stored of await services.store.lti.listRegistrationsByIssuer(issuer)) {
    if (known.has(stored.clientId)) {
      found ??= stored;
    } else if (ownsEveryRegistration && stored.status !== 'inactive') {
      await services.store.lti.setStatus(stored.id, 'inactive');
      services.log.warn('a Sandbox LMS registration its LMS no longer knows is set inactive', { issuer, client: stored.clientId });
    }
  }
  return found;
}

async function register(services: Services): Promise<LtiRegistrationRecord> {
  const host = services.sandboxLms;
  await host.ready();
  const issuer = host.issuer();
  let registration = await knownRegistration(services, issuer);
  if (!registration) {
    const initiated = await sandboxLmsClient(services).initiateRegistration(`${new URL(services.config.publicUrl).origin}/lti/register`);
    // The administrator's window, opened by this process: the service's own registration page does the rest.
    const res = await fetch(host.transport(initiated.url), { signal: AbortSignal.timeout(20_000) });
    const page = await res.text();
    if (!res.ok) throw new Error(`the service's registration with its Sandbox LMS failed (${res.status}): ${page.slice(0, 300)}`);
    registration = await knownRegistration(services, issuer);
    if (!registration) throw new Error('the Sandbox LMS registration was not stored');
    services.log.info('sandbox lms registered through dynamic registration', { issuer, client: registration.clientId });
  }
  if (registration.status !== 'active') registration = (await services.store.lti.setStatus(registration.id, 'active')) ?? registration;
  return registration;
}

export function ensureSandboxRegistration(services: Services): Promise<LtiRegistrationRecord> {
  let pending = inFlight.get(services);
  if (!pending) {
    pending = register(services).finally(() => inFlight.delete(services));
    inFlight.set(services, pending);
  }
  return pending;
}
