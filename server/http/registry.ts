/**
 * Typed handlers, registered by operationId. Every type here is computed from an entry of a generated
 * `operations` interface (`generated/<api>/types.ts`), so a handler that reads a parameter the operation
 * does not have, returns a status it does not list, or a body of the wrong shape does not compile; and
 * because the app is built from a complete `Handlers<...>` object, neither does a missing or extra one.
 *
 *   import type { operations } from '../../../generated/2026-09-21/types.js';
 *   export const rowHandlers: Pick<Handlers<operations>, 'getContextRow'> = {
 *     getContextRow: withGuard(guardFn, async (ctx) => ({ status: 200, body: ... })),
 *   };
 *
 * Order of work for every request (decision GAP-23): credential (401) → the operation's guard, which
 * owns "does the URL name something" (404) and "may this principal touch it" (403) → the request
 * itself (415, 413, 400, 422 by the validator) → the handler, which owns state checks (422).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Request, Response } from 'express';
import type { RequestEpoch } from '../auth/credential-facts.js';
import type { Principal } from '../auth/principal.js';
import type { Logger } from './log.js';
import type { Services } from './services.js';

type EmptyObject = Record<string, never>;

/** Path parameters of an operation (unvalidated strings in a guard, validated in a handler). */
export type PathParams<Op> = Op extends { parameters: { path: infer P } } ? NonNullable<P> : EmptyObject;
export type QueryParams<Op> = Op extends { parameters: { query: infer Q } } ? NonNullable<Q> : EmptyObject;

type RequestBodyOf<Op> = Op extends { requestBody: infer B }
  ? B
  : Op extends { requestBody?: infer B }
    ? B | undefined
    : undefined;

/** The body type of a JSON media type (`application/json` or any `...+json`) among a content map. */
type JsonContentBody<C> = {
  [K in keyof C]: K extends 'application/json' | `${string}+json` ? C[K] : never;
}[keyof C];

type BodyFromContent<B> = B extends { content: infer C }
  ? C extends { 'multipart/form-data': unknown }
    ? // Multipart bodies are left unread: the handler streams them from the request.
      Request
    : C extends { 'application/x-www-form-urlencoded': infer F }
      ? F
      : JsonContentBody<C>
  : undefined;

/** The typed JSON (or form) body; `undefined` when optional and absent; the raw request for multipart. */
export type RequestBody<Op> = BodyFromContent<RequestBodyOf<Op>>;

type Responses<Op> = Op extends { responses: infer R } ? R : never;

export type ResponseHeaders = Readonly<Record<string, string>>;

/**
 * A response the handler returns: every status whose content is not a problem (problems are thrown as
 * `Problem`). A JSON media type (`application/json`, `...+json`) is returned as `body`; a response with
 * no content has none, and `body?: never` makes one a compile error (even `body: undefined`, under
 * exactOptionalPropertyTypes) rather than leaving it to the writer; any other media type (a download) is
 * written through `res` (`{stream: true}`).
 */
type ResultFor<R, S> = R extends { content: infer C }
  ? C extends { 'application/problem+json': unknown }
    ? never
    : [JsonContentBody<C>] extends [never]
      ? never
      : { status: S; body: JsonContentBody<C>; headers?: ResponseHeaders }
  : { status: S; body?: never; headers?: ResponseHeaders };

/** Written by the handler through `ctx.res` (streams, downloads); nothing else may be written then. */
export interface StreamedResult {
  stream: true;
}

export type HandlerResult<Op> =
  | { [S in keyof Responses<Op> & number]: ResultFor<Responses<Op>[S], S> }[keyof Responses<Op> & number]
  | StreamedResult;

export interface HandlerContext<Op> {
  operationId: string;
  params: PathParams<Op>;
  query: QueryParams<Op>;
  body: RequestBody<Op>;
  headers: IncomingHttpHeaders;
  principal: Principal;
  services: Services;
  /** Escape hatches; prefer the typed fields. */
  req: Request;
  res: Response;
  requestId: string;
  /** Carries the request id into every line. */
  log: Logger;
  /**
   * The request's credential epoch, when its guard leaves the confirmation to the handler
   * (`handlerConfirmsEpoch`, PERF-216); absent: already confirmed, or nothing to confirm.
   */
  epoch?: RequestEpoch;
}

/** What a guard sees: the request before its body has been read or validated. */
export interface GuardContext<Op> {
  operationId: string;
  method: string;
  /** Raw path segments, not yet checked against the spec's patterns. */
  params: PathParams<Op>;
  headers: IncomingHttpHeaders;
  principal: Principal;
  services: Services;
  req: Request;
  requestId: string;
  /** The client's address as the trusted proxies name it (H-20), for the audit log. */
  clientAddress: string;
  log: Logger;
  /** The request's credential epoch, when the guard `confirmsEpoch` (PERF-180); absent: nothing to confirm. */
  epoch?: RequestEpoch;
}

/**
 * Runs after authentication and before the request is validated: answers 404 for a URL that names
 * nothing of the tool and 403 for a principal that may not touch it, by throwing `Problem`. What it
 * returns is handed to the handler as `ctx.guarded`.
 */
export type Guard<Op, G = unknown> = ((ctx: GuardContext<Op>) => Promise<G>) & {
  /**
   * The guard's first statement reads the credential epoch a request took on trust and confirms it
   * through `ctx.epoch` (PERF-180); the pipeline confirms it before any other guard, with a read of its own.
   * Such a guard writes nothing before it has confirmed.
   */
  confirmsEpoch?: boolean;
  /**
   * The guard decided without a statement of its own, and the handler's first statement reads the epoch
   * beside its own rows and confirms it through `ctx.epoch` (PERF-216): such a handler writes, publishes
   * and answers nothing before it has confirmed. The pipeline keeps the body it read, so a request found
   * stale is run again from its start without reading the body twice, and confirms after the handler
   * whatever the handler left unconfirmed, before the answer.
   */
  handlerConfirmsEpoch?: boolean;
};

export type HandlerFn<Op> = (ctx: HandlerContext<Op>) => Promise<HandlerResult<Op>>;

export type Handler<Op> = HandlerFn<Op> & { guard?: Guard<Op, unknown> };

export type Handlers<Ops> = { [K in keyof Ops]: Handler<Ops[K]> };

/** Attaches a guard; the handler receives the guard's result as `ctx.guarded`. */
export function withGuard<Op, G>(
  guard: Guard<Op, G>,
  handle: (ctx: HandlerContext<Op> & { guarded: G }) => Promise<HandlerResult<Op>>,
): Handler<Op> {
  const results = new WeakMap<Request, G>();
  const fn: Handler<Op> = async (ctx) => {
    if (!results.has(ctx.req)) {
      // Called without the pipeline (a unit test): run the guard here so the handler's contract holds.
      results.set(ctx.req, await guard(guardContextOf(ctx)));
    }
    return handle({ ...ctx, guarded: results.get(ctx.req) as G });
  };
  const attached: Guard<Op, G> = async (gctx) => {
    const value = await guard(gctx);
    results.set(gctx.req, value);
    return value;
  };
  if (guard.confirmsEpoch) attached.confirmsEpoch = true;
  if (guard.handlerConfirmsEpoch) attached.handlerConfirmsEpoch = true;
  fn.guard = attached;
  return fn;
}

function guardContextOf<Op>(ctx: HandlerContext<Op>): GuardContext<Op> {
  return {
    operationId: ctx.operationId,
    method: ctx.req.method,
    params: ctx.params,
    headers: ctx.headers,
    principal: ctx.principal,
    services: ctx.services,
    req: ctx.req,
    requestId: ctx.requestId,
    clientAddress: (ctx.res?.locals as { clientAddress?: string } | undefined)?.clientAddress ?? ctx.req.socket?.remoteAddress ?? 'unknown',
    log: ctx.log,
  };
}

/**
 * Writes a handler's result. JSON goes through `res.json` so the response validator sees it; `mediaType`
 * is the spec's media type of that response (e.g. `application/vnd.ims.lis.v2.lineitem+json`).
 *
 * `direct` (no response validator armed on `res.json`): a plain 200 or 201 is written as one string with
 * exactly the headers `res.json` would set (PERF-28). Express's `send` converted the text to a Buffer,
 * parsed and re-formatted the Content-Type and judged freshness on every answer; a string end also lets
 * Node write the head and the body in one piece. A conditional request, whose freshness `send` judges, and
 * every other status still go through `res.json`.
 */
export function writeResult(
  res: Response,
  result: { stream: true } | { status: number; body?: unknown; headers?: ResponseHeaders },
  mediaType?: string,
  options: { direct?: boolean } = {},
): void {
  if ('stream' in result) return;
  if (result.headers) {
    for (const [name, value] of Object.entries(result.headers)) res.setHeader(name, value);
  }
  res.status(result.status);
  if ('body' in result && result.body !== undefined) {
    const typed = res.getHeader('Content-Type') !== undefined;
    if (mediaType && mediaType !== 'application/json' && !typed) {
      res.setHeader('Content-Type', `${mediaType}; charset=utf-8`);
    }
    if (options.direct === true && (result.status === 200 || result.status === 201) && !typed && !isConditional(res.req)) {
      const text = JSON.stringify(result.body);
      if (!res.hasHeader('Content-Type')) res.setHeader('Content-Type', 'application/json; charset=utf-8');
      res.setHeader('Content-Length', Buffer.byteLength(text));
      res.end(text);
      return;
    }
    res.json(result.body);
  } else {
    res.end();
  }
}

function isConditional(req: Request): boolean {
  const headers = req.headers;
  return headers['if-none-match'] !== undefined || headers['if-modified-since'] !== undefined;
}
