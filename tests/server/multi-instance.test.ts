/**
 * Several instances, one PostgreSQL database (issue 7): two REAL service processes (`server/main.ts`, as
 * `npm start` runs it), each on its own port and its own `DATA_DIR`, on the same `DATABASE_URL` and
 * schema with the shared blob store (`BLOB_STORE=postgres`), and no balancer: the test itself sends each
 * request to one instance or the other. Whatever one instance does, the other must honour at once.
 *
 * A third instance runs in this process (the harness's `startServer` on the same schema): fixtures go
 * through its real launch service, and it plays the operator (key rotation, suspension, signing-key
 * rotation through the store every instance reads).
 *
 * Runs in the `postgres` vitest project only (vitest.config.ts).
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlacedLocation, TestLaunch, TestServer, Tool } from './harness.js';
import { createTool, dropTestStore, launch, placeLocation, serviceStoreEnv, startServer, TEST_STORE } from './harness.js';

if (TEST_STORE !== 'postgres') throw new Error('multi-instance.test.ts needs TIS_TEST_STORE=postgres (the postgres vitest project)');

/** The one origin both instances stand for, as behind a load balancer; requests go to each instance's own port. */
const PUBLIC_URL = 'https://tis.multi.test';
const MAX_FILE = 26_214_400;

interface Instance {
  name: string;
  url: string;
  process: ChildProcessWithoutNullStreams;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
  /** JSON log lines the instance wrote (LOG_LEVEL=warn: warnings and errors only). */
  logs: Array<Record<string, unknown>>;
}

async function startInstance(name: string, env: Record<string, string>): Promise<Instance> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    cwd: process.cwd(),
    env: { ...process.env, ...env, PORT: '0', HOST: '127.0.0.1', PUBLIC_URL, LOG_LEVEL: 'warn', NODE_ENV: 'test' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const logs: Array<Record<string, unknown>> = [];
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start in 60 s: ${stderr}`)), 60_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      let nl: number;
      while ((nl = stdout.indexOf('\n')) >= 0) {
        const line = stdout.slice(0, nl);
        stdout = stdout.slice(nl + 1);
        const m = /listening on (http:\/\/\S+)/.exec(line);
        if (m?.[1]) {
          clearTimeout(timer);
          resolve(m[1]);
        } else if (line.startsWith('{')) {
          logs.push(JSON.parse(line) as Record<string, unknown>);
        }
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? signal}) before listening: ${stderr}`));
    });
  });
  return { name, url, process: child, exited, stderr: () => stderr, logs };
}

/** A URL handed out on PUBLIC_URL, sent to one instance's own origin instead. */
function on(instance: Instance, publicUrl: string): string {
  const u = new URL(publicUrl);
  return `${instance.url}${u.pathname}${u.search}`;
}

function send(instance: Instance, publicUrl: string, auth: string | null, method: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = {};
  if (auth !== null) headers['Authorization'] = auth;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  return fetch(on(instance, publicUrl), { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
}

async function detail(response: Response): Promise<{ status: number; code: string; detail: string }> {
  const body = (await response.json()) as { code?: unknown; detail?: unknown };
  return { status: response.status, code: String(body.code), detail: String(body.detail) };
}

function scoresUrl(placed: PlacedLocation, memberId: string): string {
  return `${PUBLIC_URL}/v1/contexts/${placed.context.id}/apps/${placed.appId}/locations/${placed.location.id}/members/${memberId}/scores`;
}

const dataDirA = mkdtempSync(join(tmpdir(), 'tis-multi-a-'));
const dataDirB = mkdtempSync(join(tmpdir(), 'tis-multi-b-'));
let a: Instance;
let b: Instance;
let both: readonly [Instance, Instance];
let operator: TestServer;
let tool: Tool;
let quiz: PlacedLocation;
let student: TestLaunch;
let instructor: TestLaunch;
/** Requests a test makes wait on a held lock on purpose: their 503 is the answer under test, not a failure. */
const expectedBusy = new Set<string>();

beforeAll(async () => {
  // An empty schema; both instances start on it at once and race to migrate it (one advisory lock wins).
  const store = await serviceStoreEnv(dataDirA);
  const shared = { DATABASE_URL: store['DATABASE_URL'] ?? '', DATABASE_SCHEMA: store['DATABASE_SCHEMA'] ?? '', BLOB_STORE: 'postgres' };
  [a, b] = await Promise.all([
    startInstance('instance A', { ...shared, DATA_DIR: dataDirA }),
    startInstance('instance B', { ...shared, DATA_DIR: dataDirB }),
  ]);
  both = [a, b];
  operator = await startServer({ dataDir: dataDirA, config: { publicUrl: PUBLIC_URL, blobStore: 'postgres', logLevel: 'warn' } });
  tool = await createTool(operator);
  quiz = await placeLocation(operator, { app: tool.app.id, type: 'assessment', points: 10 });
  student = await launch(operator, { placed: quiz, groups: ['student'] });
  instructor = await launch(operator, { placed: quiz, groups: ['instructor'] });
}, 120_000);

afterAll(async () => {
  for (const instance of [a, b]) {
    if (!instance) continue;
    if (instance.process.exitCode === null && instance.process.signalCode === null) instance.process.kill('SIGTERM');
  }
  const exits = await Promise.all([a, b].filter(Boolean).map((i) => i.exited));
  await operator?.stop();
  await dropTestStore(dataDirA);
  rmSync(dataDirA, { recursive: true, force: true });
  rmSync(dataDirB, { recursive: true, force: true });
  // Graceful shutdown of both, and nothing either instance could not handle.
  for (const exit of exits) expect(exit.code).toBe(0);
  for (const instance of [a, b].filter(Boolean)) {
    const failures = instance.logs.filter(
      (l) =>
        !expectedBusy.has(String(l['request_id'])) && (l['level'] === 'error' || (typeof l['status'] === 'number' && l['status'] >= 500)),
    );
    expect(failures, `${instance.name}: ${instance.stderr()}`).toEqual([]);
  }
});

describe('round trips of a warm storage request (PERF-180)', () => {
  /** The statements the in-process instance sends to PostgreSQL while `run` runs (the blob store's sweeps aside). */
  async function statementsOf(run: () => Promise<void>): Promise<string[]> {
    const texts: string[] = [];
    const query = pg.Client.prototype.query;
    const counting = function (this: pg.Client, ...args: unknown[]) {
      const first = args[0] as string | { text?: string };
      const text = typeof first === 'string' ? first : (first?.text ?? String(first));
      if (!/blob/i.test(text)) texts.push(text.replace(/\s+/g, ' '));
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    pg.Client.prototype.query = counting;
    try {
      await run();
    } finally {
      pg.Client.prototype.query = query;
    }
    return texts;
  }

  // First in the file: no test before it has counted a failed credential in this throttle window, which
  // would make every request read the window's counts (PERF-21) beside its one statement.
  it('a GET of the caller\'s own member row is one statement; a PUT and a one-member PATCH two each', async () => {
    const placed = await placeLocation(operator, { app: tool.app.id, type: 'assessment' });
    const learner = await launch(operator, { placed, groups: ['student'] });
    const row = on({ url: operator.url } as Instance, learner.claims.storage.member);
    const call = async (method: string, body?: unknown): Promise<number> => {
      const headers: Record<string, string> = { Authorization: learner.auth };
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      const response = await fetch(row, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      await response.arrayBuffer();
      return response.status;
    };
    // Warm: the credential's facts are kept, and an epoch has been read.
    expect(await call('PUT', { n: 0 })).toBe(204);
    expect(await call('GET')).toBe(200);

    const get = await statementsOf(async () => expect(await call('GET')).toBe(200));
    expect(get, get.join('\n')).toHaveLength(1);
    expect(get[0]).toMatch(/FROM credential_epoch e LEFT JOIN members m .* LEFT JOIN storage_rows r/);

    const put = await statementsOf(async () => expect(await call('PUT', { n: 1 })).toBe(204));
    expect(put, put.join('\n')).toHaveLength(2);
    const patch = await statementsOf(async () => expect(await call('PATCH', { patch: [{ op: 'replace', path: '/n', value: 2 }] })).toBe(204));
    expect(patch, patch.join('\n')).toHaveLength(2);
    expect(await (await fetch(row, { headers: { Authorization: learner.auth } })).json()).toEqual({ n: 2 });

    // A change of the credentials (here this very instance suspends the tool, so its next request still trusts
    // the epoch it read before): the trusted GET finds another epoch in its own statement, is run again with
    // the epoch read first, and is refused.
    const other = await createTool(operator);
    const otherPlaced = await placeLocation(operator, { app: other.app.id, type: 'assessment' });
    const otherLearner = await launch(operator, { placed: otherPlaced, groups: ['student'] });
    const otherRow = on({ url: operator.url } as Instance, otherLearner.claims.storage.member);
    const getOther = (): Promise<Response> => fetch(otherRow, { headers: { Authorization: otherLearner.auth } });
    expect((await getOther()).status).toBe(200);
    await operator.services.store.apps.setStatus(other.app.id, 'suspended');
    const refused = await statementsOf(async () => {
      expect(await detail(await getOther())).toMatchObject({ status: 401, detail: `tool ${other.app.id} is suspended` });
    });
    // The trusted statement, then the epoch, the token and the tool read for the request run again.
    expect(refused[0]).toMatch(/FROM credential_epoch e LEFT JOIN members m/);
    expect(refused.length).toBeGreaterThan(1);
  });
});

describe('two instances on one database', () => {
  it('both answer, on one schema migrated once', async () => {
    for (const instance of both) {
      const health = await fetch(`${instance.url}/healthz`);
      expect(health.status).toBe(200);
    }
    const applied = await operator.services.store.driver.all<{ id: string }>('SELECT id FROM schema_migrations ORDER BY id');
    expect(applied.map((m) => m.id)).toContain('0004_shared_blobs');
  });

  it('land every one of 60 concurrent PATCHes to one row, sent through both', async () => {
    const row = student.claims.storage.member;
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        send(both[i % 2] as Instance, row, student.auth, 'PATCH', { patch: [{ op: 'add', path: `/k${i}`, value: i }] }),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(Array.from({ length: 60 }, () => 204));
    for (const instance of both) {
      const read = (await (await send(instance, row, student.auth, 'GET')).json()) as Record<string, number>;
      expect(Object.keys(read)).toHaveLength(60);
      for (let i = 0; i < 60; i += 1) expect(read[`k${i}`]).toBe(i);
    }
  });

  it('keep submitted strictly increasing for one member and location, whichever instance takes the call', async () => {
    const url = scoresUrl(quiz, student.member.id);
    const submit = async (instance: Instance, score: number): Promise<{ submitted: string; status: string }> => {
      const response = await send(instance, url, `Bearer ${tool.apiKey}`, 'POST', { score });
      expect(response.status, await response.clone().text()).toBe(200);
      return (await response.json()) as { submitted: string; status: string };
    };
    // At once through both: no two attempts share a timestamp.
    const concurrent = await Promise.all(Array.from({ length: 30 }, (_, i) => submit(both[i % 2] as Instance, i / 30)));
    const stamps = concurrent.map((s) => s.submitted);
    expect(new Set(stamps).size).toBe(30);
    // One after another, alternating: each later than every attempt before it, whichever instance took it.
    let latest = [...stamps].sort().at(-1) as string;
    for (let i = 0; i < 20; i += 1) {
      const { submitted } = await submit(both[i % 2] as Instance, 0.5);
      expect(submitted > latest, `${submitted} after ${latest}`).toBe(true);
      latest = submitted;
    }
  });

  it('refuse a rotated API key on both instances at once, and take the new one on both', async () => {
    const url = scoresUrl(quiz, instructor.member.id);
    const old = `Bearer ${tool.apiKey}`;
    for (const instance of both) expect((await send(instance, url, old, 'POST', { score: 0.1 })).status).toBe(200);
    const rotated = await operator.services.store.apps.rotateApiKey(tool.app.id);
    if (!rotated) throw new Error('rotation failed');
    const after = await Promise.all(both.map((instance) => send(instance, url, old, 'POST', { score: 0.2 }).then(detail)));
    for (const refused of after) expect(refused).toMatchObject({ status: 401, detail: 'Invalid API key' });
    for (const instance of both) expect((await send(instance, url, `Bearer ${rotated.apiKey}`, 'POST', { score: 0.3 })).status).toBe(200);
    tool = { ...tool, apiKey: rotated.apiKey };
  });

  it('refuse a suspended tool on both instances at once, its key and its launches alike', async () => {
    const other = await createTool(operator);
    const placed = await placeLocation(operator, { app: other.app.id, type: 'assessment' });
    const learner = await launch(operator, { placed, groups: ['student'] });
    const url = scoresUrl(placed, learner.member.id);
    for (const instance of both) {
      expect((await send(instance, url, `Bearer ${other.apiKey}`, 'POST', { score: 1 })).status).toBe(200);
      expect((await send(instance, learner.claims.storage.member, learner.auth, 'GET')).status).toBe(200);
    }
    await operator.services.store.apps.setStatus(other.app.id, 'suspended');
    const refusals = await Promise.all(
      both.flatMap((instance) => [
        send(instance, url, `Bearer ${other.apiKey}`, 'POST', { score: 1 }).then(detail),
        send(instance, learner.claims.storage.member, learner.auth, 'GET').then(detail),
      ]),
    );
    for (const refused of refusals) expect(refused).toMatchObject({ status: 401, detail: `tool ${other.app.id} is suspended` });
  });

  it('hold the file quota when both sign uploads for the same row at once: exactly one gets the last bytes', async () => {
    for (let round = 0; round < 4; round += 1) {
      const learner = await launch(operator, { placed: quiz, groups: ['student'] });
      const files = learner.claims.storage.member.replace(/\/storage$/, '/files');
      // 75 MB of the row's 100 MB reserved, through both instances.
      for (let i = 0; i < 3; i += 1) {
        const asked = await send(both[i % 2] as Instance, `${files}/held-${i}.bin`, learner.auth, 'PUT', { size: MAX_FILE });
        expect(asked.status).toBe(200);
      }
      const race = await Promise.all(
        both.map((instance, i) => send(instance, `${files}/last-${i}.bin`, learner.auth, 'PUT', { size: MAX_FILE })),
      );
      const statuses = race.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 422]);
      const refused = race.find((r) => r.status === 422) as Response;
      expect(await detail(refused)).toMatchObject({ code: 'file_bytes_quota_exceeded' });
    }
  });

  it('complete through one instance an upload signed by the other, and download it through either', async () => {
    const files = instructor.claims.storage.location.replace(/\/storage$/, '/files');
    const bytes = Buffer.alloc(1_300_000);
    for (let i = 0; i < bytes.length; i += 1) bytes[i] = (i * 7919) & 0xff;
    const asked = await send(a, `${files}/syllabus.pdf`, instructor.auth, 'PUT', { size: bytes.length });
    expect(asked.status).toBe(200);
    const form = (await asked.json()) as { url: string; fields: Record<string, string> };
    expect(form.url).toBe(`${PUBLIC_URL}/uploads`);
    const body = new FormData();
    for (const [name, value] of Object.entries(form.fields)) body.append(name, value);
    body.append('file', new Blob([bytes]), 'syllabus.pdf');
    expect((await fetch(on(b, form.url), { method: 'POST', body })).status).toBe(204);

    // Listed and readable through both; the bytes live in the database, not in either DATA_DIR.
    for (const reader of both) {
      const read = await send(reader, `${files}/syllabus.pdf`, instructor.auth, 'GET');
      expect(read.status).toBe(200);
      const file = (await read.json()) as { url: string; size: number };
      expect(file.size).toBe(bytes.length);
      for (const server of both) {
        const download = await fetch(on(server, file.url));
        expect(download.status).toBe(200);
        expect(Buffer.from(await download.arrayBuffer()).equals(bytes), `${server.name} serves what ${reader.name} signed`).toBe(true);
      }
    }
    const stored = await operator.services.store.driver.get<{ n: number }>(
      "SELECT COUNT(*) AS n FROM blobs WHERE state = 'complete' AND size = ?",
      [bytes.length],
    );
    expect(stored?.n).toBe(1);
  });

  it('answer a PATCH that waits too long for a row another connection holds with 503 store_busy, not a hang', async () => {
    const learner = await launch(operator, { placed: quiz, groups: ['student'] });
    const row = learner.claims.storage.member;
    expect((await send(a, row, learner.auth, 'PUT', { held: false })).status).toBe(204);
    const env = await serviceStoreEnv(dataDirA);
    // Another connection (as another instance mid-transaction would) takes the row lock and keeps it.
    const holder = new pg.Client({ connectionString: env['DATABASE_URL'], options: `-c search_path=${env['DATABASE_SCHEMA']}` });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      const locked = await holder.query('SELECT body FROM storage_rows WHERE app_id = $1 AND member_id = $2 FOR UPDATE', [
        tool.app.id,
        learner.member.id,
      ]);
      expect(locked.rowCount).toBe(1);
      // Readers never wait for the lock.
      const read = await send(b, row, learner.auth, 'GET');
      expect(read.status).toBe(200);
      expect(await read.json()).toEqual({ held: false });
      const started = Date.now();
      const waits = await Promise.all(
        both.map((instance) => send(instance, row, learner.auth, 'PATCH', { patch: [{ op: 'add', path: '/late', value: instance.name }] })),
      );
      const waited = Date.now() - started;
      for (const response of waits) {
        const id = response.headers.get('request-id');
        if (id) expectedBusy.add(id);
        expect(response.status).toBe(503);
        expect(response.headers.get('retry-after')).toBe('1');
        expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(await detail(response)).toMatchObject({ code: 'store_busy', detail: 'the service is busy; retry shortly' });
      }
      // The 5 s lock timeout of S-33, not a hang: the second waiter waits for the tuple lock, then for the
      // holder, each up to the timeout, so the pair answers after about 10 s.
      expect(waited).toBeGreaterThanOrEqual(4_500);
      expect(waited).toBeLessThan(20_000);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
    }
    // Nothing of the refused patches was written, and the row takes writes again once the lock is gone.
    expect(await (await send(a, row, learner.auth, 'GET')).json()).toEqual({ held: false });
    expect((await send(b, row, learner.auth, 'PATCH', { patch: [{ op: 'add', path: '/after', value: true }] })).status).toBe(204);
    expect(await (await send(a, row, learner.auth, 'GET')).json()).toEqual({ held: false, after: true });
  });

  it('share signing keys: identical JWKS, and a token one instance signs verifies with either JWKS', async () => {
    const jwksOf = async (instance: Instance): Promise<JSONWebKeySet> => {
      const response = await fetch(`${instance.url}/.well-known/jwks.json`);
      expect(response.status).toBe(200);
      return (await response.json()) as JSONWebKeySet;
    };
    const [jwksA, jwksB] = await Promise.all(both.map(jwksOf));
    expect(jwksA?.keys.length).toBeGreaterThan(0);
    expect(jwksB).toEqual(jwksA);
    // Signed by the in-process instance, the way every instance signs launch and provision tokens.
    const token = await operator.services.signer.sign({ iss: PUBLIC_URL, aud: 'tool', sub: 'multi', exp: Math.floor(Date.now() / 1000) + 60 });
    for (const jwks of [jwksA, jwksB]) {
      const { payload } = await jwtVerify(token, createLocalJWKSet(jwks as JSONWebKeySet), { issuer: PUBLIC_URL, audience: 'tool' });
      expect(payload.sub).toBe('multi');
    }
    // A key rotation is published by both at once (no instance keeps its own copy).
    const { kid } = await operator.services.signer.rotate();
    for (const instance of both) expect((await jwksOf(instance)).keys.map((k) => k.kid)).toContain(kid);
  });
});
