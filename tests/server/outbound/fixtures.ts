/**
 * A tool on loopback for the outbound tests: a real HTTP server whose routes misbehave on demand (never
 * answer, redirect, answer 500, non-JSON, ...), recording every request it gets. Plus the records the
 * service needs around a tool (a Sandbox course from the Sandbox service, members) and token verification
 * against the JWKS.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import type { JWTPayload } from 'jose';
import { placeFromPicker } from '../../../server/placements/index.js';
import type { PlacementOutcome } from '../../../server/placements/index.js';
import { copySandboxCourse, ensureSandbox } from '../../../server/sandbox/index.js';
import { ensureLmsLink } from '../../../server/sandbox/lms-courses.js';
import type { AppSettingsPatch, Clock, ContextRecord, MemberGroup, MemberRecord, UserRecord } from '../../../server/store/index.js';
import type { TestServer } from '../harness.js';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** The form fields, for a form POST. */
  form: URLSearchParams;
}

export type Route = (req: IncomingMessage, res: ServerResponse, recorded: RecordedRequest) => void | Promise<void>;

export interface ToolServer {
  origin: string;
  port: number;
  url(path: string): string;
  requests: RecordedRequest[];
  /** Requests to one path. */
  to(path: string): RecordedRequest[];
  route(path: string, handler: Route): void;
  close(): Promise<void>;
}

export async function startToolServer(): Promise<ToolServer> {
  const routes = new Map<string, Route>();
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const recorded: RecordedRequest = { method: req.method ?? '', path, headers: req.headers, body, form: new URLSearchParams(body) };
      requests.push(recorded);
      const handler = routes.get(path);
      if (!handler) {
        res.writeHead(404).end();
        return;
      }
      void Promise.resolve(handler(req, res, recorded)).catch(() => res.destroy());
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    port,
    url: (path) => `${origin}${path}`,
    requests,
    to: (path) => requests.filter((r) => r.path === path),
    route: (path, handler) => routes.set(path, handler),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export const answer = {
  json:
    (body: unknown, status = 200): Route =>
    (_req, res) => {
      res.writeHead(status, { 'Content-Type': 'application/json' }).end(typeof body === 'string' ? body : JSON.stringify(body));
    },
  text:
    (body: string, status = 200, contentType = 'text/plain'): Route =>
    (_req, res) => {
      res.writeHead(status, { 'Content-Type': contentType }).end(body);
    },
  status:
    (status: number): Route =>
    (_req, res) => {
      res.writeHead(status).end();
    },
  redirect:
    (location: string, status = 302): Route =>
    (_req, res) => {
      res.writeHead(status, { Location: location }).end();
    },
  /** Reads the request and never answers. */
  hang: (): Route => () => undefined,
  /**
   * As a tool answers a provision request: 204 at once, then a PUT of the provision URL of the level the
   * request names, with the request's own api.token (unless `ready()` says the level is not ready).
   */
  provisioning:
    (ready: () => boolean = () => true): Route =>
    (_req, res, recorded) => {
      res.writeHead(204).end();
      if (!ready()) return;
      void (async () => {
        const token = recorded.form.get('launch_data') ?? '';
        const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
          provision: { context: string; location: string | null };
          api: { token: string };
        };
        const { provision, api } = claims;
        await fetch(provision.location ?? provision.context, { method: 'PUT', headers: { Authorization: `Bearer ${api.token}` } });
      })();
    },
};

/** A port nothing listens on (connection refused). */
export async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** A clock the test moves; starts at the real time so signed tokens stay verifiable. */
export class TestClock implements Clock {
  private offsetMs = 0;
  nowMs(): number {
    return Date.now() + this.offsetMs;
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

export async function setUrls(server: TestServer, appId: string, patch: AppSettingsPatch): Promise<void> {
  await server.services.store.apps.update(appId, patch);
}

/**
 * The tool's Sandbox trial course, or a copy of `parent`, made by the Sandbox service as the dashboard
 * makes them (with the five trial users). Does not look at the tool's status, so a suspended tool's
 * Sandbox course can be set up for tests that expect it to be refused.
 */
export async function sandboxCourse(
  server: TestServer,
  appId: string,
  options: { parent?: ContextRecord; name?: string } = {},
): Promise<ContextRecord> {
  if (!options.parent) return (await ensureSandbox(server.services, appId)).trial;
  const app = await server.services.store.apps.get(appId);
  if (!app) throw new Error(`no tool ${appId}`);
  return copySandboxCourse(server.services, app, {
    parentContextId: options.parent.id,
    ...(options.name !== undefined ? { course: { name: options.name, label: 'SANDBOX' } } : {}),
  });
}

/** A real (non-Sandbox) course in a school of its own. */
export async function realCourse(server: TestServer): Promise<ContextRecord> {
  const store = server.services.store;
  const org = await store.organizations.upsert({
    issuer: 'https://lms.northwind.example',
    client: 'client-1',
    deployment: 'deployment-1',
    title: 'Northwind University',
  });
  return store.contexts.upsert({ organizationId: org.id, externalId: `course-${randomUUID()}`, name: 'Statistics', label: 'STAT 101' });
}

export async function memberOf(
  server: TestServer,
  context: ContextRecord,
  groups: MemberGroup[],
  person: { givenName?: string; familyName?: string; email?: string } = {},
): Promise<{ member: MemberRecord; user: UserRecord }> {
  const store = server.services.store;
  const given = person.givenName ?? 'Maria';
  const family = person.familyName ?? 'Okafor';
  const user = await store.users.upsert({
    organizationId: context.organizationId,
    externalId: `person-${randomUUID()}`,
    givenName: given,
    familyName: family,
    fullName: `${given} ${family}`,
    email: person.email ?? `${given.toLowerCase()}@northwind.example`,
  });
  const member = await store.members.upsert({ contextId: context.id, userId: user.id, groups });
  return { member, user };
}

/** Verifies a `launch_data` token as a tool would: against the service's published JWKS. */
export async function verifyToken(server: TestServer, token: string, appId: string): Promise<JWTPayload & Record<string, unknown>> {
  const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
  const { payload } = await jwtVerify(token, jwks, { issuer: server.url, audience: appId, algorithms: ['RS256'] });
  return payload as JWTPayload & Record<string, unknown>;
}

/**
 * Places one location of the course's last picker answer as the Sandbox does (LTI-45): the picker's
 * placement, then, in a Sandbox course, its resource link in the Sandbox's LMS, whose gradebook column is
 * an assessment's line item. A course of another school is placed by the picker alone.
 */
export async function placeFromSandboxPicker(
  server: TestServer,
  input: { appId: string; contextId: string; extid: string; label?: string },
): Promise<PlacementOutcome> {
  const outcome = await placeFromPicker(server.services, input);
  const { school } = await ensureSandbox(server.services, input.appId);
  const context = await server.services.store.contexts.get(input.contextId);
  if (!context || context.organizationId !== school.id) return outcome;
  const { placement } = await ensureLmsLink(server.services, school, context, outcome.placement);
  return { ...outcome, placement };
}
