/**
 * The Sandbox's LMS in process (decision LTI-40): the reference LMS answers under `{PUBLIC_URL}/lms` as an
 * LTI platform with its own issuer, keys and store, next to the service's own routes.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../harness.js';
import { createTool, startServer } from '../harness.js';
import { ensureSandbox } from '../../../server/sandbox/index.js';
import { createSandboxLmsHost, selfTransport } from '../../../server/sandbox/lms-host.js';
import { ensureSandboxRegistration, sandboxLmsClient } from '../../../server/sandbox/lms-registration.js';
import type { Config } from '../../../server/config.js';
import { LMS_TABLES } from '../../../lms/store.js';

async function dropLmsTables(config: Pick<Config, 'databaseUrl' | 'databaseSchema'>): Promise<void> {
  const client = new pg.Client({ connectionString: config.databaseUrl ?? '', ...(config.databaseSchema ? { options: `-c search_path=${config.databaseSchema}` } : {}) });
  await client.connect();
  try {
    await client.query(`DROP TABLE ${LMS_TABLES.join(', ')} CASCADE`);
  } finally {
    await client.end();
  }
}

describe('the Sandbox LMS in process', () => {
  let server: TestServer;
  beforeAll(async () => {
    // Schools' registrations wait for the platform team; the Sandbox's own does not. No development
    // switch: the service reaches its own /lms on loopback all the same (LTI-43).
    server = await startServer({ config: { allowLoopbackTools: false, lmsAutoActivate: false } });
  });
  afterAll(() => server.stop());

  it('publishes its OpenID configuration under /lms, with an issuer of its own', async () => {
    const res = await fetch(`${server.url}/lms/.well-known/openid-configuration`);
    expect(res.status).toBe(200);
    const config = (await res.json()) as Record<string, unknown>;
    expect(config['issuer']).toBe(`${server.url}/lms`);
    expect(config['registration_endpoint']).toBe(`${server.url}/lms/register`);
    const jwks = (await (await fetch(config['jwks_uri'] as string)).json()) as { keys: { kid: string }[] };
    const serviceJwks = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] };
    expect(jwks.keys.map((k) => k.kid)).not.toEqual(expect.arrayContaining(serviceJwks.keys.map((k) => k.kid)));
  });

  it('refuses its controls without the in-process control token, and leaves other paths to the service', async () => {
    expect((await fetch(`${server.url}/lms/controls/registrations`)).status).toBe(401);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${server.url}/lmsx`)).status).not.toBe(401);
  });

  it('reaches its own /lms without the development switch; every other loopback URL stays refused', async () => {
    const lms = server.services.lti.lms;
    expect(await lms.check(`${server.url}/lms/jwks`, 'jwks_uri')).toMatchObject({ ok: true });
    const jwks = await lms.getJson(`${server.url}/lms/jwks`, 'jwks_uri');
    expect(jwks.ok && Array.isArray(jwks.value['keys'])).toBe(true);
    const port = new URL(server.url).port;
    for (const url of [
      `${server.url}/lmsx/jwks`,
      `${server.url}/.well-known/jwks.json`,
      `${server.url}/lms/../.well-known/jwks.json`,
      `http://localhost:${port}/lms/jwks`,
      `http://user@127.0.0.1:${port}/lms/jwks`,
      `http://127.0.0.1:${Number(port) === 1 ? 2 : 1}/lms/jwks`,
      'http://10.0.0.1/lms/jwks',
    ]) {
      expect((await lms.check(url, 'jwks_uri')).ok, url).toBe(false);
      const answer = await lms.request({ method: 'GET', url, field: 'jwks_uri' });
      expect(answer.ok, url).toBe(false);
    }
  });

  it('registers through Dynamic Registration once, active at once, however many first needs race', async () => {
    const [first, second] = await Promise.all([ensureSandboxRegistration(server.services), ensureSandboxRegistration(server.services)]);
    expect(first.id).toBe(second.id);
    expect(first).toMatchObject({ issuer: `${server.url}/lms`, status: 'active', method: 'dynamic', tokenUrl: `${server.url}/lms/token` });
    expect((await ensureSandboxRegistration(server.services)).id).toBe(first.id);
    const { registrations } = await sandboxLmsClient(server.services).registrations();
    expect(registrations.map((r) => r.client_id)).toEqual([first.clientId]);
    expect(first.deployments).toEqual(registrations[0]?.deployments.map((d) => d.deployment_id));
  });

  it("drives through the Sandbox's client each LMS control issue 13 lists, under the IDs the Sandbox chooses", async () => {
    const { clientId } = await ensureSandboxRegistration(server.services);
    const lms = sandboxLmsClient(server.services);
    const school = await lms.createDeployment(clientId, 'Sandbox School', 'sandbox-app_host');
    expect(school).toEqual({ deployment_id: 'sandbox-app_host', client_id: clientId, title: 'Sandbox School' });
    await expect(lms.createDeployment(clientId, 'Again', 'sandbox-app_host')).rejects.toThrow(/answered 409/);
    // A second school (deployment) of the same registration, with the same person enrolled in both.
    const second = await lms.createDeployment(clientId, 'Second School');
    expect((await lms.registrations()).registrations[0]?.deployments.map((d) => d.deployment_id)).toEqual(expect.arrayContaining(['sandbox-app_host', second.deployment_id]));
    const irene = await lms.createUser({ sub: 'sandbox-instructor', given_name: 'Irene', family_name: 'Instructor', email: 'instructor@sandbox.example.org' });
    expect(irene.sub).toBe('sandbox-instructor');
    const sam = await lms.createUser({ sub: 'sandbox-student_1', given_name: 'Sam', family_name: 'Student', email: 'student1@sandbox.example.org' });
    const trial = await lms.createCourse({ id: 'sandbox-app_host-trial', deployment_id: school.deployment_id, title: 'Sandbox course', label: 'SANDBOX-2026F' });
    expect(trial).toMatchObject({ id: 'sandbox-app_host-trial', client_id: clientId, deployment_id: 'sandbox-app_host', history: [] });
    await expect(lms.createCourse({ id: trial.id, deployment_id: school.deployment_id, title: 'x', label: 'x' })).rejects.toThrow(/answered 409/);
    const elsewhere = await lms.createCourse({ deployment_id: second.deployment_id, title: 'Other school course', label: 'OTHER-1' });
    await lms.enrol(trial.id, irene.sub, ['instructor']);
    await lms.enrol(elsewhere.id, irene.sub, ['instructor']);
    // A user enrolled in one course only.
    await lms.enrol(trial.id, sam.sub, ['student']);
    expect((await lms.course(elsewhere.id)).enrolments.map((e) => e.sub)).toEqual([irene.sub]);
    await lms.unenrol(elsewhere.id, irene.sub);
    expect((await lms.course(elsewhere.id)).enrolments).toEqual([]);
    // Rename and re-term.
    expect(await lms.updateCourse(trial.id, { title: 'Sandbox course (renamed)', label: 'SANDBOX-2027S' })).toMatchObject({ title: 'Sandbox course (renamed)', label: 'SANDBOX-2027S' });
    // An assessment placement with no gradebook column, and one with its column.
    const bare = await lms.createLink(trial.id, { title: 'Quiz without column', custom: { tis_placement: 'rl_bare' }, line_item: null });
    expect(bare.line_items).toEqual([]);
    const graded = await lms.createLink(trial.id, { title: 'Quiz', custom: { tis_placement: 'rl_graded' }, line_item: { label: 'Quiz', score_maximum: 10 } });
    expect(graded.line_items).toEqual([expect.objectContaining({ scoreMaximum: 10, label: 'Quiz' })]);
    // A developer key without the line-item scope.
    expect(await lms.setLineItemScope(clientId, false)).toMatchObject({ grants_line_item_scope: false });
    expect(await lms.setLineItemScope(clientId, true)).toMatchObject({ grants_line_item_scope: true });
    // A gradebook that refuses a score.
    const column = (await lms.gradebook(trial.id)).columns[0];
    expect(await lms.refuseScores(column?.line_item_id ?? '', 503)).toMatchObject({ refuses_scores_with: 503 });
    expect(await lms.refuseScores(column?.line_item_id ?? '', null)).toMatchObject({ refuses_scores_with: null });
    // Course copy: the parent in its history, links copied under new IDs, enrolments when asked.
    const copy = await lms.copyCourse(trial.id, { title: 'Sandbox course', label: 'SANDBOX-2027F', with_links: true, with_enrolments: true });
    expect(copy).toMatchObject({ history: [trial.id], deployment_id: school.deployment_id });
    expect(copy.resource_links.map((l) => l.custom['tis_placement']).sort()).toEqual(['rl_bare', 'rl_graded']);
    expect(copy.resource_links.map((l) => l.id)).not.toEqual(expect.arrayContaining([bare.id, graded.id]));
    expect(copy.enrolments.map((e) => e.sub).sort()).toEqual([irene.sub, sam.sub].sort());
    // The reset: scores gone, columns kept.
    expect(await lms.deleteScores(trial.id)).toBeNull();
    expect((await lms.gradebook(trial.id)).columns).toHaveLength(1);
    // Short token lifetimes, and back.
    expect(await lms.settings({ access_token_ttl_seconds: 5, id_token_ttl_seconds: 5, launch_ttl_seconds: 5 })).toMatchObject({ access_token_ttl_seconds: 5, id_token_ttl_seconds: 5, launch_ttl_seconds: 5 });
    expect(await lms.resetSettings()).toMatchObject({ access_token_ttl_seconds: 3600, id_token_ttl_seconds: 300, launch_ttl_seconds: 300 });
  });

  it('registers again when its LMS lost its store; on SQLite the old registration is set inactive', async () => {
    const before = await ensureSandboxRegistration(server.services);
    // What a deleted sandbox-lms.sqlite, or on PostgreSQL the LMS's tables dropped (LTI-80: its store is the
    // service's database, so a restart keeps it), leaves: the service still holds the registration, its LMS
    // knows no such client.
    const emptyDir = mkdtempSync(join(tmpdir(), 'tis-sandbox-lms-'));
    try {
      server.services.sandboxLms.close();
      if (server.services.config.databaseUrl !== null) await dropLmsTables(server.services.config);
      server.services.sandboxLms = createSandboxLmsHost({
        config: { ...server.services.config, dataDir: emptyDir },
        log: server.services.log,
        selfOrigin: () => server.url,
      });
      const after = await ensureSandboxRegistration(server.services);
      expect(after.clientId).not.toBe(before.clientId);
      expect(after.status).toBe('active');
      // On PostgreSQL the old one may be another instance's, whose LMS still knows it: left as it was.
      const onSqlite = server.services.config.databaseUrl === null;
      expect((await server.services.store.lti.getRegistration(before.id))?.status).toBe(onSqlite ? 'inactive' : 'active');
      const { registrations } = await sandboxLmsClient(server.services).registrations();
      expect(registrations.map((r) => r.client_id)).toEqual([after.clientId]);
    } finally {
      server.services.sandboxLms.close();
      rmSync(emptyDir, { recursive: true, force: true });
    }
  });
});

describe("a tool's Sandbox when its LMS lost its store", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.stop());

  it('heals at the next need: the school moves to the new registration, the trial course stays, the LMS side is made again', async () => {
    const tool = await createTool(server, { name: 'Healing tool' });
    const before = await ensureSandbox(server.services, tool.app.id);
    const emptyDir = mkdtempSync(join(tmpdir(), 'tis-sandbox-lms-'));
    const previous = server.services.sandboxLms;
    try {
      // On PostgreSQL the LMS's store is the service's database (LTI-80): losing it means its tables dropped.
      if (server.services.config.databaseUrl !== null) {
        previous.close();
        await dropLmsTables(server.services.config);
      }
      server.services.sandboxLms = createSandboxLmsHost({ config: { ...server.services.config, dataDir: emptyDir }, log: server.services.log, selfOrigin: () => server.url });
      const after = await ensureSandbox(server.services, tool.app.id);
      expect(after.lms.registration.clientId).not.toBe(before.lms.registration.clientId);
      expect(after.school).toMatchObject({ id: before.school.id, client: after.lms.registration.clientId, deployment: `sandbox-${tool.app.id}` });
      expect(after.trial.id).toBe(before.trial.id);
      const course = await sandboxLmsClient(server.services).course(`sandbox-${tool.app.id}-trial`);
      expect(course.enrolments).toHaveLength(5);
    } finally {
      server.services.sandboxLms.close();
      server.services.sandboxLms = previous;
      rmSync(emptyDir, { recursive: true, force: true });
    }
  });
});

describe('the Sandbox LMS whose store cannot be opened', () => {
  let server: TestServer;
  let dir: string;
  beforeAll(async () => {
    server = await startServer();
    dir = mkdtempSync(join(tmpdir(), 'tis-sandbox-lms-'));
  });
  afterAll(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 503 with Retry-After, not 500, and starts at a later need once it can', async () => {
    // DATA_DIR names a file: the LMS's SQLite file cannot be made under it (ENOTDIR, whoever runs).
    const notADirectory = join(dir, 'not-a-directory');
    writeFileSync(notADirectory, '');
    const host = createSandboxLmsHost({ config: { ...server.services.config, dataDir: notADirectory, databaseUrl: null }, log: server.services.log });
    const previous = server.services.sandboxLms;
    server.services.sandboxLms = host;
    try {
      const refused = await fetch(`${server.url}/lms/.well-known/openid-configuration`);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(await refused.json()).toMatchObject({ code: 'sandbox_lms_unavailable' });
      rmSync(notADirectory);
      mkdirSync(notADirectory);
      expect((await fetch(`${server.url}/lms/.well-known/openid-configuration`)).status).toBe(200);
    } finally {
      host.close();
      server.services.sandboxLms = previous;
    }
  });
});

describe('the transport to the service itself', () => {
  it('rewrites only URLs of the public origin, and only when the listening origin is known', () => {
    const transport = selfTransport('https://tis.example.edu', () => 'http://127.0.0.1:4100');
    expect(transport('https://tis.example.edu/lms/token')).toBe('http://127.0.0.1:4100/lms/token');
    expect(transport('https://lms.example.edu/token')).toBe('https://lms.example.edu/token');
    expect(transport('https://tis.example.edu.evil.example/x')).toBe('https://tis.example.edu.evil.example/x');
    expect(selfTransport('https://tis.example.edu', () => undefined)('https://tis.example.edu/lms')).toBe('https://tis.example.edu/lms');
  });
});
