/**
 * The service's LMS-facing side (issue 13, decisions LTI-01..): the service as one LTI 1.3 tool toward
 * every school's LMS. It knows no Sandbox; `server/app.ts` builds it into `services.lti` and mounts its
 * routes (`ltiRoutes`).
 */
import type { Clock } from '../store/index.js';
import type { ToolHttpClient } from '../outbound/index.js';
import { LmsHttp } from './http.js';
import type { LmsRequest } from './http.js';
import { PlatformKeys } from './platform-keys.js';
import type { OwnLms } from './urls.js';

export interface LtiServices {
  /** Calls to LMS URLs under the endpoint URL rules. */
  lms: LmsHttp;
  /** The LMSes' signing keys, cached per kid. */
  keys: PlatformKeys;
}

declare module '../http/services.js' {
  interface Services {
    lti: LtiServices;
  }
}

export function createLtiServices(deps: {
  outbound: Pick<ToolHttpClient, 'check'>;
  clock: Clock;
  ownLms?: OwnLms;
  /** Times each LMS call (the metrics, OPS-10). */
  observe?: (req: LmsRequest, seconds: number) => void;
}): LtiServices {
  const lms = new LmsHttp(deps.outbound, deps.ownLms, deps.observe);
  return { lms, keys: new PlatformKeys(lms, deps.clock) };
}

export { ltiRoutes } from './mount.js';
export { ltiPlatforms } from './platforms.js';
