/**
 * Several instances on one PostgreSQL database share one Sandbox LMS (decision LTI-80): its store is the
 * service's database, so a registration one instance made is known to the other, and a restart keeps it.
 * Two in-process servers on one schema stand for two instances behind one balancer (the second's
 * `PUBLIC_URL` is the first's); each reaches its own `/lms` controls with its own control token.
 * On SQLite (one process owns the file) there is nothing to share: the file runs in the postgres project.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../harness.js';
import { startServer, TEST_STORE } from '../harness.js';
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
