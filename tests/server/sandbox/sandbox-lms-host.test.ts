/**
 * The Sandbox's LMS in process (decision LTI-40): the reference LMS answers under `{PUBLIC_URL}/lms` as an
 * LTI platform with its own issuer, keys and store, next to the service's own routes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../harness.js';
import { startServer } from '../harness.js';
import { createSandboxLmsHost, selfTransport } from '../../../server/sandbox/lms-host.js';
import { ensureSandboxRegistration, sandboxLmsClient } from '../../../server/sandbox/lms-registration.js';

describe('the Sandbox LMS in process', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
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
});

describe('the service registered with its Sandbox LMS', () => {
  let server: TestServer;
  beforeAll(async () => {
    // Schools' registrations wait for the platform team; the Sandbox's own does not.
    server = await startServer({ config: { allowLoopbackTools: true, lmsAutoActivate: false } });
  });
  afterAll(() => server.stop());

  it('registers through Dynamic Registration once, active at once, however many first needs race', async () => {
    const [first, second] = await Promise.all([ensureSandboxRegistration(server.services), ensureSandboxRegistration(server.services)]);
    expect(first.id).toBe(second.id);
    expect(first).toMatchObject({ issuer: `${server.url}/lms`, status: 'active', method: 'dynamic', tokenUrl: `${server.url}/lms/token` });
    expect((await ensureSandboxRegistration(server.services)).id).toBe(first.id);
    const { registrations } = await sandboxLmsClient(server.services).registrations();
    expect(registrations.map((r) => r.client_id)).toEqual([first.clientId]);
    expect(first.deployments).toEqual(registrations[0]?.deployments.map((d) => d.deployment_id));
  });

  it('registers again, and sets the old registration inactive, when its LMS lost its store', async () => {
    const before = await ensureSandboxRegistration(server.services);
    // What a restart on PostgreSQL (the LMS in memory) or a deleted sandbox-lms.sqlite leaves: the service
    // still holds the registration, its LMS knows no such client.
    const emptyDir = mkdtempSync(join(tmpdir(), 'tis-sandbox-lms-'));
    try {
      server.services.sandboxLms.close();
      server.services.sandboxLms = createSandboxLmsHost({
        config: { ...server.services.config, dataDir: emptyDir },
        log: server.services.log,
        selfOrigin: () => server.url,
      });
      const after = await ensureSandboxRegistration(server.services);
      expect(after.clientId).not.toBe(before.clientId);
      expect(after.status).toBe('active');
      expect((await server.services.store.lti.getRegistration(before.id))?.status).toBe('inactive');
      const { registrations } = await sandboxLmsClient(server.services).registrations();
      expect(registrations.map((r) => r.client_id)).toEqual([after.clientId]);
    } finally {
      server.services.sandboxLms.close();
      rmSync(emptyDir, { recursive: true, force: true });
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
