/**
 * The mocks tool teams develop against (`npm run mock`, `mock:proxy`, `mock:tool`), over real HTTP: each
 * serves its own contract's examples, `Prefer` reaches named examples and error cases, a request that breaks
 * the spec is refused with the violation visible, the proxy validates a real upstream, and the launcher
 * stops Prism on a signal. The example quiz's `try-mock` step runs against the current contract's mock.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contractVersions, currentContractVersion } from '../../generated/index.js';
import { defaultPort, defaultPorts, planFrom, rewriteOrigins, toolDefaultPort } from '../../mocks/targets.js';
import { runQuiz } from '../examples/quiz-process.js';
import { isAlive, repoRoot, runLauncher, startMock, stopAllMocks, type RunningMock } from './launcher.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Spec = { components: { examples: Record<string, { value: Json }> } };

function spec(api: string, file = 'openapi.json'): Spec {
  return JSON.parse(readFileSync(path.join(repoRoot, 'generated', api, file), 'utf8')) as Spec;
}
const current = spec(currentContractVersion);
const archived0825 = spec('2026-08-25');
const toolSpec = spec(currentContractVersion, 'tool-openapi.json');
const example = (s: Spec, name: string): Json => {
  const found = s.components.examples[name];
  if (found === undefined) throw new Error(`no example ${name}`);
  return found.value;
};

const ctx = 'ctx_7k2m9q4r8t1v5w3x6y0z';
const app = 'app_3f9c2a7d1e5b8h4j6k0m';
const loc = 'loc_5n8p2r6t9v1x4z7b3d0f';
const mem = 'mem_2c6e9g3j7l1n5q8s4u0w';
const contextRow = `/v1/contexts/${ctx}/apps/${app}/storage`;
const locationRow = `/v1/contexts/${ctx}/apps/${app}/locations/${loc}/storage`;
const scores = `/v1/contexts/${ctx}/apps/${app}/locations/${loc}/members/${mem}/scores`;
const apiToken = { Authorization: 'Bearer tis_at_Q3v8Xk2mP9wR4tY7uB1nC6dF0gH5jL8aS2eT4yU9iO3' };
const apiKey = { Authorization: `Bearer ltiaas_${app}_s3cr3tK3yV4lu3` };
const json = { 'Content-Type': 'application/json' };

interface Violation {
  location: string[];
  code: string | number;
  message: string;
}
function violations(res: Response): Violation[] {
  const header = res.headers.get('sl-violations');
  return header === null ? [] : (JSON.parse(header) as Violation[]);
}

describe('the port plan and the command line', () => {
  it('gives every API its documented, distinct port', () => {
    expect(defaultPort(currentContractVersion)).toBe(4010);
    expect(defaultPort('2026-08-25')).toBe(4025);
    expect(defaultPort('2026-08-19')).toBe(4019);
    expect(defaultPort('dashboard')).toBe(4090);
    const ports = [...defaultPorts().values()];
    expect(new Set(ports).size).toBe(ports.length);
    for (const version of contractVersions) expect(toolDefaultPort(version)).toBe(4100);
    expect(ports).not.toContain(4100);
  });

  it('reads the upstream from the argument, else TIS_UPSTREAM, else the local service', () => {
    expect(planFrom('proxy', ['http://127.0.0.1:9999/'], { TIS_UPSTREAM: 'http://127.0.0.1:8888' }).upstream).toBe('http://127.0.0.1:9999');
    expect(planFrom('proxy', ['2026-08-25'], { TIS_UPSTREAM: 'http://127.0.0.1:8888' })).toMatchObject({
      api: '2026-08-25',
      upstream: 'http://127.0.0.1:8888',
      port: 4025,
    });
    const plan = planFrom('proxy', [], {});
    expect(plan.upstream).toBe('http://127.0.0.1:3000');
    expect(plan.prismArgs).toEqual(expect.arrayContaining(['proxy', '--errors', '--verboseLevel', 'warn']));
  });

  it('takes the port from --port, else TIS_MOCK_PORT, and listens on loopback by default', () => {
    expect(planFrom('mock', ['2026-08-19', '--port', '5019'], { TIS_MOCK_PORT: '6000' }).port).toBe(5019);
    expect(planFrom('tool', [], { TIS_MOCK_PORT: '6000' }).port).toBe(6000);
    expect(planFrom('mock', [], {})).toMatchObject({ host: '127.0.0.1', port: 4010, api: currentContractVersion });
  });

  it('refuses an unknown version, listing the served ones, and exits non-zero without starting Prism', async () => {
    const result = await runLauncher('mock', ['2026-01-01']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('unknown version "2026-01-01"');
    for (const version of contractVersions) expect(result.stderr).toContain(version);
    expect(result.stdout).not.toContain('Prism');
  });
});

describe('Prism mocks started by the launcher', () => {
  let currentMock: RunningMock;
  let mock0825: RunningMock;
  let mock0819: RunningMock;
  let toolMock: RunningMock;
  let proxy: RunningMock;
  let upstream: http.Server;
  const forwarded: string[] = [];

  beforeAll(async () => {
    // A stand-in for the service: one answer that keeps the contract, one that breaks it.
    upstream = http.createServer((req, res) => {
      forwarded.push(`${req.method} ${req.url}`);
      req.resume();
      req.on('end', () => {
        res.setHeader('Content-Type', 'application/json');
        res.end(req.url === contextRow ? '{"from":"upstream"}' : '["not","a","row"]');
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    try {
      [currentMock, mock0825, mock0819, toolMock, proxy] = await Promise.all([
        startMock('mock'),
        startMock('mock', ['2026-08-25']),
        startMock('mock', ['2026-08-19']),
        startMock('tool'),
        startMock('proxy', [currentContractVersion], { env: { TIS_UPSTREAM: upstreamUrl } }),
      ]);
    } catch (err) {
      await stopAllMocks();
      throw err;
    }
  }, 200_000);

  afterAll(async () => {
    await stopAllMocks();
    await new Promise((resolve) => upstream?.close(resolve));
  });

  describe('npm run mock (current contract)', () => {
    it('hands out URLs that point at the mock itself on loopback (the upload form, the signed download)', async () => {
      const put = await fetch(`${currentMock.url}/v1/contexts/${ctx}/apps/${app}/files/lab-report.pdf`, {
        method: 'PUT',
        headers: { ...apiToken, ...json },
        body: JSON.stringify({ size: 1024 }),
      });
      expect(put.status).toBe(200);
      const form = (await put.json()) as { url: string };
      // The upload target is outside the API (L-05), but still on the mock's own origin.
      expect(form.url, form.url).toBe(`${currentMock.url}/uploads`);
      const read = await fetch(`${currentMock.url}/v1/contexts/${ctx}/apps/${app}/files/lab-report.pdf`, { headers: apiToken });
      const detail = (await read.json()) as { url: string };
      expect(detail.url.startsWith(`${currentMock.url}/v1/downloads/`), detail.url).toBe(true);
      // And the mock answers them.
      expect((await fetch(detail.url)).status).toBe(200);
    });

    it('serves the spec\'s first example for a row', async () => {
      const res = await fetch(`${currentMock.url}${contextRow}`, { headers: apiToken });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(example(current, 'ContextRow'));
    });

    it('serves a named example on Prefer: example=<name>', async () => {
      const res = await fetch(`${currentMock.url}${contextRow}`, { headers: { ...apiToken, Prefer: 'example=EmptyRow' } });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({});
    });

    it('serves an error case, with the contract\'s message, on Prefer: code=<status>', async () => {
      const res = await fetch(`${currentMock.url}${scores}`, {
        method: 'POST',
        headers: { ...apiToken, ...json, Prefer: 'code=422, example=ScoreOutOfRange' },
        body: JSON.stringify({ score: 0.5 }),
      });
      expect(res.status).toBe(422);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      const problem = (await res.json()) as { status: number; detail: string };
      expect(problem).toEqual(example(current, 'ScoreOutOfRange'));
      expect(problem.detail).toBe('score must be between 0 and 1');

      const notFound = await fetch(`${currentMock.url}${contextRow}`, { headers: { ...apiToken, Prefer: 'code=404' } });
      expect(notFound.status).toBe(404);
      expect(await notFound.json()).toEqual(example(current, 'RowNotFound'));
      expect(example(current, 'RowNotFound')).toMatchObject({ detail: 'row not found' });
    });

    it('answers a valid score submission with the recorded attempt', async () => {
      const res = await fetch(`${currentMock.url}${scores}`, {
        method: 'POST',
        headers: { ...apiToken, ...json },
        body: JSON.stringify({ score: 0.85, activity_progress: 'Completed', grading_progress: 'FullyGraded' }),
      });
      expect(res.status).toBe(200);
      expect(violations(res)).toEqual([]);
      expect(await res.json()).toEqual(example(current, 'AttemptSuccess'));
    });

    it('refuses a request that breaks the spec and names the violation in sl-violations', async () => {
      const res = await fetch(`${currentMock.url}${scores}`, {
        method: 'POST',
        headers: { ...apiToken, ...json },
        body: JSON.stringify({ score: 2 }),
      });
      expect(res.status).toBe(422);
      // The body is the spec's first 422 example, whatever was wrong: the header says what was.
      expect(violations(res)).toEqual([
        expect.objectContaining({ location: ['request', 'body', 'score'], code: 'maximum' }),
      ]);
    });

    it('asks for the credential the operation declares', async () => {
      const res = await fetch(`${currentMock.url}${contextRow}`);
      expect(res.status).toBe(401);
      expect(violations(res)).not.toEqual([]);
      expect(((await res.json()) as { detail: string }).detail).toBe('Missing bearer token');
    });

    it('serves only the current contract\'s operations', async () => {
      const res = await fetch(`${currentMock.url}/v1/apps/me`, { headers: apiKey });
      expect(res.status).toBe(404);
    });

    // The example quiz's README, step 1 (`npm run example:quiz -- try-mock`): one student attempt against
    // this mock, the process as the README runs it (moved here from tests/examples/quiz.test.ts, which
    // started a mock of its own for it: decision CI-46).
    it('takes the example quiz\'s step 1: one attempt that makes only calls the contract allows', async () => {
      const run = await runQuiz({}, ['try-mock', currentMock.url]);
      expect(run.output).toContain('every call the quiz made is one the contract allows');
      expect(run.code).toBe(0);
      // Each kind of call the quiz makes on a launch was made.
      for (const call of ['GET    ', 'PUT    ', 'PATCH  ', 'POST   /uploads -> 204', '/scores -> 200', '/files/answer-sheet.json -> 200']) {
        expect(run.output).toContain(call);
      }
    }, 60_000);
  });

  describe('npm run mock -- <archived version>', () => {
    it('2026-08-25 serves its own operations and examples', async () => {
      const me = await fetch(`${mock0825.url}/v1/apps/me`, { headers: apiKey });
      expect(me.status).toBe(200);
      expect(await me.json()).toEqual(example(archived0825, 'ActiveApp'));
      const rotate = await fetch(`${mock0825.url}/v1/apps/me/rotate-key`, { method: 'POST', headers: apiKey });
      expect(rotate.status).toBe(200);
      const row = await fetch(`${mock0825.url}${contextRow}`, { headers: { ...apiToken, Prefer: 'example=EmptyRow' } });
      expect(await row.json()).toEqual({});
      // The score URL of a launch is the current contract's; 2026-08-25 grades through /v1/grades.
      const score = await fetch(`${mock0825.url}${scores}`, { method: 'POST', headers: { ...apiToken, ...json }, body: '{"score":0.5}' });
      expect(score.status).toBe(404);
    });

    it('2026-08-19 serves its own operations, without the key rotation 2026-08-25 added', async () => {
      const me = await fetch(`${mock0819.url}/v1/apps/me`, { headers: apiKey });
      expect(me.status).toBe(200);
      const rotate = await fetch(`${mock0819.url}/v1/apps/me/rotate-key`, { method: 'POST', headers: apiKey });
      expect(rotate.status).toBe(404);
    });
  });

  describe('npm run mock:tool', () => {
    it('answers a launch form with the tool\'s page', async () => {
      const res = await fetch(`${toolMock.url}/launch`, {
        method: 'POST',
        body: new URLSearchParams({ launch_data: 'eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJ4In0.c2lnbmF0dXJl' }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/html');
      expect(await res.text()).toBe(example(toolSpec, 'LaunchPage'));
    });

    it('refuses a launch that is not the contract\'s form', async () => {
      const asJson = await fetch(`${toolMock.url}/launch`, { method: 'POST', headers: json, body: '{"launch_data":"a.b.c"}' });
      expect(asJson.status).toBe(415);
      const missing = await fetch(`${toolMock.url}/launch`, { method: 'POST', body: new URLSearchParams({ token: 'a.b.c' }) });
      expect(missing.status).toBe(422);
    });
  });

  describe('npm run mock:proxy', () => {
    it('forwards a request and passes an answer that keeps the contract', async () => {
      const res = await fetch(`${proxy.url}${contextRow}`, { headers: apiToken });
      expect(res.status).toBe(200);
      expect(violations(res)).toEqual([]);
      expect(await res.json()).toEqual({ from: 'upstream' });
      expect(forwarded).toContain(`GET ${contextRow}`);
    });

    it('turns an answer that breaks the contract into an error (--errors)', async () => {
      const res = await fetch(`${proxy.url}${locationRow}`, { headers: apiToken });
      expect(res.status).toBe(500);
      expect(violations(res)).toEqual([expect.objectContaining({ location: ['response', 'body'] })]);
    });

    it('refuses a request that breaks the contract without forwarding it', async () => {
      const before = forwarded.length;
      const res = await fetch(`${proxy.url}${scores}`, { method: 'POST', headers: { ...apiToken, ...json }, body: '{"score":2}' });
      expect(res.status).toBe(422);
      const body = (await res.json()) as { validation: Violation[] };
      expect(body.validation).toEqual([expect.objectContaining({ location: ['body', 'score'], code: 'maximum' })]);
      expect(forwarded.length).toBe(before);
    });
  });

  describe('stopping', () => {
    it('SIGTERM stops Prism and the launcher exits 0', async () => {
      const code = await toolMock.stop('SIGTERM');
      expect(code).toBe(0);
      expect(isAlive(toolMock.prismPid)).toBe(false);
      await expect(fetch(`${toolMock.url}/launch`, { method: 'POST' })).rejects.toThrow();
    });

    it('SIGINT (Ctrl-C) does the same', async () => {
      const code = await mock0819.stop('SIGINT');
      expect(code).toBe(0);
      expect(isAlive(mock0819.prismPid)).toBe(false);
    });
  });
});

describe('the documents the mocks serve', () => {
  it('name no origin but the mock\'s own: every URL of the spec\'s origin is rewritten to the mock', () => {
    for (const api of ['2026-09-21', '2026-08-25', '2026-08-19', 'dashboard'] as const) {
      const plan = planFrom('mock', [api]);
      expect(plan.rewrite, api).toEqual({ from: 'https://tis.example.edu', to: `http://127.0.0.1:${plan.port}` });
      const served = rewriteOrigins(readFileSync(plan.document, 'utf8'), plan.rewrite!);
      expect(served, api).not.toContain('https://tis.example.edu');
      expect(served, api).toContain(`http://127.0.0.1:${plan.port}/`);
    }
  });
});
