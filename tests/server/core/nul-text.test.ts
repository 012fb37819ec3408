/**
 * U+0000 in what a caller sends: PostgreSQL's TEXT can neither store nor compare it, so on that store it
 * used to surface as a 500. Both stores now answer alike: a path ID holding it names nothing (404), a
 * score comment holding it is refused by its own rule, any other text the service would store is refused
 * as `unstorable_text` (422), and JSON rows keep it (JSON escapes it as `\u0000`).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGS_MEDIA_TYPES, AGS_SCOPES, sandboxClientId, sandboxTokenUrl } from '../../../server/sandbox-lms/school.js';
import type { PlacedLocation, TestLaunch, TestServer, Tool } from '../harness.js';
import { createTool, launch, placeLocation, problemOf, startServer } from '../harness.js';

let server: TestServer;
let tool: Tool;
let quiz: PlacedLocation;
let student: TestLaunch;

beforeAll(async () => {
  server = await startServer();
  tool = await createTool(server);
  quiz = await placeLocation(server, { app: tool.app.id, type: 'assessment' });
  student = await launch(server, { placed: quiz, groups: ['student'] });
});
afterAll(async () => server?.stop());

const json = (auth: string, method: string, body: unknown): RequestInit => ({
  method,
  headers: { Authorization: auth, 'Content-Type': 'application/json' },
  body: JSON.stringify(body),
});

describe('U+0000 in what a caller sends', () => {
  it('in a path ID names nothing', async () => {
    const url = `${server.url}/v1/contexts/ctx_a%00b/apps/${tool.app.id}/locations/${quiz.location.id}/members/${student.member.id}/scores`;
    expect(await problemOf(await fetch(url, json(`Bearer ${tool.apiKey}`, 'POST', { score: 0.5 })))).toMatchObject({
      status: 404,
      code: 'not_found',
    });
  });

  it('in a score comment is refused by the comment rule', async () => {
    const url = `${server.url}/v1/contexts/${quiz.context.id}/apps/${tool.app.id}/locations/${quiz.location.id}/members/${student.member.id}/scores`;
    expect(await problemOf(await fetch(url, json(`Bearer ${tool.apiKey}`, 'POST', { score: 0.5, comment: 'good\u0000' })))).toMatchObject({
      status: 422,
      code: 'invalid_comment',
      detail: 'comment must not contain the NUL character (U+0000)',
    });
  });

  it('in a JSON row is kept, escaped', async () => {
    const row = student.claims.storage.member;
    expect((await fetch(row, json(student.auth, 'PUT', { 'k\u0000': 'v\u0000' }))).status).toBe(204);
    expect(await (await fetch(row, { headers: { Authorization: student.auth } })).json()).toEqual({ 'k\u0000': 'v\u0000' });
  });

  it('in other stored text (a Sandbox gradebook line item) answers 422 unstorable_text', async () => {
    const publicUrl = server.services.config.publicUrl;
    const client = sandboxClientId(tool.app.id);
    const iat = Math.floor(Date.now() / 1000);
    const assertion = await server.services.signer.sign({ iss: client, sub: client, aud: sandboxTokenUrl(publicUrl), iat, exp: iat + 300, jti: randomUUID() });
    const tokenResponse = await fetch(`${server.url}/sandbox-lms/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: assertion,
        scope: AGS_SCOPES.lineItem,
      }).toString(),
    });
    expect(tokenResponse.status).toBe(200);
    const { access_token: token } = (await tokenResponse.json()) as { access_token: string };
    const created = await fetch(`${server.url}/sandbox-lms/contexts/${quiz.context.id}/lineitems`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': AGS_MEDIA_TYPES.lineItem },
      body: JSON.stringify({ scoreMaximum: 10, label: 'Bonus\u0000' }),
    });
    expect(await problemOf(created)).toMatchObject({
      status: 422,
      code: 'unstorable_text',
      detail: 'text containing the NUL character (U+0000) cannot be stored',
    });
  });
});
