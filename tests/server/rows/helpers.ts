// Shared by the row and files tests: a course with one of each kind of member, and terse HTTP calls.

import { createTool, launch, placeLocation, type PlacedLocation, type TestLaunch, type TestServer, type Tool } from '../harness.js';

export type RowName = 'context' | 'location' | 'member' | 'member_location';
export const ROW_NAMES: readonly RowName[] = ['context', 'location', 'member', 'member_location'];

export interface Course {
  tool: Tool;
  placed: PlacedLocation;
  /** The student whose member rows the tests use. */
  student: TestLaunch;
  otherStudent: TestLaunch;
  instructor: TestLaunch;
  assistant: TestLaunch;
  manager: TestLaunch;
  /** A member of the course in no group (an LMS role that maps to none, NS-07). */
  noGroup: TestLaunch;
  /** Storage URLs of the student's rows (and the shared rows), from the student's own launch. */
  storage: Record<RowName, string>;
  files: Record<RowName, string>;
}

export async function setUpCourse(
  server: TestServer,
  options: { provisionContext?: boolean; provisionLocation?: boolean; tool?: Tool } = {},
): Promise<Course> {
  const tool = options.tool ?? (await createTool(server));
  const placed = await placeLocation(server, {
    app: tool.app.id,
    ...(options.provisionContext === undefined ? {} : { provisionContext: options.provisionContext }),
    ...(options.provisionLocation === undefined ? {} : { provisionLocation: options.provisionLocation }),
  });
  const [student, otherStudent, instructor, assistant, manager, noGroup] = await Promise.all([
    launch(server, { placed, groups: ['student'] }),
    launch(server, { placed, groups: ['student'] }),
    launch(server, { placed, groups: ['instructor'] }),
    launch(server, { placed, groups: ['assistant'] }),
    launch(server, { placed, groups: ['manager'] }),
    launch(server, { placed, groups: [] }),
  ]);
  const s = student!.claims;
  return {
    tool,
    placed,
    student: student!,
    otherStudent: otherStudent!,
    instructor: instructor!,
    assistant: assistant!,
    manager: manager!,
    noGroup: noGroup!,
    storage: {
      context: s.storage.context,
      location: s.storage.location,
      member: s.storage.member,
      member_location: s.storage.member_location,
    },
    files: {
      context: s.files.context,
      location: s.files.location,
      member: s.files.member,
      member_location: s.files.member_location,
    },
  };
}

export interface Api {
  get(url: string): Promise<Response>;
  put(url: string, body: unknown): Promise<Response>;
  putText(url: string, text: string): Promise<Response>;
  patch(url: string, body: unknown): Promise<Response>;
  del(url: string): Promise<Response>;
}

/** Calls with `Authorization` set to `auth` (a full header value), or none when null. */
export function api(auth: string | null): Api {
  const headers = (json: boolean): Record<string, string> => ({
    ...(auth === null ? {} : { Authorization: auth }),
    ...(json ? { 'Content-Type': 'application/json' } : {}),
  });
  return {
    get: (url) => fetch(url, { headers: headers(false) }),
    put: (url, body) => fetch(url, { method: 'PUT', headers: headers(true), body: JSON.stringify(body) }),
    putText: (url, text) => fetch(url, { method: 'PUT', headers: headers(true), body: text }),
    patch: (url, body) => fetch(url, { method: 'PATCH', headers: headers(true), body: JSON.stringify(body) }),
    del: (url) => fetch(url, { method: 'DELETE', headers: headers(false) }),
  };
}

/** Status and problem code (or '' for a success), for table assertions. */
export async function outcome(response: Response): Promise<string> {
  const text = await response.text();
  if (response.status < 400) return String(response.status);
  let code = '';
  try {
    code = String((JSON.parse(text) as { code?: unknown }).code);
  } catch {
    code = text.slice(0, 80);
  }
  return `${response.status} ${code}`;
}

export async function detailOf(response: Response): Promise<{ status: number; code: string; detail: string }> {
  const body = (await response.json()) as { code?: unknown; detail?: unknown };
  return { status: response.status, code: String(body.code), detail: String(body.detail) };
}

/** Stores a file through the real flow: ask to store (PUT), then the multipart POST to the form's URL. */
export async function storeFile(
  auth: string,
  fileUrl: string,
  bytes: Uint8Array | string,
  extra: Record<string, unknown> = {},
): Promise<{ form: { url: string; fields: Record<string, string> }; upload: Response }> {
  const data = typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes;
  const asked = await api(auth).put(fileUrl, { size: data.byteLength, ...extra });
  if (asked.status !== 200) throw new Error(`file PUT answered ${asked.status}: ${await asked.text()}`);
  const form = (await asked.json()) as { url: string; fields: Record<string, string> };
  return { form, upload: await postForm(form, data) };
}

/** The multipart POST of a signed form: every field first, the file last. */
export function postForm(form: { url: string; fields: Record<string, string> }, data: Uint8Array | string): Promise<Response> {
  const body = new FormData();
  for (const [name, value] of Object.entries(form.fields)) body.append(name, value);
  body.append('file', new Blob([typeof data === 'string' ? data : Buffer.from(data)]), 'upload.bin');
  return fetch(form.url, { method: 'POST', body });
}

/** Log lines that say the service failed: errors, or any answer with a 5xx status. Nothing a caller
 * sends may produce one. */
export function serverFailures(logs: ReadonlyArray<Record<string, unknown>>): Array<Record<string, unknown>> {
  return logs.filter((line) => line['level'] === 'error' || (typeof line['status'] === 'number' && line['status'] >= 500));
}
