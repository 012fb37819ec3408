/**
 * The reference LMS: an LTI 1.3 platform with Dynamic Registration, OIDC launches, Deep Linking, AGS and a
 * token endpoint, on its own store and keys (decisions LTI-30 to LTI-39). It imports nothing from
 * `server/`: the service meets it only over HTTP, as it meets a school's Canvas or Moodle.
 *
 * `createReferenceLms` gives a request handler for any `node:http` server, mounted at the path of its
 * issuer URL (the service mounts its Sandbox's LMS at `/sandbox-lms`); `startReferenceLms` listens on a port
 * of its own (`npm run lms`, the tests).
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { handleAgs } from './ags.js';
import { handleControl } from './controls.js';
import { homePage } from './home.js';
import { deepLinkingReturn } from './deep-linking.js';
import { LmsError, readForm, sendJson, singleValues } from './http.js';
import { PlatformKeys } from './keys.js';
import { authorize, platformStorageFrame, startLaunch } from './launch.js';
import type { LmsClock, LmsFetch, Platform } from './platform.js';
import { PATHS } from './platform.js';
import type { LmsProfileName } from './profiles.js';
import { PROFILES } from './profiles.js';
import { openidConfiguration, registerClient, registrationPage } from './registration.js';
import type { LmsStore, LmsStoreLocation } from './store.js';
import { openLmsStore } from './store.js';
import { bearerOf, issueToken } from './token.js';

export interface ReferenceLmsOptions {
  /** The LMS's URL (its issuer), with the path it is mounted at, if any. */
  issuer: string;
  /** SQLite file, or `:memory:` (the default); `store` names a PostgreSQL database instead. */
  dbFile?: string;
  /** Where the store is, when not `dbFile`: on PostgreSQL, every LMS on one schema is one LMS (LTI-80). */
  store?: LmsStoreLocation;
  profile?: LmsProfileName;
  /** The control token; made at random when not given. Never stored: each process has its own. */
  controlToken?: string;
  clock?: LmsClock;
  fetch?: LmsFetch;
  /** Where a request the LMS could not answer is reported (default: stderr). */
  onError?: (err: unknown) => void;
}

export interface ReferenceLms {
  readonly platform: Platform;
  readonly issuer: string;
  readonly controlToken: string;
  /** Answers one request; false when its path is not under the issuer's path (the caller answers it). */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  close(): Promise<void>;
}

const systemClock: LmsClock = { nowMs: () => Date.now() };

export async function createReferenceLms(options: ReferenceLmsOptions): Promise<ReferenceLms> {
  const issuerUrl = new URL(options.issuer);
  const issuer = `${issuerUrl.origin}${issuerUrl.pathname.replace(/\/+$/, '')}`;
  const basePath = new URL(issuer).pathname.replace(/\/+$/, '');
  const db: LmsStore = await openLmsStore(options.store ?? { file: options.dbFile ?? ':memory:' });
  const clock = options.clock ?? systemClock;
  const keys = new PlatformKeys(db);
  try {
    await keys.init(clock.nowMs());
  } catch (err) {
    await db.close();
    throw err;
  }
  const platform: Platform = {
    db,
    keys,
    profile: PROFILES[options.profile ?? 'reference'],
    issuer,
    clock,
    fetch: options.fetch ?? ((url, init) => fetch(url, init)),
    controlToken: options.controlToken ?? `lmsc_${randomBytes(24).toString('base64url')}`,
  };
  const onError = options.onError ?? ((err: unknown) => process.stderr.write(`reference LMS: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`));

  async function route(req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams): Promise<void> {
    const method = req.method ?? 'GET';
    if (path === '/' && method === 'GET') return homePage(platform, res);
    if (path === PATHS.openidConfiguration && method === 'GET') return sendJson(res, 200, openidConfiguration(platform));
    if (path === PATHS.jwks && method === 'GET') return sendJson(res, 200, await keys.jwks(), 'application/json', { 'Cache-Control': 'max-age=300' });
    if (path === PATHS.registration && method === 'POST') return registerClient(platform, req, res);
    if (path === PATHS.registrationPage && method === 'GET') return await registrationPage(platform, res, query);
    if (path === PATHS.authorization && method === 'GET') return authorize(platform, res, singleValues(query));
    if (path === PATHS.authorization && method === 'POST') return authorize(platform, res, await readForm(req));
    if (path === PATHS.token && method === 'POST') {
      const answer = await issueToken(platform, await readForm(req));
      return sendJson(res, answer.status, answer.body, 'application/json', { Pragma: 'no-cache' });
    }
    if (path === PATHS.deepLinkingReturn && method === 'POST') return deepLinkingReturn(platform, req, res);
    if (path.startsWith(PATHS.launch) && method === 'GET') return await startLaunch(platform, res, path.slice(PATHS.launch.length), query.get('frame') === '1');
    if (path === PATHS.platformStorage && method === 'GET') return platformStorageFrame(res);
    if (path === '/controls' || path.startsWith('/controls/')) return handleControl(platform, req, res, path.slice('/controls'.length));
    const ags = platform.profile.parseAgsPath(path);
    if (ags) return handleAgs(platform, bearerOf(req), ags, req, res, query);
    throw new LmsError(404, 'not_found', `no such page: ${path}`);
  }

  return {
    platform,
    issuer,
    controlToken: platform.controlToken,
    async handle(req, res) {
      const url = targetOf(req.url ?? '/');
      if (basePath !== '' && url.pathname !== basePath && !url.pathname.startsWith(`${basePath}/`)) return false;
      const path = url.pathname.slice(basePath.length) || '/';
      try {
        // U+0000 anywhere the LMS would look a value up is refused as in bodies (`readJson`, `readForm`).
        if (/%00/.test(path) || [...url.searchParams].some(([key, value]) => key.includes('\0') || value.includes('\0'))) {
          throw new LmsError(400, 'invalid_request', 'text may not contain the character U+0000');
        }
        await route(req, res, path, url.searchParams);
      } catch (err) {
        if (res.headersSent) {
          res.destroy();
        } else if (err instanceof LmsError) {
          sendJson(res, err.status, { error: err.error, error_description: err.description }, 'application/json', err.headers);
        } else if (err instanceof URIError) {
          sendJson(res, 400, { error: 'invalid_request', error_description: 'the URL is not well encoded' });
        } else {
          onError(err);
          sendJson(res, 500, { error: 'server_error', error_description: 'the LMS could not answer this request' });
        }
      }
      return true;
    },
    close() {
      return db.close();
    },
  };
}

/**
 * A request target's path and query as `new URL(target, base)` gives them. A target of plain characters
 * (none the URL parser encodes, no backslash, no dot segment, no `//` at the start, no fragment) is its
 * own path, and its query parses to the same parameters, so it skips the URL parser (PERF-114); any
 * other goes through it.
 */
const PLAIN_PATH = /^\/(?!\/)[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*$/;
// Not starting with `?`: URLSearchParams would drop it.
const PLAIN_QUERY = /^(?!\?)[A-Za-z0-9\-._~!$&'()*+,;=:@/%?]*$/;
const DOT_SEGMENT = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i;

export function targetOf(target: string): { pathname: string; searchParams: URLSearchParams } {
  const mark = target.indexOf('?');
  const pathname = mark === -1 ? target : target.slice(0, mark);
  const query = mark === -1 ? '' : target.slice(mark + 1);
  if (PLAIN_PATH.test(pathname) && !DOT_SEGMENT.test(pathname) && (query === '' || PLAIN_QUERY.test(query))) {
    return { pathname, searchParams: new URLSearchParams(query) };
  }
  return new URL(target, 'http://lms.invalid');
}

export interface RunningLms extends ReferenceLms {
  readonly url: string;
  readonly server: Server;
  stop(): Promise<void>;
}

/**
 * The LMS on a port of its own. Without `issuer`, its URL is `http://{host}:{port}` once it listens
 * (port 0 picks one).
 */
export async function startReferenceLms(options: Omit<ReferenceLmsOptions, 'issuer'> & { issuer?: string; host?: string; port?: number }): Promise<RunningLms> {
  let lms: ReferenceLms | null = null;
  const server = createServer((req, res) => {
    if (!lms) {
      res.writeHead(503).end();
      return;
    }
    void lms.handle(req, res).then((handled) => {
      if (!handled) sendJson(res, 404, { error: 'not_found', error_description: 'not a page of the LMS' });
    });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = options.issuer ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  lms = await createReferenceLms({ ...options, issuer: url });
  const running = lms;
  return {
    ...running,
    platform: running.platform,
    issuer: running.issuer,
    controlToken: running.controlToken,
    handle: running.handle,
    close: running.close,
    url,
    server,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await running.close();
    },
  };
}
