/**
 * The error envelope of every answer that is not a success: RFC 9457 `application/problem+json`
 * (decision NS-15). Handlers throw `Problem`; the app turns it into the body and headers.
 */
import { STATUS_CODES } from 'node:http';
import { schemas } from '../../generated/2026-09-21/schemas.js';

/** How many field errors an answer lists at most (the spec's `Problem.errors.maxItems`, decision H-23). */
export const PROBLEM_MAX_ERRORS: number = schemas.Problem.properties.errors.maxItems;

export interface ProblemFieldError {
  /** JSON Pointer into the request, e.g. `/body/score`, `/path/key`. */
  path: string;
  message: string;
}

export interface ProblemOptions {
  errors?: readonly ProblemFieldError[];
  headers?: Readonly<Record<string, string>>;
  cause?: unknown;
  /** What a person can do about it (decision OPS-43); never the contract's message, which is `detail`. */
  hint?: string;
}

export interface ProblemBody {
  type: 'about:blank';
  title: string;
  status: number;
  detail: string;
  code: string;
  request_id?: string;
  errors?: ProblemFieldError[];
  hint?: string;
}

const CODE_PATTERN = /^[a-z][a-z0-9_]*$/;

export class Problem extends Error {
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  readonly errors: readonly ProblemFieldError[] | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly hint: string | undefined;

  constructor(status: number, code: string, detail: string, options: ProblemOptions = {}) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    if (!Number.isInteger(status) || status < 400 || status > 599) {
      throw new RangeError(`a problem's status is 4xx or 5xx, not ${status}`);
    }
    // The code is part of the public envelope schema; a typo here would fail response validation far away.
    if (!CODE_PATTERN.test(code)) throw new RangeError(`problem code ${JSON.stringify(code)} is not snake_case`);
    this.name = 'Problem';
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.errors = options.errors;
    this.headers = options.headers ?? {};
    this.hint = options.hint;
  }

  toBody(requestId?: string): ProblemBody {
    const body: ProblemBody = {
      type: 'about:blank',
      title: reasonPhrase(this.status),
      status: this.status,
      detail: this.detail,
      code: this.code,
    };
    if (requestId !== undefined) body.request_id = requestId;
    if (this.errors !== undefined && this.errors.length > 0) body.errors = this.errors.slice(0, PROBLEM_MAX_ERRORS).map((e) => ({ ...e }));
    if (this.hint !== undefined) body.hint = this.hint;
    return body;
  }
}

export function isProblem(value: unknown): value is Problem {
  return value instanceof Problem;
}

export function reasonPhrase(status: number): string {
  // 422's phrase changed name across RFCs; RFC 9110 calls it "Unprocessable Content".
  if (status === 422) return 'Unprocessable Content';
  if (status === 413) return 'Content Too Large';
  return STATUS_CODES[status] ?? 'Error';
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** The answer to anything unexpected: the detail never leaks internals; the log has them. */
export function internalError(cause?: unknown): Problem {
  return new Problem(500, 'internal_error', 'internal error', cause === undefined ? {} : { cause });
}
