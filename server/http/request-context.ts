/**
 * The first step of every request: the request id (`Request-Id`, decision NS-15), the contract headers
 * every response carries (NS-18), and one structured access-log line when the response is done.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from './log.js';
import type { ClientAddressOf } from './client-address.js';
import type { ContractResponse } from './front.js';
import type { RequestFinished, RequestLocals } from './locals.js';

/** An incoming id is kept when it is safe to echo into headers and logs; anything else is replaced. */
const INCOMING_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{7,127}$/;

/** Random bytes drawn in batches: one `randomBytes` call per request was a visible share of a GET (PERF-22). */
const ID_BYTES = 12;
let pool = Buffer.alloc(0);
let offset = 0;

export function newRequestId(): string {
  if (offset + ID_BYTES > pool.length) {
    pool = randomBytes(ID_BYTES * 512);
    offset = 0;
  }
  const id = pool.toString('base64url', offset, offset + ID_BYTES);
  offset += ID_BYTES;
  return `req_${id}`;
}

export function acceptedRequestId(header: string | string[] | undefined): string | null {
  const value = Array.isArray(header) ? header[0] : header;
  return typeof value === 'string' && INCOMING_ID.test(value) ? value : null;
}

/**
 * What both fronts do for every request beside the id and the access line, in one place each: the client's
 * address (H-20) and the metrics' timing (OPS-10). One object per app.
 */
export interface RequestHooks {
  clientAddress: ClientAddressOf;
  /** Called once per request with what its access line says; absent when the metrics are off. */
  finished?: RequestFinished;
}


/** `Contract-Version` as the response leaves, unless a step set it: the contract that served it (NS-18). */
export function stampContractVersion<R extends ServerResponse>(res: R, servedVersionOf: (res: R) => string): void {
  if (!res.getHeader('Contract-Version')) res.setHeader('Contract-Version', servedVersionOf(res));
}

/** The one access line of a request (499 for a response the client did not wait for). */
function writeAccessLine(locals: RequestLocals, method: string | undefined, statusCode: number, aborted: boolean, started: bigint): void {
  const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
  const path = locals.route ?? 'unmatched';
  const status = aborted ? 499 : statusCode;
  const fields = {
    method,
    path,
    operation: locals.operationId,
    status,
    duration_ms: Math.round(durationMs * 1000) / 1000,
    client_address: locals.clientAddress,
  };
  // The metrics' label is the operationId, else the route's template: never the path as sent (OPS-12).
  locals.finished?.(method, locals.operationId ?? path, status, durationMs / 1000);
  if (aborted) locals.log.warn('request aborted by the client', fields);
  else locals.log.info('request', fields);
}

function finished(this: ContractResponse): void {
  if (this.logged) return;
  this.logged = true;
  writeAccessLine(this.locals as unknown as RequestLocals, this.req.method, this.statusCode, false, this.started);
}

function closed(this: ContractResponse): void {
  if (this.logged) return;
  this.logged = true;
  writeAccessLine(this.locals as unknown as RequestLocals, this.req.method, this.statusCode, !this.writableFinished, this.started);
}

/**
 * The request context of every request, the first step of the one pipeline (server/app.ts): the id, the
 * headers every response carries, the client's address and the access line, on the front's response class,
 * whose `beforeHead` sets `Contract-Version` as the head leaves (PERF-60), with listeners shared by every
 * request instead of closures made per request.
 */
export function requestContext(
  log: Logger,
  req: IncomingMessage,
  res: ContractResponse,
  beforeHead: (res: ContractResponse) => void,
  hooks: RequestHooks,
): RequestLocals {
  res.started = process.hrtime.bigint();
  res.logged = false;
  const requestId = acceptedRequestId(req.headers['request-id']) ?? newRequestId();
  // One object shape whether the metrics are on or off.
  const locals: RequestLocals = { requestId, log: log.child({ request_id: requestId }), clientAddress: hooks.clientAddress(req), finished: hooks.finished };
  res.locals = locals as unknown as Record<string, unknown>;
  res.setHeader('Request-Id', requestId);
  res.setHeader('Vary', 'Contract-Version');
  res.beforeHead = beforeHead;
  res.on('finish', finished);
  res.on('close', closed);
  return locals;
}
