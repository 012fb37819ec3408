/**
 * Choosing the contract on the wire (decisions NS-18, S-37): the `Contract-Version` header, else the pin of
 * the tool the API key or `api.token` names, else the current contract; 400 naming the served versions
 * for an unknown or malformed value; `Contract-Version` on every response; and under the current contract
 * the removed endpoints answer 404 while under an archived one the files URLs do.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../harness.js';
import { placeLocation, startServer } from '../harness.js';
import { ARCHIVED, call, expectProblem, launchAs, pinnedTool, VERSIONS } from './helpers.js';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});

afterAll(async () => {
  await server?.stop();
});

const SERVED = 'served versions: 2026-09-21, 2026-08-25, 2026-08-19';

describe('contract dispatch', () => {
  it('no header: a tool’s API key selects its pinned contract', async () => {
    for (const version of VERSIONS) {
      const tool = await pinnedTool(server, version);
      const res = await call('GET', `${server.url}/v1/apps/me`, { auth: tool.auth });
      expect(res.headers.get('contract-version')).toBe(version);
      expect(res.headers.get('vary')).toMatch(/Contract-Version/);
      // Removed from the current contract: 404 there, the app object under the archived ones.
      expect(res.status).toBe(version === '2026-09-21' ? 404 : 200);
    }
  });

  it('no header: a launch’s api.token selects its tool’s pinned contract', async () => {
    for (const version of VERSIONS) {
      const tool = await pinnedTool(server, version);
      const placed = await placeLocation(server, { app: tool.appId, type: 'assessment' });
      const student = await launchAs(server, placed);
      const row = await call('GET', student.storage.member, { auth: student.auth });
      expect(row.status).toBe(200);
      expect(row.headers.get('contract-version')).toBe(version);
      // Files exist only in the current contract (GAP-44): 404 under an archived pin.
      const files = await call('GET', student.storage.member.replace(/\/storage$/, '/files'), { auth: student.auth });
      expect(files.status).toBe(version === '2026-09-21' ? 200 : 404);
      expect(files.headers.get('contract-version')).toBe(version);
    }
  });

  it('the header wins over the pin, in both directions', async () => {
    const archived = await pinnedTool(server, '2026-08-25');
    const current = await pinnedTool(server, '2026-09-21');
    const asCurrent = await call('GET', `${server.url}/v1/apps/me`, { auth: archived.auth, version: '2026-09-21' });
    expect(asCurrent.status).toBe(404);
    expect(asCurrent.headers.get('contract-version')).toBe('2026-09-21');
    for (const version of ARCHIVED) {
      const res = await call('GET', `${server.url}/v1/apps/me`, { auth: current.auth, version });
      expect(res.status).toBe(200);
      expect(res.headers.get('contract-version')).toBe(version);
    }
  });

  it('without a known tool the current contract serves, and a credential is never judged by dispatch', async () => {
    const jwks = await call('GET', `${server.url}/.well-known/jwks.json`);
    expect(jwks.status).toBe(200);
    expect(jwks.headers.get('contract-version')).toBe('2026-09-21');
    // No credential on a removed endpoint: the current contract's 404.
    const removed = await call('GET', `${server.url}/v1/grades/grd_x`);
    expect(removed.status).toBe(404);
    expect(removed.headers.get('contract-version')).toBe('2026-09-21');
    // A credential that names no tool is left to the credential step: 401, never 404 or 500.
    expectProblem(await call('GET', `${server.url}/v1/apps/me`, { auth: 'Bearer ltiaas_garbage' }), 401, 'Invalid API key');
    expectProblem(await call('POST', `${server.url}/v1/grades`, { auth: 'Bearer nonsense', body: {} }), 401, 'Invalid API key');
    const tool = await pinnedTool(server, '2026-09-21');
    const placed = await placeLocation(server, { app: tool.appId });
    const student = await launchAs(server, placed);
    expectProblem(await call('GET', student.storage.member, { auth: 'Bearer tis_at_' + 'x'.repeat(43) }), 401, 'Invalid bearer token', '2026-09-21');
  });

  it('a key of a tool pinned to an archived contract, once rotated, gets that contract’s 401', async () => {
    const tool = await pinnedTool(server, '2026-08-25');
    const rotated = await call('POST', `${server.url}/v1/apps/me/rotate-key`, { auth: tool.auth });
    expect(rotated.status).toBe(200);
    const refused = await call('GET', `${server.url}/v1/apps/me`, { auth: tool.auth });
    expectProblem(refused, 401, 'Invalid API key', '2026-08-25');
  });

  it('an expired or revoked api.token still names its tool: that contract’s 401', async () => {
    const tool = await pinnedTool(server, '2026-08-19');
    const placed = await placeLocation(server, { app: tool.appId });
    const student = await launchAs(server, placed);
    await server.services.store.apiTokens.revoke(student.apiToken);
    expectProblem(await call('GET', student.storage.member, { auth: student.auth }), 401, 'Invalid bearer token', '2026-08-19');
  });

  it('an unknown or malformed Contract-Version answers 400 naming the served versions', async () => {
    const tool = await pinnedTool(server, '2026-08-25');
    for (const value of ['2025-01-01', 'latest', '2026-8-25', '2026-08-25, 2026-08-19', '']) {
      const res = await call('GET', `${server.url}/v1/apps/me`, { auth: tool.auth, version: value || ' ' });
      expectProblem(res, 400, `unknown Contract-Version "${value}"; ${SERVED}`);
      expect(res.headers.get('contract-version')).toBe('2026-09-21');
      expect(res.headers.get('vary')).toMatch(/Contract-Version/);
    }
  });

  it('every answer says which contract served it: success, 401, 404, 405, 415, 422', async () => {
    const tool = await pinnedTool(server, '2026-08-19');
    const answers = [
      await call('GET', `${server.url}/v1/apps/me`, { auth: tool.auth }),
      await call('GET', `${server.url}/v1/apps/me`, { version: '2026-08-19' }),
      await call('GET', `${server.url}/v1/nothing`, { auth: tool.auth }),
      await call('PUT', `${server.url}/v1/apps/me`, { auth: tool.auth, body: {} }),
      await call('PATCH', `${server.url}/v1/apps/me`, { auth: tool.auth, body: 'name=x', contentType: 'text/plain' }),
      await call('PATCH', `${server.url}/v1/apps/me`, { auth: tool.auth, body: { name: '' } }),
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 401, 404, 405, 415, 422]);
    for (const answer of answers) expect(answer.headers.get('contract-version')).toBe('2026-08-19');
  });

  it('under the current contract every removed endpoint answers 404', async () => {
    const tool = await pinnedTool(server, '2026-09-21');
    const removed: Array<[string, string]> = [
      ['GET', '/v1/apps/me'],
      ['PATCH', '/v1/apps/me'],
      ['GET', '/v1/apps/me/locations'],
      ['POST', '/v1/apps/me/locations'],
      ['PATCH', '/v1/apps/me/locations/loc_x'],
      ['DELETE', '/v1/apps/me/locations/loc_x'],
      ['POST', '/v1/apps/me/rotate-key'],
      ['POST', '/v1/grades'],
      ['GET', '/v1/grades/grd_x'],
    ];
    for (const [method, path] of removed) {
      const res = await call(method, `${server.url}${path}`, { auth: tool.auth, ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }) });
      expect([method, path, res.status]).toEqual([method, path, 404]);
      expect(res.headers.get('contract-version')).toBe('2026-09-21');
    }
  });
});
