/**
 * U+0000 in what a caller sends: PostgreSQL's TEXT can neither store nor compare it, so on that store it
 * used to surface as a 500. Both stores now answer alike: a path ID holding it names nothing (404), a
 * score comment holding it is refused by its own rule, any other text the service would store is refused
 * as `unstorable_text` (422), and JSON rows keep it (JSON escapes it as `\u0000`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlacedLocation, TestLaunch, TestServer, Tool } from '../harness.js';
import { createTool, launch, placeLocation, problemOf, startServer } from '../harness.js';
import { pinnedTool } from '../archived/helpers.js';

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

  it("in other stored text (a location's label, which names its gradebook column) answers 422 unstorable_text", async () => {
    // The Sandbox's gradebook is its LMS's now (LTI-48), not the service's store: the label of a location a
    // tool stores through the management API is the service's text a gradebook column is named after.
    const pinned = await pinnedTool(server, '2026-08-25');
    const created = await fetch(`${server.url}/v1/apps/me/locations`, json(pinned.auth, 'POST', { extid: 'bonus', type: 'assessment', label: 'Bonus\u0000' }));
    expect(await problemOf(created)).toMatchObject({
      status: 422,
      code: 'unstorable_text',
      detail: 'text containing the NUL character (U+0000) cannot be stored',
    });
    expect((await server.services.store.locations.listForApp(pinned.appId)).filter((l) => l.extid === 'bonus')).toEqual([]);
  });
});
