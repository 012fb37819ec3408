/**
 * Credential resolution over real HTTP (NS-21, GAP-28): which credential each URL takes and the exact
 * 401 messages; the API key's tool and rotation; suspended tools; expired and revoked tokens.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { PlacedLocation, TestLaunch, TestServer, Tool } from '../harness.js';
import { createTool, launch, placeLocation, problemOf, startServer } from '../harness.js';

let server: TestServer;
let tool: Tool;
let placed: PlacedLocation;
let student: TestLaunch;
let accountScoreUrl: string;

beforeAll(async () => {
  server = await startServer();
  tool = await createTool(server);
  placed = await placeLocation(server, { app: tool.app.id });
  student = await launch(server, { placed });
  accountScoreUrl = server.services.launches.urls.accountScore(
    student.member.id,
    tool.app.id,
    placed.context.id,
    placed.location.id,
  );
});
afterAll(async () => server?.stop());

const bearer = (credential: string): Record<string, string> => ({ Authorization: `Bearer ${credential}` });
const postScore = (url: string, headers: Record<string, string>, body = '{"score":0.5}') =>
  fetch(url, { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body });

async function expect401(res: Response, detail: string): Promise<void> {
  const p = await problemOf(res);
  expect({ status: p.status, detail: p.detail }).toEqual({ status: 401, detail });
  expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
}

describe('missing credentials', () => {
  it('score URLs ask for the API key', async () => {
    await expect401(await postScore(student.claims.grade.submit!, {}), 'Missing Bearer API key');
    await expect401(await postScore(accountScoreUrl, {}), 'Missing Bearer API key');
  });

  it('storage, files and provision URLs ask for a bearer token', async () => {
    await expect401(await fetch(student.claims.storage.context), 'Missing bearer token');
    await expect401(await fetch(student.claims.files.member), 'Missing bearer token');
    await expect401(await fetch(student.claims.provision.context, { method: 'PUT' }), 'Missing bearer token');
  });

  it('another scheme, or an empty bearer, is no credential', async () => {
    await expect401(await fetch(student.claims.storage.member, { headers: { Authorization: 'Basic dXNlcjpwYXNz' } }), 'Missing bearer token');
    await expect401(await fetch(student.claims.storage.member, { headers: { Authorization: 'Bearer ' } }), 'Missing bearer token');
  });

  it('the scheme name is case-insensitive', async () => {
    const res = await fetch(student.claims.storage.member, { headers: { Authorization: `bearer ${student.apiToken}` } });
    expect(res.status).toBe(200);
  });
});

describe('API keys', () => {
  it('are accepted on the /contexts/... score URL', async () => {
    const res = await postScore(student.claims.grade.submit!, bearer(tool.apiKey));
    expect(res.status).toBe(200);
  });

  it('are refused with 401 on the account score URL, storage, files and provision (GAP-28)', async () => {
    const detail = 'API key is not accepted on this URL; use the api.token of a launch';
    await expect401(await postScore(accountScoreUrl, bearer(tool.apiKey)), detail);
    await expect401(await fetch(student.claims.storage.member, { headers: bearer(tool.apiKey) }), detail);
    await expect401(await fetch(student.claims.files.context, { headers: bearer(tool.apiKey) }), detail);
    await expect401(await fetch(student.claims.provision.context, { method: 'PUT', headers: bearer(tool.apiKey) }), detail);
  });

  it('an unknown or malformed key is `Invalid API key`', async () => {
    const forged = `ltiaas_${tool.app.id}_${'A'.repeat(43)}`;
    await expect401(await postScore(student.claims.grade.submit!, bearer(forged)), 'Invalid API key');
    await expect401(await postScore(student.claims.grade.submit!, bearer('ltiaas_nonsense')), 'Invalid API key');
  });

  it('rotation invalidates the old key at once', async () => {
    const other = await createTool(server);
    const otherPlaced = await placeLocation(server, { app: other.app.id });
    const otherStudent = await launch(server, { placed: otherPlaced });
    const rotated = await server.services.store.apps.rotateApiKey(other.app.id);
    await expect401(await postScore(otherStudent.claims.grade.submit!, bearer(other.apiKey)), 'Invalid API key');
    expect((await postScore(otherStudent.claims.grade.submit!, bearer(rotated!.apiKey))).status).toBe(200);
  });
});

describe('api.tokens', () => {
  it('an unknown token is `Invalid bearer token`', async () => {
    await expect401(await fetch(student.claims.storage.member, { headers: bearer(`tis_at_${'x'.repeat(43)}`) }), 'Invalid bearer token');
    await expect401(await fetch(student.claims.storage.member, { headers: bearer('whatever') }), 'Invalid bearer token');
  });

  it('a dashboard builder token gives no access to rows (rule 4: builders get nothing automatically)', async () => {
    await expect401(await fetch(student.claims.storage.context, { headers: bearer(`tisb_${'b'.repeat(43)}`) }), 'Invalid bearer token');
  });

  it('an expired token is `Expired bearer token`', async () => {
    const issued = await server.services.store.apiTokens.issue({
      kind: 'launch',
      appId: tool.app.id,
      contextId: placed.context.id,
      userId: student.user.id,
      memberId: student.member.id,
      locationId: placed.location.id,
      ttlSeconds: 0,
    });
    await expect401(await fetch(student.claims.storage.member, { headers: bearer(issued.token) }), 'Expired bearer token');
  });

  it('a revoked token is `Invalid bearer token`', async () => {
    const again = await launch(server, { placed, userExternalId: 'revoked-person' });
    await server.services.store.apiTokens.revoke(again.apiToken);
    await expect401(await fetch(again.claims.storage.member, { headers: { Authorization: again.auth } }), 'Invalid bearer token');
  });

  it('an older token stays valid after a newer launch (GAP-34)', async () => {
    const first = await launch(server, { placed, userExternalId: 'twice' });
    await launch(server, { placed, userExternalId: 'twice' });
    expect((await fetch(first.claims.storage.member, { headers: { Authorization: first.auth } })).status).toBe(200);
  });
});

describe('suspended tools', () => {
  it('refuse both credentials with `tool X is suspended`', async () => {
    const other = await createTool(server);
    const otherPlaced = await placeLocation(server, { app: other.app.id });
    const otherStudent = await launch(server, { placed: otherPlaced });
    await server.services.store.apps.setStatus(other.app.id, 'suspended');
    const detail = `tool ${other.app.id} is suspended`;
    await expect401(await postScore(otherStudent.claims.grade.submit!, bearer(other.apiKey)), detail);
    await expect401(await fetch(otherStudent.claims.storage.member, { headers: { Authorization: otherStudent.auth } }), detail);
    await server.services.store.apps.setStatus(other.app.id, 'active');
    expect((await fetch(otherStudent.claims.storage.member, { headers: { Authorization: otherStudent.auth } })).status).toBe(200);
  });
});

describe('the credential is read once per request', () => {
  it('the contract dispatch (the tool\'s pin) and the credential step share one token lookup', async () => {
    const verify = vi.spyOn(server.services.store.apiTokens, 'verify');
    try {
      // No Contract-Version header: the dispatch reads the token to find the tool's pin, then the
      // served contract's credential step judges it; the store is asked once.
      const res = await fetch(student.claims.storage.member, { headers: { Authorization: student.auth } });
      expect(res.status).toBe(200);
      expect(verify.mock.calls.filter(([token]) => `Bearer ${token}` === student.auth)).toHaveLength(1);
    } finally {
      verify.mockRestore();
    }
  });
});
