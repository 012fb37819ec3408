/**
 * Serves the launch page, `GET /launch/{ticket}` (decision L-08), outside the contract dispatch: it is
 * opened by a browser with no credential but the ticket, and answers HTML. Mount it on the app before
 * the contract dispatcher, with no path prefix:
 *
 *   app.use(launchPageRoute(services));
 *
 * Requests outside `/launch/` pass through untouched. Another method answers 405 with `Allow: GET`; a
 * HEAD is refused too, since answering it would mean running the checks (and possibly provisioning)
 * for a request whose page nobody reads.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { operations } from '../../generated/dashboard/types.js';
import type { RequestLocals } from '../http/locals.js';
import { Problem } from '../http/problem.js';
import type { HandlerContext } from '../http/registry.js';
import type { Services } from '../http/services.js';
import { launchPageHandlers } from './handler.js';

export const LAUNCH_PAGE_PATH = '/launch';
const ROUTE = '/launch/{ticket}';

export function launchPageRoute(services: Services): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (!req.path.startsWith(`${LAUNCH_PAGE_PATH}/`)) {
      next();
      return;
    }
    const locals = res.locals as RequestLocals & { route?: string; operationId?: string };
    const segment = req.path.slice(LAUNCH_PAGE_PATH.length + 1);
    if (segment === '' || segment.includes('/')) {
      next();
      return;
    }
    // The access log names the route, never the ticket: it is a credential until it is used.
    locals.route = ROUTE;
    locals.operationId = 'openLaunchPage';
    if (req.method !== 'GET') {
      next(new Problem(405, 'method_not_allowed', `${req.method} is not allowed here; allowed: GET`, { headers: { Allow: 'GET' } }));
      return;
    }
    let ticket: string;
    try {
      ticket = decodeURIComponent(segment);
    } catch {
      ticket = '';
    }
    const log = (locals.log ?? services.log).child({ operation: 'openLaunchPage' });
    const ctx = {
      operationId: 'openLaunchPage',
      params: { ticket },
      query: {},
      body: undefined,
      headers: req.headers,
      principal: { kind: 'none' },
      services,
      req,
      res,
      requestId: locals.requestId,
      log,
    } satisfies HandlerContext<operations['openLaunchPage']>;
    try {
      await launchPageHandlers.openLaunchPage(ctx);
    } catch (err) {
      next(err);
    }
  };
}
