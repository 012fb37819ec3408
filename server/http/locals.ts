/**
 * What a request carries from the request context to its answer (`res.locals`): its id and logger, the
 * client's address as the trusted proxies name it (H-20), the metrics' hook (OPS-10), the credential reads
 * the dispatch and the credential step share, and the matched operation for the access line. Its own
 * module because the throttle, the fronts and the pipeline all read it.
 */
import type { Response } from 'express';
import type { CredentialStore } from '../auth/credentials.js';
import type { Logger } from './log.js';

/** The metrics' hook of a finished request: what its access line says (OPS-10). */
export type RequestFinished = (method: string | undefined, operation: string, status: number, seconds: number) => void;

export interface RequestLocals {
  requestId: string;
  log: Logger;
  /** The request's credential reads, shared by the contract dispatch and the credential step. */
  credentialStore?: CredentialStore;
  /** The client's address as the trusted proxies name it (H-20), resolved once by the request context. */
  clientAddress: string;
  /** The metrics' hook of a finished request (OPS-10), when they are on. */
  finished?: RequestFinished | undefined;
  /** The matched operation's path template, for the access log. */
  route?: string;
  operationId?: string;
}

export function requestLocals(res: Response): RequestLocals {
  return res.locals as RequestLocals;
}
