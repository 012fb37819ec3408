/**
 * `GET /launch/{ticket}` (dashboard spec, operation `openLaunchPage`): typed like every handler, but it
 * answers HTML, so it writes its page through `ctx.res` and returns `{stream: true}`.
 */
import type { Response } from 'express';
import type { operations } from '../../generated/dashboard/types.js';
import type { Handlers } from '../http/registry.js';
import type { RenderedPage } from './pages.js';
import { internalErrorPage, renderLaunchPage } from './launch.js';

export const LAUNCH_PAGE_OPERATION_IDS = ['openLaunchPage'] as const;

/** Headers of every launch page (decision S-10): nothing cached, the ticket kept out of the tool's logs. */
export function writePage(res: Response, page: RenderedPage): void {
  res.status(page.status);
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  for (const [name, value] of Object.entries(page.headers)) res.setHeader(name, value);
  res.end(page.html);
}

export const launchPageHandlers: Pick<Handlers<operations>, 'openLaunchPage'> = {
  openLaunchPage: async (ctx) => {
    let page: RenderedPage;
    try {
      page = await renderLaunchPage(ctx.services, ctx.params.ticket, { requestId: ctx.requestId, log: ctx.log });
    } catch (err) {
      ctx.log.error('launch page failed', { err });
      page = internalErrorPage(ctx.requestId);
    }
    ctx.log.info('launch page', { page: page.kind, status: page.status });
    writePage(ctx.res, page);
    return { stream: true };
  },
};
