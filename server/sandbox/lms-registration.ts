/**
 * The service's registration with its Sandbox LMS (decision LTI-40): made through Dynamic Registration on
 * first need, exactly as a school's administrator makes one (the LMS opens the service's `/lti/register`
 * with its OpenID configuration and a registration token), and active at once: the Sandbox's own LMS
 * needs no platform-team approval, whatever `LMS_AUTO_ACTIVATE` says for schools.
 */
import { randomUUID } from 'node:crypto';
import type { Services } from '../http/services.js';
import type { LtiRegistrationRecord } from '../store/index.js';
import { SandboxLmsClient, SandboxLmsControlError } from './lms-client.js';
import type { SandboxLmsHost } from './lms-host.js';

/** One registration per LMS host: two first needs at once make one registration. */
const known = new WeakMap<SandboxLmsHost, Promise<LtiRegistrationRecord>>();

export function sandboxLmsClient(services: Pick<Services, 'sandboxLms'>): SandboxLmsClient {
  const host = services.sandboxLms;
  return new SandboxLmsClient(host.issuer(), host.controlToken, (url) => host.transport(url));
}

/**
 * The stored registration this LMS knows. On SQLite one process owns both stores, so a stored one whose
 * client the LMS does not know (its file was lost) is set inactive, never used: its grades and launches
 * would only meet an LMS that refuses them. On PostgreSQL it is left alone (decision LTI-41): the LMS's
 * store is the shared database (LTI-80), so one it does not know was made by an instance whose LMS lost
 * its tables, and setting it inactive here would race the instance that registered again.
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

/**
 * Registers, or finds the registration; any failure on the way (the LMS's store cannot be opened, its
 * registration page or ours refused) is the LMS being unavailable to the caller, a 503 through `withLms`,
 * never a 500: nothing the dashboard caller sent caused it.
 */
async function register(services: Services): Promise<LtiRegistrationRecord> {
  try {
    return await registerOnce(services);
  } catch (err) {
    if (err instanceof SandboxLmsControlError) throw err;
    services.log.error('the service could not register with its Sandbox LMS', { err });
    throw new SandboxLmsControlError(503, 'registration', err instanceof Error ? err.message : String(err));
  }
}

async function registerOnce(services: Services): Promise<LtiRegistrationRecord> {
  const host = services.sandboxLms;
  await host.ready();
  const issuer = host.issuer();
  let registration = (await knownRegistration(services, issuer)) ?? (await underClaim(services, issuer, () => registerThroughLms(services, issuer)));
  if (registration.status !== 'active') registration = (await services.store.lti.setStatus(registration.id, 'active')) ?? registration;
  return registration;
}

/** Dynamic Registration with the Sandbox LMS, unless the registration is there by now. */
async function registerThroughLms(services: Services, issuer: string): Promise<LtiRegistrationRecord> {
  const found = await knownRegistration(services, issuer);
  if (found) return found;
  const initiated = await sandboxLmsClient(services).initiateRegistration(`${new URL(services.config.publicUrl).origin}/lti/register`);
  // The administrator's window, opened by this process: the service's own registration page does the rest.
  const res = await fetch(services.sandboxLms.transport(initiated.url), { signal: AbortSignal.timeout(20_000) });
  const page = await res.text();
  if (!res.ok) throw new Error(`the service's registration with its Sandbox LMS failed (${res.status}): ${page.slice(0, 300)}`);
  const registration = await knownRegistration(services, issuer);
  if (!registration) throw new Error('the Sandbox LMS registration was not stored');
  services.log.info('sandbox lms registered through dynamic registration', { issuer, client: registration.clientId });
  return registration;
}

/** How long an instance waits for another's registration with the Sandbox LMS before it gives up (a 503). */
const CLAIM_WAIT_MS = 60_000;
/** A claim older than this is an instance that died while registering: another may take it over. */
const CLAIM_TTL_MS = 60_000;
const CLAIM_POLL_MS = 200;

/**
 * Registers under a claim in the service's store (decision LTI-81): instances on one PostgreSQL database
 * whose first needs race would each make a registration, since the in-flight guard is per process. The claim
 * is a row named after the issuer (`sandbox_lms_claims`): the instance whose INSERT (or whose take-over of an
 * expired claim) changes a row looks again and registers, then deletes it; another finds the row taken,
 * looks at the LMS's registrations until the winner's is there, and uses it. A row, not a lock held in a
 * transaction: the registration itself runs through this process's own HTTP endpoints and writes through the
 * store, which no statement may do from inside a transaction of the same store. Both dialects take the same
 * path (on SQLite one process owns the store, so the in-process guard already makes it one).
 */
async function underClaim(services: Services, issuer: string, register: () => Promise<LtiRegistrationRecord>): Promise<LtiRegistrationRecord> {
  const db = services.store.driver;
  const name = `registration ${issuer}`;
  const holder = randomUUID();
  const deadline = Date.now() + CLAIM_WAIT_MS;
  for (;;) {
    // Wall-clock time: the claim is read by other processes, not by this one's clock.
    const now = Date.now();
    const won =
      (await db.run('INSERT INTO sandbox_lms_claims (name, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING', [name, holder, now + CLAIM_TTL_MS])).changes === 1 ||
      (await db.run('UPDATE sandbox_lms_claims SET holder = ?, expires_at = ? WHERE name = ? AND expires_at < ?', [holder, now + CLAIM_TTL_MS, name, now])).changes === 1;
    if (won) {
      try {
        return await register();
      } finally {
        // A claim left behind (the store failed just now) expires, and the next need takes it over.
        await db.run('DELETE FROM sandbox_lms_claims WHERE name = ? AND holder = ?', [name, holder]).catch((err: unknown) => services.log.warn('a Sandbox LMS registration claim was not released', { err }));
      }
    }
    const found = await knownRegistration(services, issuer);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`another instance has been registering with the Sandbox LMS for ${CLAIM_WAIT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, CLAIM_POLL_MS));
  }
}

/**
 * The registration, found or made once per LMS host (decision LTI-44): later needs of the process reuse it
 * with no call to the LMS. A host made anew (a test swapping the LMS whose store was lost) is asked again;
 * a failed attempt is not remembered.
 */
export function ensureSandboxRegistration(services: Services): Promise<LtiRegistrationRecord> {
  const host = services.sandboxLms;
  let pending = known.get(host);
  if (!pending) {
    pending = register(services);
    known.set(host, pending);
    pending.catch(() => {
      if (known.get(host) === pending) known.delete(host);
    });
  }
  return pending;
}

/** Forgets the registration found for the current host: the next need asks the LMS again (a lost store). */
export function forgetSandboxRegistration(services: Pick<Services, 'sandboxLms'>): void {
  known.delete(services.sandboxLms);
}
