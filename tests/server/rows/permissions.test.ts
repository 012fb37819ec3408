// Authentication rule 4 of the contract, every cell, over real HTTP: who may read and write which row,
// and the files of each row, which follow the row's rules. The rows are those of one student (S) in
// one course; each caller is a real launch (or provision request) of the same tool.
//
//   caller \ row         context, location          S's member, member_location
//   S (student)          read; write 403            read, write
//   other student        read; write 403            403
//   member in no group   read; write 403            403
//   instructor           read, write                read, write
//   assistant            read, write                read, write
//   manager              read, write                read, write
//   not in the course    403                        403
//   provision token      its levels (NS-06)         403
//   another tool         404 everywhere (the row is not the tool's)
//
// "Read" is GET of the row, the file list and one file; "write" is PUT and PATCH of the row, asking to
// store a file and deleting one.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, placeLocation, startServer, type TestServer } from '../harness.js';
import { api, type Course, outcome, ROW_NAMES, type RowName, setUpCourse, storeFile, serverFailures } from './helpers.js';

type Caller =
  | 'student'
  | 'other student'
  | 'member in no group'
  | 'instructor'
  | 'assistant'
  | 'manager'
  | 'not in the course'
  | 'course provision token'
  | 'location provision token'
  | 'another tool';

type Access = 'read' | 'write';

/** Expected outcome of each call of a cell: 'ok' or the problem's status and code. */
type Expect = 'ok' | '403 row_read_only' | '403 not_your_row' | '403 not_a_member' | '403 provision_scope' | '404 row_not_found';

const shared = (row: RowName): boolean => row === 'context' || row === 'location';

function expected(caller: Caller, row: RowName, access: Access): Expect {
  switch (caller) {
    case 'student':
      return shared(row) && access === 'write' ? '403 row_read_only' : 'ok';
    case 'other student':
    case 'member in no group':
      if (shared(row)) return access === 'write' ? '403 row_read_only' : 'ok';
      return '403 not_your_row';
    case 'instructor':
    case 'assistant':
    case 'manager':
      return 'ok';
    case 'not in the course':
      return '403 not_a_member';
    case 'course provision token':
      // A course-level provision request names the context row only (NS-06).
      return row === 'context' ? 'ok' : '403 provision_scope';
    case 'location provision token':
      // A location-level request names the context row and its location's row.
      return shared(row) ? 'ok' : '403 provision_scope';
    case 'another tool':
      return '404 row_not_found';
  }
}

const CALLERS: readonly Caller[] = [
  'student',
  'other student',
  'member in no group',
  'instructor',
  'assistant',
  'manager',
  'not in the course',
  'course provision token',
  'location provision token',
  'another tool',
];

let server: TestServer;
let course: Course;
const auth = new Map<Caller, string>();
/** A file stored in each row beforehand, so a permitted single-file read answers 200. */
const FILE_KEY = 'handout.txt';

beforeAll(async () => {
  server = await startServer();
  course = await setUpCourse(server);
  auth.set('student', course.student.auth);
  auth.set('other student', course.otherStudent.auth);
  auth.set('member in no group', course.noGroup.auth);
  auth.set('instructor', course.instructor.auth);
  auth.set('assistant', course.assistant.auth);
  auth.set('manager', course.manager.auth);
  // The same tool in another course: a real user of the tool, but not a member of this course.
  const elsewhere = await placeLocation(server, { app: course.tool.app.id });
  auth.set('not in the course', (await launch(server, { placed: elsewhere, groups: ['instructor'] })).auth);
  const { launches } = server.services;
  const contextId = course.placed.context.id;
  const courseRequest = await launches.provisionRequest({ appId: course.tool.app.id, contextId });
  auth.set('course provision token', `Bearer ${courseRequest.apiToken}`);
  const locationRequest = await launches.provisionRequest({ appId: course.tool.app.id, contextId, locationId: course.placed.location.id });
  auth.set('location provision token', `Bearer ${locationRequest.apiToken}`);
  // Another tool with its own course: its token names a real row, of another tool.
  const other = await setUpCourse(server);
  auth.set('another tool', other.instructor.auth);

  for (const row of ROW_NAMES) {
    const stored = await storeFile(course.instructor.auth, `${course.files[row]}/${FILE_KEY}`, `handout of the ${row} row`);
    expect(stored.upload.status).toBe(204);
  }
});
afterAll(async () => {
  const failures = server ? serverFailures(server.logs) : [];
  await server?.stop();
  expect(failures).toEqual([]);
});

/** The row and its file list, as course staff see them. */
async function snapshot(row: RowName): Promise<{ row: string; files: string }> {
  const staff = api(course.instructor.auth);
  return { row: await (await staff.get(course.storage[row])).text(), files: await (await staff.get(course.files[row])).text() };
}

/** Every call a cell makes, labelled, with the outcome it got. */
async function runCell(caller: Caller, row: RowName, access: Access): Promise<Record<string, string>> {
  const client = api(auth.get(caller) ?? null);
  const rowUrl = course.storage[row];
  const filesUrl = course.files[row];
  const slug = caller.replace(/\s+/g, '-');
  const calls: Record<string, () => Promise<Response>> =
    access === 'read'
      ? {
          'GET row': () => client.get(rowUrl),
          'GET files': () => client.get(filesUrl),
          'GET file': () => client.get(`${filesUrl}/${FILE_KEY}`),
        }
      : {
          'PUT row': () => client.put(rowUrl, { written_by: caller }),
          'PATCH row': () => client.patch(rowUrl, { patch: [{ op: 'add', path: `/by-${slug}`, value: true }] }),
          'PUT file': () => client.put(`${filesUrl}/by-${slug}.txt`, { size: 3 }),
          'DELETE file': () => client.del(`${filesUrl}/never-stored-${slug}.txt`),
        };
  const results: Record<string, string> = {};
  for (const [label, call] of Object.entries(calls)) {
    const got = await outcome(await call());
    results[label] = /^[23]\d\d$/.test(got) ? 'ok' : got;
  }
  return results;
}

const cells = CALLERS.flatMap((caller) =>
  ROW_NAMES.flatMap((row) => (['read', 'write'] as const).map((access) => [caller, row, access, expected(caller, row, access)] as const)),
);

describe('Authentication rule 4: rows and their files', () => {
  it('covers every cell: 10 callers x 4 rows x read/write', () => {
    expect(cells).toHaveLength(80);
  });

  it.each(cells)('%s, %s row, %s: %s', async (caller, row, access, want) => {
    const before = await snapshot(row);
    const results = await runCell(caller, row, access);
    for (const [label, got] of Object.entries(results)) expect(got, `${label}`).toBe(want);
    // A refused call changed nothing: not the row, not its files.
    if (want !== 'ok') expect(await snapshot(row)).toEqual(before);
  });

  it("staff may read and write any member's rows, students only their own", async () => {
    const s2 = course.otherStudent.claims.storage.member;
    expect(await outcome(await api(course.assistant.auth).put(s2, { feedback: 'good' }))).toBe('204');
    expect(await (await api(course.otherStudent.auth).get(s2)).json()).toEqual({ feedback: 'good' });
    expect(await outcome(await api(course.student.auth).get(s2))).toBe('403 not_your_row');
  });
});
