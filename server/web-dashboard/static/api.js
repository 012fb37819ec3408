// The dashboard API (`/dashboard/v1`, openapi/dashboard/) on this page's own origin. Shapes are those of
// generated/dashboard/types.ts; errors are the RFC 9457 envelope, whose `detail` is what the person sees.
import { getToken } from './session.js';

/** @typedef {import('../../../generated/dashboard/types.ts').components['schemas']} Schemas */

export class ApiError extends Error {
  constructor(status, detail, code, hint) {
    super(detail);
    this.name = 'ApiError';
    this.status = status;
    this.detail = detail;
    this.code = code;
    /** What the person can do about it, when the service says (decision OPS-43). */
    this.hint = hint;
  }
}

/**
 * Calls one operation and answers its parsed JSON body (undefined for 204), or throws an ApiError whose
 * `detail` is the service's own words.
 */
export async function api(method, path, { body, query } = {}) {
  const url = new URL(`/dashboard/v1${path}`, window.location.origin);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, String(value));
  }
  const headers = { Accept: 'application/json, application/problem+json' };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (err) {
    throw new ApiError(0, `The service did not answer (${err instanceof Error ? err.message : String(err)}).`, 'network_error');
  }
  const text = await response.text();
  let parsed;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const detail = typeof parsed?.detail === 'string' ? parsed.detail : `The service answered HTTP ${response.status}.`;
    const hint = typeof parsed?.hint === 'string' ? parsed.hint : undefined;
    throw new ApiError(response.status, detail, typeof parsed?.code === 'string' ? parsed.code : 'unexpected_response', hint);
  }
  return parsed;
}

/** The message to show for anything a handler caught. */
export function detailOf(err) {
  if (err instanceof ApiError) return err.hint === undefined ? err.detail : `${err.detail}. Hint: ${err.hint}.`;
  return err instanceof Error ? err.message : String(err);
}

export const appPath = (appId) => `/apps/${encodeURIComponent(appId)}`;
