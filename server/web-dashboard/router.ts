/**
 * Serves the web dashboard (decisions L-08, S-36): static files under `/dashboard/`, a client of the dashboard
 * API (`/dashboard/v1/...`) and nothing else. No data is rendered here; the page fetches it with the token
 * the person signs in with. Mount it before the contract dispatcher, with no path prefix:
 *
 *   app.use(webDashboardRoute());
 *
 * `/dashboard/v1/...` passes through to the API untouched, as does every path outside `/dashboard` but `/`,
 * which redirects to the dashboard.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { Problem } from '../http/problem.js';

export const WEB_DASHBOARD_PATH = '/dashboard';
const API_PREFIX = `${WEB_DASHBOARD_PATH}/v1`;
const STATIC_DIR = join(dirname(fileURLToPath(import.meta.url)), 'static');

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * Every script is a file of this folder and every request goes back to this origin: the page never
 * needs inline script or style, a foreign image, a frame or a form submission of its own.
 */
export const WEB_DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The files the dashboard is made of; anything else under `/dashboard/` is 404. */
export const WEB_DASHBOARD_FILES = [
  'index.html',
  'dashboard.css',
  'favicon.svg',
  'app.js',
  'api.js',
  'dom.js',
  'session.js',
  'tools.js',
  'settings.js',
  'sandbox.js',
  'picker.js',
  'grades.js',
  'people.js',
  'audit.js',
  'lms.js',
] as const;

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

/** The files, or null when this build has none (`npm run build` compiles the router but copies no static files). */
function loadAssets(): Map<string, Asset> | null {
  if (!existsSync(join(STATIC_DIR, 'index.html'))) return null;
  const assets = new Map<string, Asset>();
  for (const name of WEB_DASHBOARD_FILES) {
    const body = readFileSync(join(STATIC_DIR, name));
    const type = CONTENT_TYPES[name.slice(name.lastIndexOf('.'))];
    if (!type) throw new Error(`web dashboard: no content type for ${name}`);
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    assets.set(name, { body, type, etag });
  }
  return assets;
}

function fresh(req: Request, etag: string): boolean {
  const header = req.headers['if-none-match'];
  if (!header) return false;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

export function webDashboardRoute(): RequestHandler {
  // Read once at start: the files ship with the service and change only with a new release.
  const assets = loadAssets();
  return (req: Request, res: Response, next: NextFunction): void => {
    const path = req.path;
    // The service's root has nothing of its own: a person who opens the printed URL lands on the dashboard
    // (decision OPS-41). 302, not permanent: the root may answer something else one day.
    if (path === '/' && (req.method === 'GET' || req.method === 'HEAD')) {
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(302, `${WEB_DASHBOARD_PATH}/`);
      return;
    }
    if (path !== WEB_DASHBOARD_PATH && !path.startsWith(`${WEB_DASHBOARD_PATH}/`)) {
      next();
      return;
    }
    if (path === API_PREFIX || path.startsWith(`${API_PREFIX}/`)) {
      next();
      return;
    }
    (res.locals as { route?: string }).route = `${WEB_DASHBOARD_PATH}/`;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      next(new Problem(405, 'method_not_allowed', `${req.method} is not allowed here; allowed: GET, HEAD`, { headers: { Allow: 'GET, HEAD' } }));
      return;
    }
    if (path === WEB_DASHBOARD_PATH) {
      // Relative module and style URLs in the page resolve against `/dashboard/`, never `/`.
      const query = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?')) : '';
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(308, `${WEB_DASHBOARD_PATH}/${query}`);
      return;
    }
    if (assets === null) {
      next(new Problem(404, 'not_found', 'the web dashboard is not part of this build; use the dashboard API under /dashboard/v1'));
      return;
    }
    const name = path === `${WEB_DASHBOARD_PATH}/` ? 'index.html' : path.slice(WEB_DASHBOARD_PATH.length + 1);
    const asset = assets.get(name);
    if (!asset) {
      next(new Problem(404, 'not_found', `no dashboard file at ${path}`));
      return;
    }
    res.setHeader('Content-Type', asset.type);
    // Not fingerprinted (no build step), so a browser revalidates each file; the ETag makes that a 304.
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('ETag', asset.etag);
    res.setHeader('Content-Security-Policy', WEB_DASHBOARD_CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('X-Frame-Options', 'DENY');
    if (fresh(req, asset.etag)) {
      res.status(304).end();
      return;
    }
    res.setHeader('Content-Length', String(asset.body.length));
    res.status(200);
    if (req.method === 'HEAD') res.end();
    else res.end(asset.body);
  };
}
