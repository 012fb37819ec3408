/**
 * Every answer to a request that carries a credential is private to that caller: rows, file metadata and
 * signed URLs, grade attempts, the dashboard API. `Cache-Control: no-store` keeps browsers, proxies and
 * shared caches from keeping any of it (H-06). Set before any handler runs, so a handler with a reason to
 * allow caching (none today) overrides it, and refusals get it too.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The rule itself: a step of the one request pipeline (server/app.ts). */
export function markNoStore(req: IncomingMessage, res: ServerResponse): void {
  if (req.headers.authorization !== undefined) res.setHeader('Cache-Control', 'no-store');
}
