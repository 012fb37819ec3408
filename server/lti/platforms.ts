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
  const send = lmsFetch(lms, 'lineitem');
  const exchange = lmsExchange(lms, 'lineitem');
  return async (organization: OrganizationRecord, known?: GradeService | null) => {
    // A score reads its school's grade service with its records (PERF-70); other callers read it here.
    const registration = known !== undefined ? known : await store.lti.findGradeService(organization.issuer, organization.client);
    if (!registration) return null;
    return {
      tokenUrl: registration.tokenUrl,
      clientId: registration.clientId,
      ...(registration.tokenAudience !== null ? { assertionAudience: registration.tokenAudience } : {}),
      lineItemUrl: (_contextId, ref) => ref,
      transport: (url) => url,
      fetch: send,
      exchange,
    };
  };
}
