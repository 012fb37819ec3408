/**
 * Several instances on one PostgreSQL database share one Sandbox LMS (decision LTI-80): its store is the
 * service's database, so a registration one instance made is known to the other, and a restart keeps it.
 * Two in-process servers on one schema stand for two instances behind one balancer (the second's
 * `PUBLIC_URL` is the first's); each reaches its own `/lms` controls with its own control token.
 * On SQLite (one process owns the file) there is nothing to share: the file runs in the postgres project.
 * Two real service processes starting at once on a fresh schema make one registration between them (LTI-81).
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../harness.js';
import { dropTestStore, serviceStoreEnv, startServer, TEST_STORE } from '../harness.js';
import { ensureSandboxRegistration, sandboxLmsClient } from '../../../server/sandbox/lms-registration.js';

describe.runIf(TEST_STORE === 'postgres')('the Sandbox LMS shared by instances on one PostgreSQL database', () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    a = await startServer({ config: { allowLoopbackTools: true } });
    b = await startServer({ dataDir: a.dataDir, config: { allowLoopbackTools: true, publicUrl: a.url } });
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
  });

  it('knows on one instance the registration the other made, with one registration in the LMS, and keeps it over a restart', async () => {
    const made = await ensureSandboxRegistration(a.services);
    const known = await ensureSandboxRegistration(b.services);
    expect(known).toMatchObject({ id: made.id, clientId: made.clientId, issuer: `${a.url}/lms`, status: 'active' });
    expect(a.services.sandboxLms.controlToken).not.toBe(b.services.sandboxLms.controlToken);
    expect((await sandboxLmsClient(b.services).registrations()).registrations.map((r) => r.client_id)).toEqual([made.clientId]);
    // What one instance makes in the LMS, the other reads through its own controls.
    const course = await sandboxLmsClient(a.services).createCourse({ deployment_id: made.deployments[0] ?? '', title: 'Shared course', label: 'SHARED-1' });
    expect(await sandboxLmsClient(b.services).course(course.id)).toMatchObject({ id: course.id, title: 'Shared course' });

    // B restarts: its LMS comes back with the same store, so no registration is added.
    await b.stop();
    b = await startServer({ dataDir: a.dataDir, config: { allowLoopbackTools: true, publicUrl: a.url } });
    expect((await ensureSandboxRegistration(b.services)).clientId).toBe(made.clientId);
    const lms = sandboxLmsClient(b.services);
    expect((await lms.registrations()).registrations.map((r) => r.client_id)).toEqual([made.clientId]);
    expect(await lms.course(course.id)).toMatchObject({ title: 'Shared course' });
    expect(await b.services.store.lti.listRegistrationsByIssuer(`${a.url}/lms`)).toHaveLength(1);
  });
});

interface Instance {
  url: string;
  child: ChildProcessWithoutNullStreams;
  exited: Promise<unknown>;
}

/** A real service process (`server/main.ts`, as `npm start` runs it) on its own port. */
async function startInstance(env: Record<string, string>): Promise<Instance> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    cwd: process.cwd(),
    env: { ...process.env, ...env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', NODE_ENV: 'test' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the instance did not start in 90 s: ${stderr}`)), 90_000);
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the instance exited before listening: ${stderr}`));
    });
  });
  return { url, child, exited };
}

// LTI-81: the in-flight guard is per process; the claim in the store makes the race one registration.
describe.runIf(TEST_STORE === 'postgres')('instances whose very first start races on a new PostgreSQL schema', () => {
  const publicUrl = 'https://tis.race.test';
  const platformToken = `tisp_${randomBytes(32).toString('base64url')}`;
  const dirs = [mkdtempSync(join(tmpdir(), 'tis-race-a-')), mkdtempSync(join(tmpdir(), 'tis-race-b-'))];
  let instances: Instance[] = [];
  afterAll(async () => {
    for (const instance of instances) instance.child.kill('SIGTERM');
    await Promise.all(instances.map((i) => i.exited));
    await dropTestStore(dirs[0] ?? '');
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('end with one registration of the Sandbox LMS issuer, which both use', async () => {
    const store = await serviceStoreEnv(dirs[0] ?? '');
    const shared = { DATABASE_URL: store['DATABASE_URL'] ?? '', DATABASE_SCHEMA: store['DATABASE_SCHEMA'] ?? '', PUBLIC_URL: publicUrl, PLATFORM_TOKEN: platformToken };
    // Both start at once on the empty schema, and both meet their first need of the Sandbox LMS at once.
    instances = await Promise.all(dirs.map((dir) => startInstance({ ...shared, DATA_DIR: dir })));
    const call = (instance: Instance, path: string, body: unknown): Promise<Response> =>
      fetch(`${instance.url}/dashboard/v1${path}`, {
        method: 'PATCH',
        headers: { Authorization: `Bearer ${platformToken}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
    // Each instance's LMS up and its code loaded (an LMS-wide setting needs no registration), so the first
    // needs below meet on equal terms.
    for (const instance of instances) expect((await call(instance, '/sandbox/lms/settings', { launch_ttl_seconds: 300 })).status).toBe(200);
    const db = new pg.Client({ connectionString: shared.DATABASE_URL });
    await db.connect();
    // Widen the race: the registrations' inserts wait for this lock (released well within the store's 5 s
    // lock timeout) while both instances are on their way, then go on together.
    await db.query('BEGIN');
    await db.query(`LOCK TABLE ${shared.DATABASE_SCHEMA}.lti_registrations IN SHARE ROW EXCLUSIVE MODE`);
    const pending = Promise.all([...instances, ...instances].map((instance) => call(instance, '/sandbox/lms/registration', { grants_line_item_scope: true })));
    // Released once both instances' inserts wait on the lock (each process lets one first need through its
    // in-flight guard), and at the latest after the 2.5 s the test waited before (decision CI-58).
    const waiting = async (): Promise<number> =>
      Number((await db.query<{ n: string }>(
        "SELECT COUNT(*) AS n FROM pg_locks WHERE NOT granted AND relation = $1::regclass",
        [`${shared.DATABASE_SCHEMA}.lti_registrations`],
      )).rows[0]?.n);
    const deadline = Date.now() + 2500;
    while ((await waiting()) < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
    await db.query('COMMIT');
    const answers = await pending;
    const bodies = (await Promise.all(answers.map((a) => a.json()))) as { client_id: string }[];
    expect(answers.map((a) => a.status), JSON.stringify(bodies)).toEqual([200, 200, 200, 200]);
    expect(new Set(bodies.map((b) => b.client_id)).size).toBe(1);

    try {
      const schema = shared.DATABASE_SCHEMA;
      const count = async (sql: string, params: unknown[] = []): Promise<number> => Number((await db.query<{ n: string }>(sql, params)).rows[0]?.n);
      expect(await count(`SELECT COUNT(*) AS n FROM ${schema}.lti_registrations WHERE issuer = $1`, [`${publicUrl}/lms`])).toBe(1);
      expect(await count(`SELECT COUNT(*) AS n FROM ${schema}.lms_registrations`)).toBe(1);
      expect(await count(`SELECT COUNT(*) AS n FROM ${schema}.sandbox_lms_claims`)).toBe(0);
    } finally {
      await db.end();
    }
  });
});
