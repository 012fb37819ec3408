/**
 * The LMS a bench publishes scores to: the reference LMS (`lms/main`, what `npm run lms` runs) in a process
 * of its own, reached by the service exactly as a school's LMS is (issue 14: "against the Sandbox LMS in its
 * own process"; decision PERF-150). `npm run bench` and `scripts/bench/score-split.ts` both use it.
 *
 * The service registers with it through LTI Dynamic Registration, as a school's administrator makes it: the
 * LMS's controls open a registration, and the service's `/lti/register` page completes it. Then a course
 * with one graded link and enrolled students is made through the LMS's controls, and the service's records
 * of those students' launches are written through the service's own launch code (`tests/server/harness.ts`),
 * so each student has the contract's score URL and a token.
 *
 * Both listen on 127.0.0.1, so the service needs ALLOW_LOOPBACK_TOOLS, which only NODE_ENV=development
 * allows (`serviceEnvForLoopbackLms`); with RESPONSE_VALIDATION=false that is production's request pipeline.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createHttpServer } from '../../server/app.js';
import type { Services } from '../../server/http/services.js';
import { createTool, launch, type PlacedLocation, placeLocation } from '../../tests/server/harness.js';
import { untilAnswers } from './scaffold.js';

const LEARNER = 'http://purl.imsglobal.org/vocab/lis/v2/membership#Learner';
const GRADED_LINK = { title: 'Week 1 quiz', custom: {}, line_item: { score_maximum: 10 } };

/** How to start the LMS process: node's arguments and environment, and where it will answer. */
export interface LmsProcessSpec {
  args: string[];
  env: NodeJS.ProcessEnv;
  url: string;
  controlToken: string;
}

/**
 * The reference LMS of `checkout` on `port`, its SQLite store in `dataDir`: from the build (`<compiled>/lms/main.js`)
 * or its sources through tsx.
 */
export function lmsProcess(options: { port: number; dataDir: string; checkout: string; compiled?: string | undefined }): LmsProcessSpec {
  let entry: string[] = ['--import', 'tsx', join(options.checkout, 'lms/main.ts')];
  if (options.compiled !== undefined) {
    const file = resolve(options.checkout, options.compiled, 'lms/main.js');
    if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` in ${options.checkout}`);
    entry = [file];
  }
  const controlToken = `lmsc_${randomBytes(24).toString('base64url')}`;
  return {
    args: entry,
    env: { LMS_PORT: String(options.port), LMS_HOST: '127.0.0.1', LMS_DB_FILE: join(options.dataDir, 'school-lms.sqlite'), LMS_CONTROL_TOKEN: controlToken },
    url: `http://127.0.0.1:${options.port}`,
    controlToken,
  };
}

/** The environment a service process needs to publish to the LMS on loopback (see the file's comment). */
export const serviceEnvForLoopbackLms: NodeJS.ProcessEnv = {
  NODE_ENV: 'development',
  ALLOW_LOOPBACK_TOOLS: '1',
  RESPONSE_VALIDATION: 'false',
};

/** Waits until the LMS is ready: it listens before its store is open and answers 503 until then. */
export function untilLmsReady(url: string): Promise<void> {
  return untilAnswers(`${url}/.well-known/openid-configuration`, `the LMS at ${url}`, { ready: (status) => status === 200 });
}

export type LmsControl = <T>(method: string, path: string, body?: unknown) => Promise<T>;

/** A call of the LMS's controls (what a school's administrator does in its pages). */
export function lmsControl(lms: Pick<LmsProcessSpec, 'url' | 'controlToken'>): LmsControl {
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${lms.url}/controls${path}`, {
      method,
      headers: { authorization: `Bearer ${lms.controlToken}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`LMS control ${method} ${path}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : null) as T;
  };
}

/** The service's registration with the LMS: the school a placement belongs to. */
export interface SchoolRegistration {
  issuer: string;
  client: string;
  deployment: string;
}

/**
 * Registers the service with the LMS through Dynamic Registration. The service's `/lti/register` must
 * answer at its public URL: with `serve`, `services` (built with `allowLoopbackTools` and `lmsAutoActivate`)
 * is served there while the registration runs, for a bench that starts its service processes later.
 */
export async function registerWithLms(lms: Pick<LmsProcessSpec, 'url' | 'controlToken'>, services: Services, serve: boolean): Promise<SchoolRegistration> {
  const control = lmsControl(lms);
  type Listed = { registrations: Array<{ client_id: string; deployments: Array<{ deployment_id: string }> }> };
  const known = new Set((await control<Listed>('GET', '/registrations')).registrations.map((r) => r.client_id));
  const publicUrl = services.config.publicUrl;
  const server = serve ? createHttpServer(services) : null;
  if (server) await new Promise<void>((ok, fail) => server.once('error', fail).listen(Number(new URL(publicUrl).port), '127.0.0.1', ok));
  try {
    const initiated = await control<{ url: string }>('POST', '/registrations/initiate', { tool_url: `${publicUrl}/lti/register` });
    const page = await fetch(initiated.url);
    if (!page.ok) throw new Error(`Dynamic Registration failed: ${page.status} ${(await page.text()).slice(0, 300)}`);
  } finally {
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
      // One poll phase, so this process's fetch pool reads the FIN of the connections just closed (as the harness's whileServed).
      await new Promise<void>((ok) => setImmediate(ok));
    }
  }
  const made = (await control<Listed>('GET', '/registrations')).registrations.find((r) => !known.has(r.client_id));
  const deployment = made?.deployments[0]?.deployment_id;
  if (!made || !deployment) throw new Error('the LMS holds no new registration of the service');
  const issuer = ((await (await fetch(`${lms.url}/.well-known/openid-configuration`)).json()) as { issuer: string }).issuer;
  const stored = await services.store.lti.findRegistration(issuer, made.client_id);
  if (stored?.status !== 'active') throw new Error(`the service's registration is ${stored?.status ?? 'missing'}`);
  return { issuer, client: made.client_id, deployment };
}

/** A student's contract score URL (its path) and the `Authorization` of their launch's token. */
export interface ScoringMember {
  path: string;
  auth: string;
}

/**
 * A course of the school in the LMS with one graded link, and `members` students enrolled in it and launched
 * into the tool's placement of that link: what a class submitting a quiz looks like to both sides.
 */
export async function gradedClass(
  lms: Pick<LmsProcessSpec, 'url' | 'controlToken'>,
  services: Services,
  school: SchoolRegistration,
  members: number,
): Promise<{ placed: PlacedLocation; members: ScoringMember[] }> {
  const control = lmsControl(lms);
  const course = await control<{ id: string }>('POST', '/courses', { deployment_id: school.deployment, title: 'Introduction to Statistics', label: 'STAT 101' });
  const link = await control<{ id: string; line_items: Array<{ id: string }> }>('POST', `/courses/${course.id}/links`, GRADED_LINK);
  const lineItemUrl = link.line_items[0]?.id;
  if (!lineItemUrl) throw new Error('the LMS made no line item');
  const tool = await createTool({ services });
  const placed = await placeLocation(
    { services },
    {
      app: tool.app.id,
      organization: { issuer: school.issuer, client: school.client, deployment: school.deployment, title: 'Northwind University' },
      course: { externalId: course.id, name: 'Introduction to Statistics', label: 'STAT 101' },
      type: 'assessment',
      points: 10,
      lineItem: false,
    },
  );
  // What the launch of a link with an AGS `lineitem` claim records (server/lti/launch.ts).
  await services.store.placements.setLineItem(placed.placement.id, lineItemUrl);
  const scoring: ScoringMember[] = [];
  for (let i = 0; i < members; i += 1) {
    const user = await control<{ sub: string }>('POST', '/users', { given_name: 'Ada', family_name: `Student ${i}`, email: `student-${i}@northwind.example` });
    await control('PUT', `/courses/${course.id}/enrolments/${encodeURIComponent(user.sub)}`, { roles: [LEARNER] });
    const s = await launch({ services }, { placed, groups: ['student'], userExternalId: user.sub });
    scoring.push({ path: new URL(s.claims.grade.submit ?? '').pathname, auth: s.auth });
  }
  return { placed, members: scoring };
}
