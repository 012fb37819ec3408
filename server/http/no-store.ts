/**
 * Every answer to a request that carries a credential is private to that caller: rows, file metadata and
 * signed URLs, grade attempts, the dashboard API. `Cache-Control: no-store` keeps browsers, proxies and
 * shared caches from keeping any of it (H-06). Set before any handler runs, so a handler with a reason to
 * allow caching (none today) overrides it, and refusals get it too.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';

/** The rule itself, for the Express chain below and the contract front (PERF-60) alike. */
export function markNoStore(req: IncomingMessage, res: ServerResponse): void {
  if (req.headers.authorization !== undefined) res.setHeader('Cache-Control', 'no-store');
}

export function noStoreWithCredentials(req: Request, res: Response, next: NextFunction): void {
  markNoStore(req, res);
  next();
}
