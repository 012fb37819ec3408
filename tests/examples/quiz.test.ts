/**
 * The example quiz tool (examples/quiz), run as its README runs it: a child process on 127.0.0.1, in front
 * of a real service (tests/server/harness.ts, ALLOW_LOOPBACK_TOOLS on) whose tool settings point at it.
 * The service opens the picker (a real locations request), places locations (real provision requests),
 * and signs real launches, which are delivered the way the browser delivers them: a form POST of
 * `launch_data` to the callback URL. What the quiz stored is read back through the service's own API.
 * The README's step 1 (`try-mock`, one attempt against the Prism mock) runs in tests/mocks/prism.test.ts
 * against the mock that file starts (decision CI-46).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboardClient } from '../../client/index.js';
import type { GradeAttempt } from '../../client/tool/index.js';
import { normalizeLocationsResponse } from '../../rules/locations.js';
import { openPicker, placeFromPicker } from '../../server/placements/index.js';
import type { ContextRecord, ProvisioningLevel } from '../../server/store/index.js';
import {
  createTool,
  ensureLmsCourse,
  launch,
  linkInLms,
  readLmsGradebook,
  sandboxSchool,
  startServer,
  type PlacedLocation,
  type TestServer,
  type Tool,
} from '../server/harness.js';
import { QuizConfigError, quizConfigFrom } from '../../examples/quiz/config.js';
import { runQuiz, startQuiz, type QuizProcess } from './quiz-process.js';

let server: TestServer;
let tool: Tool;
let quiz: QuizProcess;
let course: ContextRecord;

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true } });
  tool = await createTool(server, { name: 'Quiz' });
  quiz = await startQuiz({ TIS_ORIGIN: server.url, TIS_APP_ID: tool.app.id, ALLOW_LOOPBACK_SERVICE: '1' });
  await server.services.store.apps.update(tool.app.id, {
    callbackUrl: `${quiz.url}/launch`,
    provisionUrl: `${quiz.url}/provision`,
    locationsUrl: `${quiz.url}/locations`,
  });
  course = await newCourse(tool.app.id, 'Introduction to Statistics');
}, 60_000);

afterAll(async () => {
  const code = await quiz?.stop();
  await server?.stop();
  // A clean SIGTERM stop, checked here so a hung quiz shows up as a failure, not a leak.
  expect(code).toBe(0);
});

/**
 * A course at the tool's Sandbox school, a deployment of the service's in-process reference LMS (so scores
 * land for real in its gradebook over AGS), as an LMS launch would create it, and the LMS's course.
 */
async function newCourse(appId: string, name: string): Promise<ContextRecord> {
  const school = await sandboxSchool(server, appId);
  const course = await server.services.store.contexts.upsert({ organizationId: school.id, externalId: `course-${randomUUID()}`, name, label: 'STAT 101' });
  await ensureLmsCourse(server, appId, course);
  return course;
}

function form(fields: Record<string, string>): RequestInit {
  return {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  };
}

async function waitFor(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`still waiting after ${ms} ms; the quiz printed:\n${quiz.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function waitProvisioned(level: ProvisioningLevel): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const record = await server.services.store.provisioning.get(level);
    if (record?.state === 'provisioned') return;
    if (Date.now() > deadline) throw new Error(`level ${JSON.stringify(level)} is ${record?.state ?? 'unknown'}\n${quiz.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Opens the picker in the course and places one of the quiz's locations, as an instructor would. */
async function place(extid: string): Promise<PlacedLocation> {
  await openPicker(server.services, { appId: tool.app.id, contextId: course.id });
  // The LMS makes an assessment's gradebook column with its resource link, as a school's LMS does (LTI-15, LTI-45).
  const outcome = await placeFromPicker(server.services, { appId: tool.app.id, contextId: course.id, extid });
  expect(outcome.provisioning.error).toBeNull();
  await waitProvisioned({ appId: tool.app.id, contextId: course.id });
  await waitProvisioned({ appId: tool.app.id, contextId: course.id, locationId: outcome.location.id });
  const school = await sandboxSchool(server, tool.app.id);
  const placement = outcome.placement.entry.type === 'assessment' ? await linkInLms(server, school, course, outcome.placement) : outcome.placement;
  return {
    appId: tool.app.id,
    organization: school,
    organizationInput: { issuer: school.issuer, client: school.client, deployment: school.deployment, title: school.title },
    context: course,
    location: outcome.location,
    placement,
  };
}

/** The quiz page's form action, resolved as the browser resolves it against the callback URL. */
function actionOf(html: string): string {
  const action = /<form method="post" action="([^"]+)" id="quiz">/.exec(html)?.[1];
  if (!action) throw new Error(`no quiz form in:\n${html}`);
  return new URL(action.replace(/&#(\d+);/g, (_m, c: string) => String.fromCharCode(Number(c))), `${quiz.url}/launch`).href;
}

/** The tool's grade attempts, read with the platform team's token through the dashboard API. */
async function gradeHistory(query: { member_id?: string; location_id?: string }): Promise<GradeAttempt[]> {
  const token = readFileSync(path.join(server.dataDir, 'platform-token'), 'utf8').trim();
  const dashboard = createDashboardClient({ baseUrl: server.url, token });
  const { data, error } = await dashboard.GET('/dashboard/v1/apps/{app_id}/grades', {
    params: { path: { app_id: tool.app.id }, query: { context_id: course.id, ...query } },
  });
  if (error) throw new Error(`grade history: ${error.status} ${error.detail}`);
  return data.attempts;
}

async function getJson(url: string, token: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, { headers: { Authorization: `Bearer ${token}` } });
  return { status: response.status, body: await response.json() };
}

describe('the locations request', () => {
  it("answers an assessment, a practice item and groups, which pass the service's own rules", async () => {
    const request = await server.services.launches.locationsRequest({ appId: tool.app.id, contextId: course.id });
    const response = await fetch(`${quiz.url}/locations`, form({ launch_data: request.token }));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const text = await response.text();
    const checked = normalizeLocationsResponse(text);
    expect(checked.ok, JSON.stringify(checked)).toBe(true);
    if (!checked.ok) return;
    const { tree } = checked;
    expect(tree.message).toBe('Pick the quizzes to add to this course. Practice items are never graded.');
    expect(tree.locations).toEqual([
      { extid: 'final-quiz', type: 'assessment', label: 'Final quiz', description: 'Three questions on the whole course. Graded.', points: 30 },
    ]);
    expect(tree.groups.map((g) => g.label)).toEqual(['Unit 1: Describing data', 'Unit 2: Probability']);
    expect(tree.groups[0]?.locations.map((l) => [l.extid, l.type])).toEqual([
      ['unit-1-quiz', 'assessment'],
      ['unit-1-practice', 'practice'],
    ]);
    expect(tree.groups[1]?.locations.map((l) => [l.extid, l.type])).toEqual([['unit-2-practice', 'practice']]);
  });

  it("is what the service's picker shows when an instructor opens it", async () => {
    const picker = await openPicker(server.services, { appId: tool.app.id, contextId: course.id });
    expect(picker.message).toContain('Pick the quizzes');
    expect(picker.locations.map((l) => l.extid)).toEqual(['final-quiz']);
    expect(picker.groups.map((g) => [g.label, g.count])).toEqual([
      ['Unit 1: Describing data', 2],
      ['Unit 2: Probability', 1],
    ]);
  });

  it('refuses a token it cannot verify with 401', async () => {
    const response = await fetch(`${quiz.url}/locations`, form({ launch_data: 'not-a-jwt' }));
    expect(response.status).toBe(401);
    expect(((await response.json()) as { code: string }).code).toBe('malformed');
  });
});

describe('provisioning', () => {
  it('answers 204 at once, then PUTs the course and location provision URLs', async () => {
    const other = await newCourse(tool.app.id, 'Second course');
    const location = (await server.services.store.locations.listForApp(tool.app.id)).find((l) => l.extid === 'final-quiz');
    expect(location).toBeDefined();
    const request = await server.services.launches.provisionRequest({ appId: tool.app.id, contextId: other.id, locationId: location!.id });
    expect(await server.services.store.provisioning.isProvisioned({ appId: tool.app.id, contextId: other.id })).toBe(false);
    const response = await fetch(`${quiz.url}/provision`, form({ launch_data: request.token }));
    expect(response.status).toBe(204);
    expect(await response.text()).toBe('');
    await waitProvisioned({ appId: tool.app.id, contextId: other.id });
    await waitProvisioned({ appId: tool.app.id, contextId: other.id, locationId: location!.id });
    // The quiz logs each PUT once answered; its output reaches this process a moment after the store changed.
    await waitFor(() => quiz.output().includes(`provisioned ${request.claims.provision.location}`));
    expect(quiz.output()).toContain(`provisioned ${request.claims.provision.context}\nprovisioned ${request.claims.provision.location}\n`);
  });

  it("is how a placement made through the service's picker becomes launchable", async () => {
    const placed = await place('final-quiz');
    const student = await launch(server, { placed });
    // The course row answers 422 until the course level is provisioned; now it reads.
    const row = await getJson(student.claims.storage.context, student.apiToken);
    expect(row).toEqual({ status: 200, body: {} });
  });
});

describe("a student's launch of a graded quiz", () => {
  let placed: PlacedLocation;
  const person = `student-${Date.now()}`;

  beforeAll(async () => {
    placed = await place('unit-1-quiz');
  });

  it('renders the quiz, keeps the answers in the member_location row, stores the answer sheet and sends the score', async () => {
    const student = await launch(server, { placed, userExternalId: person });
    expect(student.claims.grade.submit).not.toBeNull();

    // The browser's form POST of launch_data to the callback URL.
    const page = await fetch(`${quiz.url}/launch`, form({ launch_data: student.token }));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain('<h1>Unit 1 quiz</h1>');
    expect(html).toContain('The median of 1, 3, 9 is');
    expect(html).toContain('Your score goes to the gradebook.');

    // The first launch wrote the quiz's empty state into the row.
    expect(await getJson(student.claims.storage.member_location, student.apiToken)).toEqual({
      status: 200,
      body: { quiz: 'unit-1-quiz', answers: {}, attempts: 0 },
    });

    // The student answers q1 right and q2 wrong.
    const result = await fetch(actionOf(html), form({ q1: '0', q2: '2' }));
    expect(result.status).toBe(200);
    const resultHtml = await result.text();
    expect(resultHtml).toContain('1 of 2 correct.');
    expect(resultHtml).toContain('Gradebook: sent.');

    const row = await getJson(student.claims.storage.member_location, student.apiToken);
    expect(row.status).toBe(200);
    expect(row.body).toMatchObject({
      quiz: 'unit-1-quiz',
      answers: { q1: 0, q2: 2 },
      attempts: 1,
      last: { score: 0.5, correct: 1, total: 2, gradebook: 'sent' },
    });

    const listing = await getJson(student.claims.files.member_location, student.apiToken);
    expect(listing.status).toBe(200);
    expect(listing.body).toEqual([{ key: 'answer-sheet.json', size: expect.any(Number), modified: expect.any(Number) }]);
    const detail = await getJson(`${student.claims.files.member_location}/answer-sheet.json`, student.apiToken);
    expect(detail.body).toMatchObject({ key: 'answer-sheet.json', content_type: 'application/json' });
    const download = await fetch((detail.body as { url: string }).url);
    expect(download.status).toBe(200);
    const sheet = (await download.json()) as Record<string, unknown>;
    expect(sheet).toMatchObject({ quiz: 'unit-1-quiz', attempt: 1, score: 0.5, correct: 1, total: 2 });
    expect((sheet['questions'] as unknown[]).length).toBe(2);
    expect(resultHtml).toContain('id="sheet" href="');

    // The score was published: the tool's grade history (dashboard API) has one successful attempt, and
    // the gradebook of the Sandbox school's LMS holds the score.
    const history = await gradeHistory({ member_id: student.claims.user.member });
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({
      status: 'success',
      score: 0.5,
      location: placed.location.id,
      context: course.id,
      data: { comment: '1 of 2 correct', source_type: 'session', error: '' },
    });
    const book = await readLmsGradebook(server, course);
    expect(book.columns.flatMap((c) => c.scores).filter((s) => s.member_id === student.member.id)).toEqual([
      expect.objectContaining({ comment: '1 of 2 correct', activity_progress: 'Completed', grading_progress: 'FullyGraded' }),
    ]);

    // The launch token was a one-time ticket.
    const replay = await fetch(`${quiz.url}/launch`, form({ launch_data: student.token }));
    expect(replay.status).toBe(401);
    expect(((await replay.json()) as { code: string }).code).toBe('replayed');
  });

  it('shows a returning student the answers kept in the row', async () => {
    const again = await launch(server, { placed, userExternalId: person });
    const html = await (await fetch(`${quiz.url}/launch`, form({ launch_data: again.token }))).text();
    expect(html).toContain('Attempt 1 scored 1 of 2 (gradebook: sent).');
    expect(html).toContain('name="q1" value="0" checked');
    expect(html).toContain('name="q2" value="2" checked');
  });
});

describe('a practice item', () => {
  it('has no grade.submit, so the quiz keeps the answers and sends no score', async () => {
    const placed = await place('unit-1-practice');
    const student = await launch(server, { placed });
    expect(student.claims.grade.submit).toBeNull();
    const html = await (await fetch(`${quiz.url}/launch`, form({ launch_data: student.token }))).text();
    expect(html).toContain('This activity is not graded.');
    const result = await (await fetch(actionOf(html), form({ q1: '0', q2: '0' }))).text();
    expect(result).toContain('2 of 2 correct.');
    expect(result).toContain('Gradebook: not graded.');
    const row = await getJson(student.claims.storage.member_location, student.apiToken);
    expect(row.body).toMatchObject({ answers: { q1: 0, q2: 0 }, attempts: 1, last: { score: 1, gradebook: 'not graded' } });
    expect(await gradeHistory({ location_id: placed.location.id })).toEqual([]);
  });
});

describe('tokens the quiz refuses', () => {
  it('refuses a token the same service signed for another tool', async () => {
    const stranger = await createTool(server, { name: 'Another tool' });
    const theirCourse = await newCourse(stranger.app.id, 'Their course');
    const theirs = await server.services.launches.locationsRequest({ appId: stranger.app.id, contextId: theirCourse.id });
    const refused = await fetch(`${quiz.url}/locations`, form({ launch_data: theirs.token }));
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { code: string }).code).toBe('wrong_audience');
  });

  it("answers a stale page's answers with a page saying so", async () => {
    const stale = await fetch(`${quiz.url}/attempts/no-such-session`, form({ q1: '0' }));
    expect(stale.status).toBe(404);
    expect(await stale.text()).toContain('This quiz page has expired.');
  });
});

describe('configuration', () => {
  it('refuses to start without a tool ID, or on a plain-http service without the development switch', async () => {
    // The process: a refused start prints why and exits 2 (main.ts); the other refusals are the same
    // QuizConfigError from quizConfigFrom, checked in-process (decision CI-46).
    const missing = await runQuiz({ TIS_ORIGIN: 'https://tis.example.edu' });
    expect(missing.code).toBe(2);
    expect(missing.output).toContain('quiz: cannot start:');
    expect(missing.output).toContain('TIS_APP_ID must be');
    const refusal = (env: NodeJS.ProcessEnv): string => {
      try {
        quizConfigFrom(env);
      } catch (err) {
        expect(err).toBeInstanceOf(QuizConfigError);
        return (err as Error).message;
      }
      throw new Error(`${JSON.stringify(env)} was accepted`);
    };
    expect(refusal({ TIS_ORIGIN: 'http://127.0.0.1:3000', TIS_APP_ID: 'app_x' })).toContain('TIS_ORIGIN must be an https:// origin');
    expect(refusal({ TIS_ORIGIN: 'http://127.0.0.1:3000', TIS_APP_ID: 'app_x', ALLOW_LOOPBACK_SERVICE: '1', NODE_ENV: 'production' })).toContain('refused with NODE_ENV=production');
  });
});

describe("the service's log over this journey (issue 26)", () => {
  it('is one JSON object per line, each with one level: no key twice in any object', async () => {
    // A few refusals too, so the lines of errors are among those checked.
    const course0 = `${server.url}/v1/contexts/ctx_x/apps/${tool.app.id}/storage`;
    expect((await fetch(course0, { headers: { Authorization: `Bearer ltiaas_${tool.app.id}_${'x'.repeat(43)}` } })).status).toBe(401);
    expect((await fetch(`${server.url}/v1/nowhere`)).status).toBe(404);
    expect((await fetch(course0, { method: 'PUT', headers: { Authorization: `Bearer ${tool.apiKey}`, 'Content-Type': 'application/json' }, body: '{' })).status).toBeGreaterThanOrEqual(400);
    // The harness's sink gets each line as the stdout writer would write it (server/http/log.ts).
    expect(server.lines.length).toBeGreaterThan(50);
    const levels = new Set<unknown>();
    for (const line of server.lines) {
      const keys = strictKeys(line);
      expect(keys.duplicates, line).toEqual([]);
      expect(keys.top.filter((k) => k === 'level'), line).toEqual(['level']);
      levels.add((JSON.parse(line) as Record<string, unknown>)['level']);
    }
    expect([...levels].every((l) => ['debug', 'info', 'warn', 'error'].includes(String(l)))).toBe(true);
    // The provisioning lines of the journey say which level as a field of its own.
    expect(server.logs.filter((l) => l['msg'] === 'level provisioned').map((l) => l['provisioning_level'])).toEqual(expect.arrayContaining(['context', 'location']));
  });
});

/**
 * A JSON text's keys, read by a strict parser of its own (JSON.parse keeps the last of two equal keys and
 * says nothing): the top object's keys in order, and every key that appears twice in one object.
 */
function strictKeys(text: string): { top: string[]; duplicates: string[] } {
  let at = 0;
  const duplicates: string[] = [];
  let top: string[] = [];
  const fail = (why: string): never => {
    throw new Error(`${why} at ${at} in ${text}`);
  };
  const space = (): void => {
    while (/\s/.test(text[at] ?? '')) at += 1;
  };
  const string = (): string => {
    const match = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/.exec(text.slice(at));
    if (!match) return fail('bad string');
    at += match[0].length;
    return JSON.parse(match[0]) as string;
  };
  const value = (depth: number): void => {
    space();
    const c = text[at];
    if (c === '{') {
      at += 1;
      const seen = new Set<string>();
      const keys: string[] = [];
      space();
      if (text[at] === '}') at += 1;
      else
        for (;;) {
          space();
          const key = string();
          if (seen.has(key)) duplicates.push(key);
          seen.add(key);
          keys.push(key);
          space();
          if (text[at] !== ':') fail('expected :');
          at += 1;
          value(depth + 1);
          space();
          if (text[at] === ',') at += 1;
          else if (text[at] === '}') {
            at += 1;
            break;
          } else fail('expected , or }');
        }
      if (depth === 0) top = keys;
    } else if (c === '[') {
      at += 1;
      space();
      if (text[at] === ']') at += 1;
      else
        for (;;) {
          value(depth + 1);
          space();
          if (text[at] === ',') at += 1;
          else if (text[at] === ']') {
            at += 1;
            break;
          } else fail('expected , or ]');
        }
    } else if (c === '"') string();
    else {
      const match = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(at));
      if (!match) fail('bad value');
      at += (match as RegExpExecArray)[0].length;
    }
  };
  value(0);
  space();
  if (at !== text.length) fail('text after the value');
  if (text.trimStart()[0] !== '{') fail('not an object');
  return { top, duplicates };
}
