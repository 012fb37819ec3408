// The one way the tool-side helpers call the service: the URL exactly as the claims gave it, the
// `api.token` (or API key) as the bearer `token`, JSON in, and `{data, error, response}` out, with
// `error` the service's envelope like the typed clients'.

import type { ContractVersion } from '../client-types.js';
import { readProblem, type Problem } from '../problem.js';

/** openapi-fetch's result shape: `data` on success, `error` (the envelope) otherwise. */
export type ToolResult<T> =
  | { data: T; error?: never; response: Response }
  | { data?: never; error: Problem; response: Response };

export interface ToolRequestOptions {
  /**
   * Sent as `Contract-Version`. Omitted, the contract the tool is pinned to applies
   * (decision NS-18), which is what a tool wants unless it is trying out another contract.
   */
  contractVersion?: ContractVersion;
  /** Replaces `globalThis.fetch`. */
  fetch?: typeof globalThis.fetch;
}

export const JSON_ACCEPT = 'application/json, application/problem+json';

export function baseHeaders(token: string | null, options: ToolRequestOptions): Headers {
  const headers = new Headers({ Accept: JSON_ACCEPT });
  if (token !== null) headers.set('Authorization', `Bearer ${token}`);
  if (options.contractVersion !== undefined) headers.set('Contract-Version', options.contractVersion);
  return headers;
}

export interface CallInit {
  method: 'GET' | 'PUT' | 'PATCH' | 'POST' | 'DELETE';
  token: string | null;
  /** A JSON body; `undefined` sends none. */
  json?: unknown;
}

/** Success bodies: JSON when there is one, `undefined` for 204 and other empty answers. */
async function readData(response: Response): Promise<unknown> {
  if (response.status === 204 || response.status === 205) {
    await response.body?.cancel();
    return undefined;
  }
  const text = await response.text();
  return text === '' ? undefined : (JSON.parse(text) as unknown);
}

export async function callJson<T>(url: string, init: CallInit, options: ToolRequestOptions): Promise<ToolResult<T>> {
  const headers = baseHeaders(init.token, options);
  let body: string | undefined;
  if (init.json !== undefined) {
    headers.set('Content-Type', 'application/json');
    body = JSON.stringify(init.json);
  }
  const doFetch = options.fetch ?? globalThis.fetch;
  const response = await doFetch(url, { method: init.method, headers, ...(body !== undefined ? { body } : {}) });
  if (!response.ok) return { error: await readProblem(response), response };
  return { data: (await readData(response)) as T, response };
}

export function requireUrl(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '') throw new TypeError(`${what} must be the URL given in the claims`);
  return value;
}

export function requireToken(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '') throw new TypeError(`${what} must be a non-empty string`);
  return value;
}
