/**
 * Grades toward real LMSes (decision LTI-16): the score publisher's `schools`. A school whose (issuer,
 * client) has an active registration publishes to that registration's token endpoint with its client
 * ID; the line item is the absolute URL the launch's AGS claim gave the placement; every request passes
 * the endpoint URL rules.
 */
import type { GradeService, LmsPlatform } from '../scores/lms-registry.js';
import type { OrganizationRecord, Store } from '../store/index.js';
import type { LmsHttp } from './http.js';
import { lmsExchange, lmsFetch } from './http.js';

export function ltiPlatforms(store: Pick<Store, 'lti'>, lms: LmsHttp): (organization: OrganizationRecord) => Promise<LmsPlatform | null> {
  // Made once, not per score (PERF-46).
  const senders = { fetch: lmsFetch(lms, 'lineitem'), exchange: lmsExchange(lms) };
  return async (organization: OrganizationRecord, known?: GradeService | null) => {
    // A score reads its school's grade service with its records (PERF-70); other callers read it here.
    const registration = known !== undefined ? known : await store.lti.findGradeService(organization.issuer, organization.client);
    return registration ? platformOf(registration, lms, senders) : null;
  };
}

/** A registration's LMS as AGS requests need it (the publisher's, and line-item creation's, LTI-122). */
export function platformOf(
  registration: GradeService,
  lms: LmsHttp,
  senders: Pick<LmsPlatform, 'fetch' | 'exchange'> = { fetch: lmsFetch(lms, 'lineitem'), exchange: lmsExchange(lms) },
): LmsPlatform {
  return {
    tokenUrl: registration.tokenUrl,
    clientId: registration.clientId,
    ...(registration.tokenAudience !== null ? { assertionAudience: registration.tokenAudience } : {}),
    lineItemUrl: (_contextId, ref) => ref,
    transport: (url) => url,
    ...senders,
  };
}
