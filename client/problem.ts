// Every error the kit hands back is the service's RFC 9457 envelope (decision NS-15), so tool code
// reads `status`, `code` and `detail` the same way whatever answered: the service, a Prism mock, or a
// proxy in between that knows nothing of the envelope.

import type { components } from '../generated/2026-09-21/types.js';

/** The service's error envelope; `detail` is the contract's exact message, `code` a stable name. */
export type Problem = components['schemas']['Problem'];

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * `code` of a problem the kit made itself from an error response that was not the service's
 * envelope (an HTML page from a proxy, Prism's own validation problem, an OAuth error object).
 */
export const UNEXPECTED_RESPONSE_CODE = 'unexpected_response';

const CODE_PATTERN = /^[a-z][a-z0-9_]*$/;
const DETAIL_EXCERPT = 2000;

/** Reason phrases for the statuses an API answers with; anything else falls back to `HTTP <status>`. */
const REASON_PHRASES: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

export function reasonPhrase(status: number): string {
  return REASON_PHRASES[status] ?? `HTTP ${status}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** True for a body that already is the service's envelope. */
export function isProblem(value: unknown): value is Problem {
  return (
    isRecord(value) &&
    typeof value.status === 'number' &&
    typeof value.title === 'string' &&
    typeof value.detail === 'string' &&
    typeof value.code === 'string' &&
    CODE_PATTERN.test(value.code)
  );
}

function excerpt(text: string): string {
  const trimmed = text.trim();
  return trimmed.length > DETAIL_EXCERPT ? `${trimmed.slice(0, DETAIL_EXCERPT)}…` : trimmed;
}

function detailOf(parsed: unknown, text: string, status: number): string {
  if (isRecord(parsed)) {
    for (const key of ['detail', 'error_description', 'message', 'error', 'title']) {
      const value = parsed[key];
      if (typeof value === 'string' && value.trim() !== '') return excerpt(value);
    }
  }
  if (text.trim() !== '') return excerpt(text);
  return `the server answered HTTP ${status} with no body`;
}

/**
 * The envelope for an error response's body text. The service's own envelope passes through
 * unchanged; anything else becomes an `unexpected_response` problem whose `detail` carries the
 * most telling part of what was received.
 */
export function problemFromBody(status: number, text: string): Problem {
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (isProblem(parsed)) return parsed;
  return {
    type: 'about:blank',
    title: reasonPhrase(status),
    status,
    detail: detailOf(parsed, text, status),
    code: UNEXPECTED_RESPONSE_CODE,
  };
}

/** Reads an error response into the envelope (consumes the body). */
export async function readProblem(response: Response): Promise<Problem> {
  let text = '';
  try {
    text = await response.text();
  } catch {
    // A body cut off mid-way still has a status worth reporting.
  }
  return problemFromBody(response.status, text);
}

/**
 * The response itself when it carries the envelope, otherwise a copy whose body is the envelope
 * made by `problemFromBody`, so that openapi-fetch parses a Problem out of every error.
 */
export async function withProblemBody(response: Response): Promise<Response> {
  const text = await response.clone().text().catch(() => '');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (isProblem(parsed)) return response;
  const headers = new Headers(response.headers);
  headers.set('content-type', PROBLEM_CONTENT_TYPE);
  headers.delete('content-length');
  headers.delete('content-encoding');
  return new Response(JSON.stringify(problemFromBody(response.status, text)), {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
}
