/**
 * The lists of a tool's part of the Sandbox LMS (decision LTI-74): its courses, and its people with their
 * enrolments in its courses, a page at a time with the dashboard's `limit` and `cursor` (S-13). The cursor
 * carries the LMS's own position (`next`), so a course or person made between two pages is neither skipped
 * nor repeated.
 */
import type { Request } from 'express';
import type { Services } from '../../http/services.js';
import type { AppRecord } from '../../store/index.js';
import { invalidCursor, makeCursor, readListQuery } from '../../dashboard/lists.js';
import { SANDBOX_ROLES, trialUserExternalId } from '../trial-people.js';
import { SandboxLmsControlError } from '../lms-client.js';
import { toolLms } from './lms-controls.js';
import { appPrefix, throughLms } from './scope.js';

/** The LMS's position a dashboard cursor carries; a cursor the LMS cannot read is this list's to refuse. */
async function paged<T>(req: Request, listKey: string, services: Services, read: (limit: number, after: string | undefined) => Promise<T>): Promise<T> {
  const query = readListQuery(req, listKey, services.clock.nowMs());
  if (query.position !== undefined && typeof query.position !== 'string') throw invalidCursor();
  try {
    return await read(query.limit, query.position);
  } catch (err) {
    if (err instanceof SandboxLmsControlError && err.status === 400) throw invalidCursor();
    throw err;
  }
}

export async function listToolCourses(services: Services, app: AppRecord, req: Request): Promise<{
  courses: { id: string; school: string; title: string; label: string; history: string[]; created: string }[];
  next_cursor: string | null;
}> {
  const listKey = `sandbox-lms-courses:${app.id}`;
  return throughLms(async () => {
    const { lms } = await toolLms(services, app);
    const page = await paged(req, listKey, services, (limit, after) => lms.listCourses({ prefix: appPrefix(app.id), limit, ...(after !== undefined ? { after } : {}) }));
    return {
      courses: page.courses.map((c) => ({ id: c.id, school: c.deployment_id, title: c.title, label: c.label, history: c.history, created: c.created })),
      next_cursor: page.next === null ? null : makeCursor(listKey, page.next, services.clock.nowMs()),
    };
  });
}

export async function listToolPeople(services: Services, app: AppRecord, req: Request): Promise<{
  people: { sub: string; given_name: string; family_name: string; email: string; enrolments: { course_id: string; roles: string[] }[] }[];
  next_cursor: string | null;
}> {
  const listKey = `sandbox-lms-people:${app.id}`;
  const prefix = appPrefix(app.id);
  return throughLms(async () => {
    const { lms } = await toolLms(services, app);
    const page = await paged(req, listKey, services, (limit, after) =>
      lms.listUsers({ prefix, subs: SANDBOX_ROLES.map(trialUserExternalId), limit, ...(after !== undefined ? { after } : {}) }),
    );
    return {
      people: page.users.map((u) => ({
        sub: u.sub,
        given_name: u.given_name,
        family_name: u.family_name,
        email: u.email,
        // A trial person is every tool's: only their enrolments in this tool's courses are this tool's to see.
        enrolments: u.enrolments.filter((e) => e.course_id.startsWith(prefix)),
      })),
      next_cursor: page.next === null ? null : makeCursor(listKey, page.next, services.clock.nowMs()),
    };
  });
}
