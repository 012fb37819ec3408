/**
 * Endpoint URLs a tool registered while `ALLOW_LOOPBACK_TOOLS` was on (decision H-12). With the switch
 * off they fail the URL rules at every call, so the service never calls them; at start-up each such tool
 * is logged, and the dashboard API lists the fields (`development_only_urls`).
 */
import { isDevelopmentOnlyUrl } from '../../rules/endpoint-url.js';
import type { Logger } from '../http/log.js';
import type { AppRecord, Store } from '../store/index.js';

export type EndpointField = 'callback_url' | 'provision_url' | 'locations_url';

export function developmentOnlyFields(app: Pick<AppRecord, 'callbackUrl' | 'provisionUrl' | 'locationsUrl'>): EndpointField[] {
  const fields: Array<[EndpointField, string | null]> = [
    ['callback_url', app.callbackUrl],
    ['provision_url', app.provisionUrl],
    ['locations_url', app.locationsUrl],
  ];
  return fields.filter(([, url]) => isDevelopmentOnlyUrl(url)).map(([field]) => field);
}

/** Logs every tool whose URLs only the development switch accepts, when the switch is off. */
export async function flagDevelopmentUrls(store: Pick<Store, 'apps'>, allowLoopbackTools: boolean, log: Logger): Promise<number> {
  if (allowLoopbackTools) return 0;
  let flagged = 0;
  for (const app of await store.apps.list()) {
    const fields = developmentOnlyFields(app);
    if (fields.length === 0) continue;
    flagged += 1;
    log.warn('tool endpoint URLs registered under ALLOW_LOOPBACK_TOOLS are not called while it is off', { app: app.id, fields });
  }
  return flagged;
}
