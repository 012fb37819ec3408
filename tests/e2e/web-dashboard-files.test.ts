/**
 * The web dashboard's files as the service serves them (server/web-dashboard/): the right content types,
 * revalidated caching with ETags, a strict Content-Security-Policy on every file, a page with no inline
 * script or style, script that never writes markup from data and never calls another origin, and
 * `/dashboard/v1/...` left to the dashboard API.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEB_DASHBOARD_CSP, WEB_DASHBOARD_FILES } from '../../server/web-dashboard/router.ts';
import { startServer, type TestServer } from '../server/harness.ts';

const STATIC_DIR = join(import.meta.dirname, '../../server/web-dashboard/static');

let server: TestServer;

beforeAll(async () => {
  server = await startServer({ config: { logLevel: 'warn' } });
});

afterAll(async () => {
  await server?.stop();
});

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
};

describe('web dashboard files', () => {
  it('lists exactly the files of the static folder', () => {
    expect([...WEB_DASHBOARD_FILES].sort()).toEqual(readdirSync(STATIC_DIR).sort());
  });

  it('redirects /dashboard to /dashboard/, keeping the query', async () => {
    const res = await fetch(`${server.url}/dashboard?x=1`, { redirect: 'manual' });
    expect(res.status).toBe(308);
    expect(res.headers.get('location')).toBe('/dashboard/?x=1');
  });

  it('serves the page at /dashboard/ with its CSP and security headers', async () => {
    const res = await fetch(`${server.url}/dashboard/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(TYPES['html']);
    expect(res.headers.get('content-security-policy')).toBe(WEB_DASHBOARD_CSP);
    expect(WEB_DASHBOARD_CSP).toContain("script-src 'self'");
    expect(WEB_DASHBOARD_CSP).toContain("connect-src 'self'");
    expect(WEB_DASHBOARD_CSP).not.toContain('unsafe');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(await res.text()).toBe(readFileSync(join(STATIC_DIR, 'index.html'), 'utf8'));
  });

  it.each(WEB_DASHBOARD_FILES.map((name) => [name]))('serves %s with its type, no-cache and an ETag that revalidates to 304', async (name) => {
    const res = await fetch(`${server.url}/dashboard/${name}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(TYPES[name.slice(name.lastIndexOf('.') + 1)]);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('content-security-policy')).toBe(WEB_DASHBOARD_CSP);
    const etag = res.headers.get('etag');
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(join(STATIC_DIR, name)))).toBe(true);

    const again = await fetch(`${server.url}/dashboard/${name}`, { headers: { 'If-None-Match': etag! } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    const stale = await fetch(`${server.url}/dashboard/${name}`, { headers: { 'If-None-Match': '"other"' } });
    expect(stale.status).toBe(200);
  });

  it('answers HEAD without a body', async () => {
    const res = await fetch(`${server.url}/dashboard/app.js`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(readFileSync(join(STATIC_DIR, 'app.js')).length));
  });

  it('answers an unknown file 404 and another method 405, in the problem envelope', async () => {
    for (const path of ['/dashboard/nope.js', '/dashboard/../server/app.ts', '/dashboard/%2e%2e/package.json', '/dashboard/static/app.js']) {
      const res = await fetch(`${server.url}${path}`);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
    const post = await fetch(`${server.url}/dashboard/`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect(((await post.json()) as { detail: string }).detail).toBe('POST is not allowed here; allowed: GET, HEAD');
  });

  it('leaves /dashboard/v1/... to the dashboard API', async () => {
    const res = await fetch(`${server.url}/dashboard/v1/me`);
    expect(res.headers.get('content-type') ?? '').not.toMatch(/text\/html|javascript/);
    expect(res.headers.get('content-security-policy')).toBeNull();
  });
});

describe('web dashboard source', () => {
  const html = readFileSync(join(STATIC_DIR, 'index.html'), 'utf8');
  const scripts = WEB_DASHBOARD_FILES.filter((name) => name.endsWith('.js')).map((name) => [name, readFileSync(join(STATIC_DIR, name), 'utf8')] as const);

  it('has no inline script, style or event handler in the page', () => {
    for (const tag of html.match(/<script\b[^>]*>/g) ?? []) expect(tag).toMatch(/\bsrc="[a-z-]+\.js"/);
    expect(html).not.toMatch(/<script\b[^>]*>(?!<\/script>)/);
    expect(html).not.toMatch(/<style\b/);
    expect(html).not.toMatch(/\sstyle=/);
    expect(html).not.toMatch(/\son[a-z]+=/);
  });

  it('every module it imports is served', () => {
    for (const [name, source] of scripts) {
      for (const [, spec] of source.matchAll(/\bfrom '([^']+)'/g)) {
        expect(spec, name).toMatch(/^\.\/[a-z-]+\.js$/);
        expect(WEB_DASHBOARD_FILES as readonly string[], `${name} imports ${spec}`).toContain(spec!.slice(2));
      }
    }
  });

  it('never writes markup from data and only fetches the dashboard API of its own origin', () => {
    for (const [name, source] of scripts) {
      expect(source, name).not.toMatch(/\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function/);
      expect(source, name).not.toMatch(/https?:\/\//);
      expect(source, name).not.toMatch(/localStorage/);
    }
    const fetches = scripts.flatMap(([name, source]) => [...source.matchAll(/\bfetch\(/g)].map(() => name));
    expect(fetches).toEqual(['api.js']);
    expect(scripts.find(([name]) => name === 'api.js')![1]).toContain('new URL(`/dashboard/v1${path}`, window.location.origin)');
  });
});
