import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Clock, OpenStoreOptions, Repositories, Store } from '../../server/store/index.js';
import { openStore } from '../../server/store/index.js';

/** A clock tests move by hand; starts at a fixed instant so expiry arithmetic is readable. */
export class ManualClock implements Clock {
  constructor(public ms = Date.UTC(2026, 8, 21, 10, 0, 0)) {}
  nowMs(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

export function tempDir(label = 'store'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `tis-${label}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Opens a store on a fresh SQLite file; `done()` closes it and removes the directory. */
export async function freshStore(
  options: Partial<Pick<OpenStoreOptions, 'clock' | 'busyTimeoutMs'>> = {},
): Promise<{ store: Store; dir: string; path: string; done: () => Promise<void> }> {
  const { dir, cleanup } = tempDir();
  const path = join(dir, 'tis.sqlite');
  const store = await openStore({ sqlitePath: path, ...options });
  return {
    store,
    dir,
    path,
    done: async () => {
      await store.close();
      cleanup();
    },
  };
}

export interface Course {
  appId: string;
  apiKey: string;
  organizationId: string;
  contextId: string;
  locationId: string;
  studentUserId: string;
  studentMemberId: string;
  teacherUserId: string;
  teacherMemberId: string;
}

let seq = 0;

/** A self-hosted tool placed in one course with a student and an instructor. */
export async function seedCourse(repos: Repositories): Promise<Course> {
  seq += 1;
  const { app, apiKey } = await repos.apps.create({ name: `Tool ${seq}`, hosting: 'self_hosted' });
  const org = await repos.organizations.upsert({
    issuer: 'https://lms.example.edu',
    client: 'client-1',
    deployment: `deployment-${seq}`,
    title: 'Example University',
  });
  const context = await repos.contexts.upsert({ organizationId: org.id, externalId: `course-${seq}`, name: 'Biology 101', label: 'BIO-101' });
  const [location] = await repos.locations.syncServed(app.id, [{ extid: 'quiz-1', type: 'assessment', label: 'Quiz 1' }]);
  if (!location || !apiKey) throw new Error('seed failed');
  const student = await repos.users.upsert({ organizationId: org.id, externalId: `student-${seq}` });
  const teacher = await repos.users.upsert({
    organizationId: org.id,
    externalId: `teacher-${seq}`,
    givenName: 'Ada',
    familyName: 'Lovelace',
    fullName: 'Ada Lovelace',
    email: 'ada@example.edu',
  });
  const studentMember = await repos.members.upsert({ contextId: context.id, userId: student.id, groups: ['student'] });
  const teacherMember = await repos.members.upsert({ contextId: context.id, userId: teacher.id, groups: ['instructor'] });
  await repos.placements.create({
    appId: app.id,
    contextId: context.id,
    locationId: location.id,
    entry: { extid: 'quiz-1', type: 'assessment', label: 'Quiz 1', points: 100 },
  });
  return {
    appId: app.id,
    apiKey,
    organizationId: org.id,
    contextId: context.id,
    locationId: location.id,
    studentUserId: student.id,
    studentMemberId: studentMember.id,
    teacherUserId: teacher.id,
    teacherMemberId: teacherMember.id,
  };
}
