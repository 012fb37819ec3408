/**
 * Provision requests (contract, Provision URL; decisions NS-06, GAP-16 to GAP-19): a server-to-server
 * form POST of a signed provision token when a course or a location needs setting up, and as soon as a
 * placement is confirmed. The tool answers 2xx and later PUTs the URLs of the `provision` claim
 * (`server/contracts/2026-09-21/provision.ts`), which is what makes a level provisioned.
 *
 * - A level already provisioned is never asked again (GAP-19).
 * - A blank `provision_url` provisions the level on first need, with no request (GAP-17); so does a pin
 *   whose contract has no provision requests (2026-08-19, S-40), whatever URL is stored (S-41).
 * - A request waits at most 10 s and follows no redirect; any 2xx is accepted (GAP-16). A failure leaves
 *   the level unprovisioned; the next launch or placement that needs it asks again if the last request
 *   failed or is older than 60 s. The store's `claimRequest` makes that decision atomically, so two
 *   launches racing into an unprovisioned course send one request.
 */
import type { Services } from '../http/services.js';
import { PROVISION_MAX_BODY_BYTES } from '../outbound/index.js';
import type { ToolOutcome } from '../outbound/index.js';
import type { AppRecord, ContextRecord, PlacementEntry, ProvisioningLevel, ProvisioningRecord, ProvisioningState } from '../store/index.js';
import { PROVISION_RETRY_AFTER_MS } from '../store/index.js';
import { pinHasRequest } from '../launches/service.js';
import { assertAvailable } from './availability.js';

export interface LevelOutcome {
  state: ProvisioningState;
  /** A provision request was sent by this call. */
  sent: boolean;
  /** Why the last request failed; null unless `state` is `failed`. */
  error: string | null;
}

export interface ProvisioningOutcome {
  context: LevelOutcome;
  /** Null when only the course level was asked for. */
  location: LevelOutcome | null;
  /** The first failure among the levels, for the placement's `provisioning.error`. */
  error: string | null;
}

export const PROVISION_MESSAGES = {
  timeout: 'app connection timeout',
  connection: 'app connection failure',
  redirect: 'the app redirected the provision request; provision_url must name the endpoint itself',
  status: (status: number) => `app failed to accept the provision request (HTTP ${status})`,
} as const;

/** The failure text of a provision request, in the words of the locations table where they fit; null for accepted. */
export function provisionFailure(outcome: ToolOutcome): string | null {
  switch (outcome.kind) {
    case 'response':
      return outcome.status >= 200 && outcome.status <= 299 ? null : PROVISION_MESSAGES.status(outcome.status);
    case 'too_large':
      // The body of an accepted request is never read; its size does not matter.
      return outcome.status >= 200 && outcome.status <= 299 ? null : PROVISION_MESSAGES.status(outcome.status);
    case 'redirect':
      return PROVISION_MESSAGES.redirect;
    case 'timeout':
      return PROVISION_MESSAGES.timeout;
    case 'connection_failure':
      return PROVISION_MESSAGES.connection;
    case 'rule_failure':
      return `${PROVISION_MESSAGES.connection}: ${outcome.message}`;
  }
}

/**
 * Whether this tool's levels are provisioned when first needed, with no request: no `provision_url`
 * (GAP-17), or a pin with no provision requests (S-40, S-41). A level so provisioned stays provisioned if
 * the URL or the pin changes later, as any provisioned level does (GAP-19).
 */
export function provisionsOnFirstNeed(app: AppRecord): boolean {
  return app.provisionUrl === null || app.provisionUrl.trim() === '' || !pinHasRequest(app.contractVersion, 'provision');
}

function levelOf(record: ProvisioningRecord | null, sent: boolean): LevelOutcome {
  const state: ProvisioningState = record?.state ?? 'pending';
  return { state, sent, error: state === 'failed' ? (record?.lastError ?? null) : null };
}

export interface ProvisionLevelInput {
  app: AppRecord;
  context: ContextRecord;
  /** Location level when set; course level otherwise. */
  locationId?: string | null;
  /** The placement's copy of the entry, carried in a location-level request's `location` claim. */
  entry?: PlacementEntry;
}

/** Makes sure one level is provisioned or asked for; sends the request when GAP-16 says to. */
export async function provisionLevel(services: Services, input: ProvisionLevelInput): Promise<LevelOutcome> {
  const { app, context } = input;
  const { store } = services;
  const level: ProvisioningLevel =
    input.locationId === undefined || input.locationId === null
      ? { appId: app.id, contextId: context.id }
      : { appId: app.id, contextId: context.id, locationId: input.locationId };
  const current = await store.provisioning.get(level);
  if (current?.state === 'provisioned') return levelOf(current, false);
  // A suspended tool gets no request at all, a draft one only in its Sandbox (GAP-25).
  assertAvailable(app, context);
  const url = app.provisionUrl;
  if (url === null || provisionsOnFirstNeed(app)) {
    return levelOf(await store.provisioning.markProvisioned(level), false);
  }
  const claim = await store.provisioning.claimRequest(level, { retryAfterMs: PROVISION_RETRY_AFTER_MS });
  if (!claim.send) return levelOf(claim.record, false);

  let failure: string | null;
  try {
    const request = await services.launches.provisionRequest({
      appId: app.id,
      contextId: context.id,
      locationId: input.locationId ?? null,
      ...(input.entry ? { entry: input.entry } : {}),
    });
    const outcome = await services.outbound.postForm({
      url,
      field: 'provision_url',
      form: { launch_data: request.token },
      timeoutMs: services.config.provisionTimeoutMs,
      maxBodyBytes: PROVISION_MAX_BODY_BYTES,
    });
    failure = provisionFailure(outcome);
  } catch (err) {
    // The claim says a request is in flight; never leave it so when none went out.
    services.log.error('provision request could not be sent', { err, app: app.id, context: context.id });
    failure = 'the provision request could not be sent';
  }
  if (failure !== null) {
    services.log.info('provision request failed', { app: app.id, context: context.id, location: input.locationId ?? null, failure });
    return levelOf(await store.provisioning.markFailed(level, failure), true);
  }
  // The tool may already have PUT the level while answering.
  return levelOf(await store.provisioning.get(level), true);
}

export interface EnsureProvisionedInput {
  app: AppRecord;
  context: ContextRecord;
  /** Also the location level of this location. */
  locationId?: string | null;
  entry?: PlacementEntry;
}

/**
 * The levels a placement (or a launch of it) needs: the course, then the location in that course, one
 * request after the other, each waiting for its answer.
 */
export async function ensureProvisioned(services: Services, input: EnsureProvisionedInput): Promise<ProvisioningOutcome> {
  const context = await provisionLevel(services, { app: input.app, context: input.context });
  const location =
    input.locationId === undefined || input.locationId === null
      ? null
      : await provisionLevel(services, {
          app: input.app,
          context: input.context,
          locationId: input.locationId,
          ...(input.entry ? { entry: input.entry } : {}),
        });
  return { context, location, error: context.error ?? location?.error ?? null };
}

/** Whether every level of the outcome is provisioned (a launch may go to the tool). */
export function isProvisioned(outcome: ProvisioningOutcome): boolean {
  return outcome.context.state === 'provisioned' && (outcome.location === null || outcome.location.state === 'provisioned');
}
