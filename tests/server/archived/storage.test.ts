/**
 * The same storage scenario under all three contracts (contract, Storage rows; decision GAP-44): read,
 * replace, patch, the 403 and 404 cases and the credential rules, each answer from the contract the tool
 * is pinned to. The one difference: 2026-08-19 has no provisioning, so its rows never wait for one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../harness.js';
import { placeLocation, startServer } from '../harness.js';
import type { ArchivedLaunch, Version } from './helpers.js';
import { call, expectProblem, launchAs, pinnedTool, VERSIONS } from './helpers.js';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});

afterAll(async () => {
  await server?.stop();
});

describe.each(VERSIONS)('storage rows under %s', (version: Version) => {
  let student: ArchivedLaunch;
  let otherStudent: ArchivedLaunch;
  let instructor: ArchivedLaunch;
  let apiKeyAuth: string;

  beforeAll(async () => {
    const tool = await pinnedTool(server, version);
    apiKeyAuth = tool.auth;
    const placed = await placeLocation(server, { app: tool.appId, type: 'assessment' });
    student = await launchAs(server, placed, ['student']);
    otherStudent = await launchAs(server, placed, ['student']);
    instructor = await launchAs(server, placed, ['instructor']);
  });

  it('reads, replaces and patches the four rows', async () => {
    const empty = await call('GET', student.storage.context, { auth: student.auth });
    expect([empty.status, empty.body, empty.headers.get('contract-version')]).toEqual([200, {}, version]);

    const put = await call('PUT', instructor.storage.context, { auth: instructor.auth, body: { unit: 3, topics: ['mean'] } });
    expect([put.status, put.headers.get('contract-version')]).toEqual([204, version]);
    expect((await call('GET', student.storage.context, { auth: student.auth })).body).toEqual({ unit: 3, topics: ['mean'] });

    const patched = await call('PATCH', instructor.storage.location, {
      auth: instructor.auth,
      body: { patch: [{ op: 'add', path: '/settings/attempts', value: 2 }] },
    });
    expect(patched.status).toBe(204);
    expect((await call('GET', student.storage.location, { auth: student.auth })).body).toEqual({ settings: { attempts: 2 } });

    expect((await call('PUT', student.storage.member, { auth: student.auth, body: { progress: 0.5 } })).status).toBe(204);
    expect(
      (await call('PATCH', student.storage.member, { auth: student.auth, body: { patch: [{ op: 'replace', path: '/progress', value: 0.75 }] } })).status,
    ).toBe(204);
    expect((await call('GET', student.storage.member, { auth: student.auth })).body).toEqual({ progress: 0.75 });

    expect((await call('PUT', student.storage.member_location, { auth: student.auth, body: { answers: [1, 2] } })).status).toBe(204);
    // Staff read a student's rows.
    expect((await call('GET', student.storage.member_location, { auth: instructor.auth })).body).toEqual({ answers: [1, 2] });
  });

  it('refuses with the same 401, 403, 404 and 422 answers', async () => {
    expectProblem(await call('PUT', student.storage.context, { auth: student.auth, body: { x: 1 } }), 403, 'students may read but not write the context and location rows', version);
    expectProblem(await call('GET', student.storage.member, { auth: otherStudent.auth }), 403, "a student may not access another member's rows", version);
    // GAP-44: another student's member_location row is protected like the member row.
    expectProblem(await call('GET', student.storage.member_location, { auth: otherStudent.auth }), 403, "a student may not access another member's rows", version);

    const stranger = await pinnedTool(server, version);
    const strangerPlaced = await placeLocation(server, { app: stranger.appId, type: 'content' });
    const strangerLaunch = await launchAs(server, strangerPlaced, ['instructor']);
    expectProblem(await call('GET', student.storage.context, { auth: strangerLaunch.auth }), 404, 'row not found', version);

    expectProblem(await call('PATCH', student.storage.member, { auth: student.auth, body: { op: 'add' } }), 422, 'PATCH body must be an object with the single key "patch"', version);
    expectProblem(await call('PUT', student.storage.member, { auth: student.auth, body: [1, 2] }), 422, 'a row holds one JSON object: the body must be a JSON object', version);
    expectProblem(await call('GET', student.storage.member, {}), 401, 'Missing bearer token');
    expectProblem(
      await call('GET', student.storage.member, { auth: apiKeyAuth }),
      401,
      'API key is not accepted on this URL; use the api.token of a launch',
      version,
    );
    // Nothing refused was written.
    expect((await call('GET', student.storage.member, { auth: student.auth })).body).toEqual({ progress: 0.75 });
  });

  it('keeps the row size limit and the shared-row rule under every pin, 2026-08-19 included (H-11)', async () => {
    const big = { blob: 'x'.repeat(600 * 1024) };
    const refused = await call('PUT', student.storage.member, { auth: student.auth, body: big });
    expect(refused.status).toBe(422);
    expect(String(refused.body['detail'])).toMatch(/^row too large: \d+ bytes of compact JSON, at most 524288 \(512 KB\) for a member row$/);
    expectProblem(await call('PATCH', student.storage.context, { auth: student.auth, body: { patch: [{ op: 'add', path: '/x', value: 1 }] } }), 403, 'students may read but not write the context and location rows', version);
    expect((await call('GET', student.storage.member, { auth: student.auth })).body).toEqual({ progress: 0.75 });
    expect((await call('GET', student.storage.context, { auth: student.auth })).body).not.toHaveProperty('x');
  });

  it(version === '2026-08-19' ? 'needs no provisioning: every level is ready when first needed' : 'waits for the course to be provisioned', async () => {
    const tool = await pinnedTool(server, version);
    const placed = await placeLocation(server, { app: tool.appId, type: 'content', provisionContext: false, provisionLocation: false });
    const launched = await launchAs(server, placed, ['instructor']);
    const read = await call('GET', launched.storage.context, { auth: launched.auth });
    const write = await call('PUT', launched.storage.location, { auth: launched.auth, body: { ready: true } });
    if (version === '2026-08-19') {
      expect([read.status, write.status]).toEqual([200, 204]);
    } else {
      expectProblem(read, 422, `context ${placed.context.id} is not provisioned yet: the tool must PUT its provision URL first`, version);
      expectProblem(
        write,
        422,
        `location ${placed.location.id} in context ${placed.context.id} is not provisioned yet: the tool must PUT its provision URL first`,
        version,
      );
    }
    // Member rows are open from the first launch in every contract.
    expect((await call('GET', launched.storage.member, { auth: launched.auth })).status).toBe(200);
  });
});
