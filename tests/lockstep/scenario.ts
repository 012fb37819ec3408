/**
 * The lockstep scenario: ONE sequence of calls a tool makes (rows read, written and patched; a file asked
 * for, uploaded, listed, read, downloaded and deleted; a score; and the contract's error cases 401, 403, 404
 * and 422 with their messages), made with the kit (the tool-side helpers on the URLs a launch gives, and
 * the typed contract client), run against any target that speaks the current contract.
 *
 * Two targets run it (scenario.test.ts): the Prism mock of the spec, and the real service behind Prism's
 * validating proxy. Every exchange is recorded; the suite then requires that none carries `sl-violations`
 * and that the proxy refused none. Against Prism, which keeps no state and answers with the spec's
 * examples, a step checks status and shape; against the service it also checks what the service did.
 * An error step names the spec's example of that error: the expected status, `code` and exact `detail` are
 * read from it, and on Prism it is asked for with `Prefer`, so both targets are held to the same text.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { createContractClient, type Problem } from '../../client/index.js';
import { files, rows, submitScore, type ToolRequestOptions } from '../../client/tool/index.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const VERSION = '2026-09-21';
const bundle = JSON.parse(readFileSync(path.join(repoRoot, 'generated', VERSION, 'openapi.json'), 'utf8')) as {
  components: { examples: Record<string, { value: unknown }> };
};

/** The spec's example of an error: the status, code and detail a target must answer. */
export function specProblem(name: string): Problem {
  const example = bundle.components.examples[name];
  if (!example) throw new Error(`the spec has no example ${name}`);
  return example.value as Problem;
}

export interface Exchange {
  step: string;
  method: string;
  url: string;
  status: number;
  violations: string | null;
  /** The problem `type` of an error answer (Prism's own refusals are `https://stoplight.io/prism/errors#...`). */
  problemType: string | null;
}

/** The URLs and credentials a target hands the scenario: what launches of a student and a classmate carry. */
export interface ScenarioTarget {
  label: string;
  /** The service keeps state: reads are checked against what was written. Prism does not. */
  stateful: boolean;
  /** Origin for the typed contract client (the mock, or the proxy). */
  origin: string;
  ids: { context: string; app: string; location: string; member: string };
  /** The student's launch: `api.token` and the claims' URLs. */
  student: { token: string; memberLocationRow: string; contextRow: string; memberLocationFiles: string; gradeSubmit: string };
  /** A classmate's member_location row URL (the student's token may not touch it). */
  classmateRow: string;
  /** The student's grade.submit URL with the member segment changed to the classmate. */
  classmateScore: string;
  /** A grade.submit URL (the `/contexts/...` form) of a practice location placed in the same course. */
  practiceScore: string;
  /** The tool's API key (acting as the tool's server). */
  apiKey: string;
  /**
   * The fetch the kit is given for one step: it routes the call to the target (the URLs in answers, such
   * as an upload form's, name the service's origin), asks Prism for the named example when there is one,
   * and records the exchange.
   */
  fetchFor(step: string, prefer: string | null): typeof globalThis.fetch;
  exchanges: Exchange[];
}

export interface Step {
  name: string;
  /** The spec's example of the error this step must produce. */
  error?: string;
  run(target: ScenarioTarget, options: ToolRequestOptions): Promise<void>;
}

function preferOf(error: string | undefined): string | null {
  if (error === undefined) return null;
  return `code=${specProblem(error).status}, example=${error}`;
}

/** `error` must be the example's problem: status, code and exact detail, in the envelope. */
export function expectProblem(error: Problem | undefined, name: string): void {
  const expected = specProblem(name);
  expect(error, `expected ${expected.status} ${expected.detail}`).toBeDefined();
  expect({ status: error?.status, code: error?.code, detail: error?.detail }).toEqual({
    status: expected.status,
    code: expected.code,
    detail: expected.detail,
  });
  expect(error?.type).toBe(expected.type);
}

/** A fresh copy of what the scenario writes, so each target starts from the same values. */
const WRITTEN = { answers: { q1: 'B' }, attempt: 1, draft: true };
const PATCHED = { answers: { q1: 'B', q2: 'D' }, attempt: 2 };
// JSON, the kind of file a tool most often keeps (the quiz's answer sheet). It also keeps the download's spec
// honest: a schema that demanded a string would make the proxy, which parses a JSON body before checking
// it, turn the service's correct answer into a 500.
const SHEET = Buffer.from(JSON.stringify({ answers: { q1: 'B', q2: 'D' } }));
const SHEET_KEY = 'answers.json';
const SHEET_TYPE = 'application/json';
const MISSING_KEY = 'lab-report-week3.pdf';
/** A location ID no course has (the spec's example ID; the service generates others). */
const UNKNOWN_LOCATION = 'loc_5n8p2r6t9v1x4z7b3d0f';

export const scenario: readonly Step[] = [
  {
    name: 'reads the member_location row; never written, it is {}',
    async run(t, options) {
      const { data, error } = await rows(t.student.memberLocationRow, t.student.token, options).get();
      expect(error).toBeUndefined();
      expect(typeof data).toBe('object');
      if (t.stateful) expect(data).toEqual({});
    },
  },
  {
    name: 'replaces the row with PUT (204)',
    async run(t, options) {
      const { data, error, response } = await rows(t.student.memberLocationRow, t.student.token, options).put(structuredClone(WRITTEN));
      expect(error).toBeUndefined();
      expect(response.status).toBe(204);
      expect(data).toBeUndefined();
    },
  },
  {
    name: 'reads back exactly what was written',
    async run(t, options) {
      const { data, error } = await rows(t.student.memberLocationRow, t.student.token, options).get();
      expect(error).toBeUndefined();
      if (t.stateful) expect(data).toEqual(WRITTEN);
    },
  },
  {
    name: 'patches the row with add, replace and remove (204)',
    async run(t, options) {
      const row = rows(t.student.memberLocationRow, t.student.token, options);
      const { error, response } = await row.patch([
        { op: 'add', path: '/answers/q2', value: 'D' },
        { op: 'replace', path: '/attempt', value: 2 },
        { op: 'remove', path: '/draft' },
      ]);
      expect(error).toBeUndefined();
      expect(response.status).toBe(204);
      if (t.stateful) expect((await row.get()).data).toEqual(PATCHED);
    },
  },
  {
    name: 'lets a student read the shared course row',
    async run(t, options) {
      const { data, error } = await rows(t.student.contextRow, t.student.token, options).get();
      expect(error).toBeUndefined();
      expect(typeof data).toBe('object');
    },
  },
  {
    name: 'stores a file: the ask-to-store PUT, then the signed multipart POST',
    async run(t, options) {
      const { data, error } = await files(t.student.memberLocationFiles, t.student.token, options).upload(SHEET_KEY, SHEET, { mimetype: SHEET_TYPE });
      expect(error).toBeUndefined();
      expect(data).toEqual({ key: SHEET_KEY, size: SHEET.byteLength });
      const calls = t.exchanges.filter((e) => e.step === this.name);
      expect(calls.map((e) => `${e.method} ${e.status}`)).toEqual(['PUT 200', 'POST 204']);
    },
  },
  {
    name: "lists the row's files",
    async run(t, options) {
      const { data, error } = await files(t.student.memberLocationFiles, t.student.token, options).list();
      expect(error).toBeUndefined();
      expect(Array.isArray(data)).toBe(true);
      if (t.stateful) expect(data).toEqual([{ key: SHEET_KEY, size: SHEET.byteLength, modified: expect.any(Number) }]);
    },
  },
  {
    name: 'reads one file and downloads it from its signed URL',
    async run(t, options) {
      const { data, error } = await files(t.student.memberLocationFiles, t.student.token, options).read(SHEET_KEY);
      expect(error).toBeUndefined();
      expect(data).toMatchObject({ url: expect.any(String), expires: expect.any(Number), content_type: expect.any(String) });
      const download = await (options.fetch as typeof fetch)(data!.url);
      expect(download.status).toBe(200);
      const bytes = Buffer.from(await download.arrayBuffer());
      if (t.stateful) {
        expect(data).toMatchObject({ key: SHEET_KEY, size: SHEET.byteLength, content_type: SHEET_TYPE });
        expect(download.headers.get('content-type')).toMatch(/^application\/json/);
        expect(bytes.equals(SHEET)).toBe(true);
      }
    },
  },
  {
    name: 'deletes the file (204), and the row has no files left',
    async run(t, options) {
      const store = files(t.student.memberLocationFiles, t.student.token, options);
      const { error, response } = await store.delete(SHEET_KEY);
      expect(error).toBeUndefined();
      expect(response.status).toBe(204);
      if (t.stateful) expect((await store.list()).data).toEqual([]);
    },
  },
  {
    name: 'submits a score to grade.submit and gets the attempt',
    async run(t, options) {
      const sent = await submitScore(t.student.gradeSubmit, t.student.token, { score: 0.75, comment: 'lockstep' }, options);
      expect(sent.skipped).toBe(false);
      if (sent.skipped) return;
      expect(sent.error).toBeUndefined();
      expect(sent.data).toMatchObject({ id: expect.any(String), status: expect.stringMatching(/^(success|failed)$/), score: expect.any(Number) });
      if (t.stateful) {
        expect(sent.data).toMatchObject({
          status: 'success',
          score: 0.75,
          member: t.ids.member,
          location: t.ids.location,
          app: t.ids.app,
          context: t.ids.context,
          data: { comment: 'lockstep', error: '', source_type: 'session' },
        });
      }
    },
  },
  // A request with no Authorization at all is not in the scenario: the spec declares the bearer credential,
  // so the proxy (--errors) refuses it itself and it never reaches the service (mocks README).
  {
    name: '401: a bearer token the service never issued',
    error: 'InvalidBearerToken',
    async run(t, options) {
      const { error } = await rows(t.student.memberLocationRow, 'tis_at_lockstepUnknownToken0000000000000000000', options).get();
      expectProblem(error, 'InvalidBearerToken');
    },
  },
  {
    name: '403: a student writes the shared course row',
    error: 'StudentWriteSharedRow',
    async run(t, options) {
      const { error } = await rows(t.student.contextRow, t.student.token, options).put({ settings: 'mine' });
      expectProblem(error, 'StudentWriteSharedRow');
    },
  },
  {
    name: "403: a student reads a classmate's row",
    error: 'OtherStudentRow',
    async run(t, options) {
      const { error } = await rows(t.classmateRow, t.student.token, options).get();
      expectProblem(error, 'OtherStudentRow');
    },
  },
  {
    name: '403: a student scores a classmate',
    error: 'StudentOtherMember',
    async run(t, options) {
      const sent = await submitScore(t.classmateScore, t.student.token, { score: 1 }, options);
      expect(sent.skipped).toBe(false);
      if (!sent.skipped) expectProblem(sent.error, 'StudentOtherMember');
    },
  },
  {
    name: '404: a file key with no file',
    error: 'FileNotFound',
    async run(t, options) {
      const { error } = await files(t.student.memberLocationFiles, t.student.token, options).read(MISSING_KEY);
      expectProblem(error, 'FileNotFound');
    },
  },
  {
    name: '404: the row of a location that does not exist (typed client)',
    error: 'RowNotFound',
    async run(t, options) {
      const client = createContractClient({
        version: VERSION,
        baseUrl: t.origin,
        token: t.student.token,
        ...(options.fetch ? { fetch: options.fetch } : {}),
      });
      const { error, response } = await client.GET('/v1/contexts/{context_id}/apps/{app_id}/locations/{location_id}/storage', {
        params: { path: { context_id: t.ids.context, app_id: t.ids.app, location_id: UNKNOWN_LOCATION } },
      });
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expectProblem(error, 'RowNotFound');
    },
  },
  {
    name: '422: a patch whose second operation fails, leaving the row unchanged',
    error: 'PatchOperationFailed',
    async run(t, options) {
      const row = rows(t.student.memberLocationRow, t.student.token, options);
      const { error } = await row.patch([
        { op: 'add', path: '/answers/q3', value: 'A' },
        { op: 'replace', path: '/answers/q9', value: 'C' },
      ]);
      expectProblem(error, 'PatchOperationFailed');
      if (t.stateful) expect((await row.get()).data).toEqual(PATCHED);
    },
  },
  {
    name: '422: a score for a location that is not an assessment (API key)',
    error: 'NotAssessmentLocation',
    async run(t, options) {
      const sent = await submitScore(t.practiceScore, t.apiKey, { score: 0.5 }, options);
      expect(sent.skipped).toBe(false);
      if (!sent.skipped) expectProblem(sent.error, 'NotAssessmentLocation');
    },
  },
];

/** Runs one step with the target's recording fetch (and, on Prism, the `Prefer` its error example needs). */
export async function runStep(step: Step, target: ScenarioTarget): Promise<void> {
  const options: ToolRequestOptions = { contractVersion: VERSION, fetch: target.fetchFor(step.name, preferOf(step.error)) };
  await step.run(target, options);
  const calls = target.exchanges.filter((e) => e.step === step.name);
  expect(calls.length, 'the step made no call').toBeGreaterThan(0);
  // Prism's own problems (a refused request, or a response that broke the spec) have Stoplight's type.
  expect(calls.filter((e) => e.violations !== null || e.problemType?.startsWith(PRISM_PROBLEM) === true)).toEqual([]);
}

/** The `type` of every problem Prism itself answers with. */
export const PRISM_PROBLEM = 'https://stoplight.io/prism/errors#';

/**
 * A fetch that sends URLs on `from` to `to` (the claims' origin to the proxy, or the spec examples' origin
 * to the mock), adds `Prefer` when given, and records every exchange with its violations.
 */
export function recordingFetch(options: {
  step: string;
  from: string;
  to: string;
  prefer: string | null;
  exchanges: Exchange[];
}): typeof globalThis.fetch {
  return async (input, init) => {
    const original = new Request(input, init);
    const url = original.url.startsWith(options.from) ? options.to + original.url.slice(options.from.length) : original.url;
    const headers = new Headers(original.headers);
    if (options.prefer !== null) headers.set('Prefer', options.prefer);
    const body = original.body === null ? undefined : await original.arrayBuffer();
    const response = await fetch(url, {
      method: original.method,
      headers,
      ...(body !== undefined ? { body } : {}),
      redirect: 'manual',
    });
    let problemType: string | null = null;
    if (response.status >= 400) {
      try {
        problemType = String(((await response.clone().json()) as { type?: unknown }).type ?? '');
      } catch {
        problemType = '(not JSON)';
      }
    }
    options.exchanges.push({
      step: options.step,
      method: original.method,
      url,
      status: response.status,
      violations: response.headers.get('sl-violations'),
      problemType,
    });
    return response;
  };
}
