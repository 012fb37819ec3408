/**
 * A real HTTP server that serves only the Sandbox LMS (its own pipeline, over the real store, signer and
 * validator), and a Sandbox course to grade in. The publisher tests talk to it exactly as the service talks
 * to its own Sandbox LMS; the full-service tests use the harness instead.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { configFrom } from '../../../server/config.js';
import type { Config } from '../../../server/config.js';
import { createLogger } from '../../../server/http/log.js';
import { isProblem, Problem } from '../../../server/http/problem.js';
import { requestContext } from '../../../server/http/request-context.js';
import type { Services } from '../../../server/http/services.js';
import { createLineItem } from '../../../server/sandbox-lms/gradebook.js';
import { sandboxLmsPipeline } from '../../../server/sandbox-lms/mount.js';
import { ensureSandboxSchool } from '../../../server/sandbox-lms/school.js';
import { Signer } from '../../../server/signing/signer.js';
import type {
  AppRecord,
  Clock,
  ContextRecord,
  LineItemRecord,
  LocationRecord,
  MemberRecord,
  OrganizationRecord,
  PlacementRecord,
  Store,
  UserRecord,
} from '../../../server/store/index.js';
import { dropTestStore, openTestStore } from '../harness.js';

/** The system clock, movable forward for expiry tests. */
export class ShiftableClock implements Clock {
  offsetMs = 0;
  nowMs(): number {
    return Date.now() + this.offsetMs;
  }
}

export interface LmsServer {
  url: string;
  store: Store;
  signer: Signer;
  config: Config;
  clock: ShiftableClock;
  stop(): Promise<void>;
}

export async function startLmsServer(): Promise<LmsServer> {
  const dir = mkdtempSync(join(tmpdir(), 'tis-lms-'));
  const clock = new ShiftableClock();
  // On the project's store (TIS_TEST_STORE), like every server of the suite.
  const store = await openTestStore(dir, { clock });
  const signer = new Signer(store, { clock });
  await signer.init();
  const config = configFrom({ dataDir: dir, port: 0, host: '127.0.0.1' });
  const log = createLogger({ level: 'silent' });
  const services = { store, config, signer, clock, log } as unknown as Services;

  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.use(requestContext(log, () => '2026-09-21'));
  app.use(sandboxLmsPipeline(services, { responseValidation: true, bodyLimitBytes: config.httpBodyLimitBytes }));
  app.use((_req: Request, _res: Response, next: NextFunction) => next(new Problem(404, 'not_found', 'not found')));
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const problem = isProblem(err) ? err : new Problem(500, 'internal_error', 'internal error');
    if (!isProblem(err)) {
      // Surface the real cause in the test output (a response validation failure, a bug).
      console.error('lms fixture error', err);
    }
    for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
    res.status(problem.status).type('application/problem+json').end(JSON.stringify(problem.toBody(String(res.locals['requestId']))));
  });

  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  config.publicUrl = url;
  return {
    url,
    store,
    signer,
    config,
    clock,
    stop: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await store.close();
      await dropTestStore(dir);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface SandboxCourse {
  app: AppRecord;
  school: OrganizationRecord;
  context: ContextRecord;
  location: LocationRecord;
  placement: PlacementRecord;
  lineItem: LineItemRecord;
  student: { user: UserRecord; member: MemberRecord };
  student2: { user: UserRecord; member: MemberRecord };
  instructor: { user: UserRecord; member: MemberRecord };
}

let seq = 0;

/** A tool with its Sandbox school and trial course: an assessment placed with a 20-point column. */
export async function sandboxCourse(lms: LmsServer, points = 20): Promise<SandboxCourse> {
  seq += 1;
  const { store } = lms;
  const { app } = await store.apps.create({ name: `Quiz tool ${seq}`, hosting: 'self_hosted' });
  const school = await ensureSandboxSchool(store, app.id, lms.config.publicUrl);
  const context = await store.contexts.create({ organizationId: school.id, name: 'Sandbox course', sandboxAppId: app.id });
  const [location] = await store.locations.syncServed(app.id, [{ extid: `quiz-${seq}`, type: 'assessment', label: 'Week 1 quiz', points }]);
  if (!location) throw new Error('no location');
  const person = async (externalId: string, groups: Array<'student' | 'instructor'>) => {
    // Members join in this order: a millisecond apart, since join order is `created_at` with the random ID
    // only breaking ties (student_1 and student_2 of the Grades tab follow it).
    lms.clock.offsetMs += 1;
    const user = await store.users.upsert({ organizationId: school.id, externalId });
    const member = await store.members.upsert({ contextId: context.id, userId: user.id, groups });
    return { user, member };
  };
  const instructor = await person(`sbx-instructor-${seq}`, ['instructor']);
  const student = await person(`sbx-student-1-${seq}`, ['student']);
  const student2 = await person(`sbx-student-2-${seq}`, ['student']);
  const placement = await store.placements.create({
    appId: app.id,
    contextId: context.id,
    locationId: location.id,
    entry: { extid: location.extid, type: 'assessment', label: 'Week 1 quiz', points },
  });
  const lineItem = await createLineItem(store, { placement });
  const placed = await store.placements.get(placement.id);
  if (!placed) throw new Error('placement vanished');
  return { app, school, context, location, placement: placed, lineItem, student, student2, instructor };
}
