/**
 * Where the metrics are read (decision OPS-11): `GET /metrics` on the service's own port, for the platform
 * team's credentials (the platform token or an operator's token, as the dashboard checks them), and, when
 * `METRICS_PORT` is set, a listener of its own that serves them to anyone who reaches it (bound to
 * `METRICS_HOST`, `HOST` by default), so a Prometheus on a private network needs no token.
 *
 * Not in the dashboard spec (OPS-13): the answer is Prometheus's text format, not JSON, and its content is
 * described by the metrics' own HELP lines.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { authenticateDashboard } from '../dashboard/credentials.js';
import { PLATFORM_ONLY } from '../dashboard/guard.js';
import type { Logger } from '../http/log.js';
import { requestLocals } from '../http/locals.js';
import { Problem } from '../http/problem.js';
import type { Services } from '../http/services.js';
import type { ServiceMetrics } from './index.js';

export const METRICS_PATH = '/metrics';

/** Worded as the pipeline words its 405s. */
function methodNotAllowed(method: string): Problem {
  return new Problem(405, 'method_not_allowed', `${method} is not allowed here; allowed: GET, HEAD`, { headers: { Allow: 'GET, HEAD' } });
}

/** `GET /metrics` on the service's port; passes on every other path, and on this one when metrics are off. */
export function metricsRoute(services: Pick<Services, 'metrics' | 'store' | 'platformCredential'>): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.path !== METRICS_PATH || !services.metrics.enabled) {
      next();
      return;
    }
    requestLocals(res).route = METRICS_PATH;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      next(methodNotAllowed(req.method));
      return;
    }
    void (async () => {
      const principal = await authenticateDashboard(services.store, services.platformCredential, req.headers.authorization);
      if (principal.kind !== 'platform') throw new Problem(403, 'platform_only', PLATFORM_ONLY);
      const { contentType, body } = await services.metrics.exposition();
      res.setHeader('Content-Type', contentType);
      res.setHeader('Cache-Control', 'no-store');
      res.status(200).send(req.method === 'HEAD' ? '' : body);
    })().catch(next);
  };
}

/** The `METRICS_PORT` listener: `/metrics` without a credential, 404 elsewhere; nothing else of the service. */
export async function listenForMetrics(metrics: ServiceMetrics, host: string, port: number, log: Logger): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== METRICS_PATH) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found: only /metrics is served here\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }).end('only GET and HEAD\n');
      return;
    }
    metrics.exposition().then(
      ({ contentType, body }) => {
        res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      (err: unknown) => {
        log.error('metrics could not be collected', { err });
        res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('metrics could not be collected\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
