/**
 * What the service sends a tool is shaped by its pin (decisions NS-18, S-16, GAP-45, GAP-46): the launch,
 * provision and locations tokens of a tool pinned to each contract validate against that contract's claim
 * schema (Ajv 2020 on the bundled specs) and not against the other contracts', claim by claim, and the
 * signed `launch_data` carries exactly those claims.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NoSuchRequestError } from '../../../server/launches/claims.js';
import type { LocationRecord, MemberGroup } from '../../../server/store/index.js';
import type { PlacedLocation, TestServer } from '../harness.js';
import { ensureLmsCourse, linkInLms, placeLocation, sandboxSchool, startServer } from '../harness.js';
import type { Version } from './helpers.js';
import { call, hasSchema, launchAs, pinnedTool, schemaErrors, VERSIONS } from './helpers.js';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});

afterAll(async () => {
  await server?.stop();
});

function payloadOf(jwt: string): unknown {
  return JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8'));
}

/** The contracts whose schema `claims` must satisfy, and those it must not. */
function expectOnlyValidUnder(version: Version, schema: string, claims: unknown, others: readonly Version[]): void {
  expect(schemaErrors(version, schema, claims), `${version} ${schema}`).toEqual([]);
  for (const other of others) {
    if (!hasSchema(other, schema)) continue;
    expect(schemaErrors(other, schema, claims).length, `${schema} of ${version} must not validate under ${other}`).toBeGreaterThan(0);
  }
}

/**
 * A stored location placed in a course of the tool's Sandbox school, with its gradebook column in the
 * Sandbox's LMS as `placeLocation` makes one.
 */
async function placeInSandboxSchool(appId: string, location: LocationRecord, course: { externalId: string; label: string | null }): Promise<PlacedLocation> {
  const { store, launches } = server.services;
  const organization = await sandboxSchool(server, appId);
  const context = await store.contexts.upsert({ organizationId: organization.id, externalId: course.externalId, name: 'Course', label: course.label });
  await ensureLmsCourse(server, appId, context);
  const placed = await launches.place({ appId, contextId: context.id, locationId: location.id });
  const placement = await linkInLms(server, organization, context, placed);
  const organizationInput = { issuer: organization.issuer, client: organization.client, deployment: organization.deployment, title: organization.title };
  return { appId, organization, organizationInput, context, location, placement };
}

/** A location stored through the management API (as 2026-08-19 tools have them), placed in a course. */
async function placeStored(appId: string, params: Record<string, string>): Promise<PlacedLocation> {
  const location = await server.services.store.locations.createStored(appId, { type: 'assessment', label: 'Week 3 quiz', params });
  return placeInSandboxSchool(appId, location, { externalId: `c-${appId}`, label: null });
}

describe.each(VERSIONS)('a tool pinned to %s', (version: Version) => {
  const others = VERSIONS.filter((v) => v !== version);

  it('receives launches whose claims validate against its contract’s LaunchClaims only', async () => {
    const tool = await pinnedTool(server, version);
    const quiz = await placeLocation(server, { app: tool.appId, type: 'assessment' });
    const page = await placeLocation(server, { app: tool.appId, type: 'content', course: { contextId: quiz.context.id } });
    for (const [placed, groups] of [
      [quiz, ['student']],
      [quiz, ['instructor', 'assistant']],
      [page, ['manager']],
      [page, []],
    ] as Array<[PlacedLocation, MemberGroup[]]>) {
      const launched = await launchAs(server, placed, groups);
      expectOnlyValidUnder(version, 'LaunchClaims', launched.raw, others);
      expect(payloadOf(launched.token)).toEqual(launched.raw);
      const assessment = placed === quiz;
      if (version === '2026-09-21') {
        expect((launched.raw['grade'] as { submit: string | null }).submit === null).toBe(!assessment);
        expect('grade_passback' in launched.raw).toBe(false);
      } else {
        expect(launched.raw['grade_passback']).toBe(assessment);
        expect('grade' in launched.raw || 'files' in launched.raw).toBe(false);
        expect(launched.raw['launch_id']).toBe(launched.launch.id);
      }
    }
  });

  it('receives provision and locations requests of its contract, or none in 2026-08-19', async () => {
    const tool = await pinnedTool(server, version);
    const placed = await placeLocation(server, { app: tool.appId, type: 'assessment' });
    const launches = server.services.launches;
    if (version === '2026-08-19') {
      await expect(launches.provisionRequest({ appId: tool.appId, contextId: placed.context.id })).rejects.toBeInstanceOf(NoSuchRequestError);
      await expect(launches.locationsRequest({ appId: tool.appId, contextId: placed.context.id })).rejects.toBeInstanceOf(NoSuchRequestError);
      return;
    }
    for (const locationId of [null, placed.location.id]) {
      const request = await launches.provisionRequest({ appId: tool.appId, contextId: placed.context.id, locationId });
      expectOnlyValidUnder(version, 'ProvisionClaims', request.claims, others);
      expect(payloadOf(request.token)).toEqual(request.claims);
      expect('files' in request.claims).toBe(version === '2026-09-21');
    }
    const instructor = await launchAs(server, placed, ['instructor']);
    const locations = await launches.locationsRequest({ appId: tool.appId, contextId: placed.context.id, memberId: instructor.member.id });
    expect(schemaErrors(version, 'LocationsClaims', locations.claims)).toEqual([]);
    expect(payloadOf(locations.token)).toEqual(locations.claims);
    // The locations request did not change between 2026-08-25 and 2026-09-21: one shape, valid under both,
    // and there is no such request in 2026-08-19.
    expect(schemaErrors(version === '2026-08-25' ? '2026-09-21' : '2026-08-25', 'LocationsClaims', locations.claims)).toEqual([]);
    expect(hasSchema('2026-08-19', 'LocationsClaims')).toBe(false);
  });
});

describe('2026-08-19 claims, one by one (S-16, GAP-45)', () => {
  it('user.role is the most privileged mapped role, student when none maps; names only for staff', async () => {
    const tool = await pinnedTool(server, '2026-08-19');
    const placed = await placeLocation(server, { app: tool.appId, type: 'content' });
    const cases: Array<[MemberGroup[], string, boolean]> = [
      [['student'], 'student', false],
      [[], 'student', false],
      [['assistant'], 'assistant', true],
      [['instructor', 'assistant'], 'instructor', true],
      [['student', 'manager', 'instructor'], 'manager', true],
    ];
    for (const [groups, role, named] of cases) {
      const launched = await launchAs(server, placed, groups);
      const user = launched.raw['user'] as Record<string, unknown>;
      expect([groups, user['role']]).toEqual([groups, role]);
      expect(user['full_name']).toBe(named ? 'Ada Lovelace' : null);
      expect(user['email'] === null).toBe(!named);
      expect('groups' in user || 'member' in user).toBe(false);
    }
  });

  it('organization.id, resource_link_id, no context or provision, location params with the stored location’s current values', async () => {
    const tool = await pinnedTool(server, '2026-08-19');
    const placed = await placeStored(tool.appId, { attempts: '3' });
    const first = await launchAs(server, placed);
    expect(first.raw['organization']).toEqual({
      title: placed.organization.title,
      issuer: placed.organization.issuer,
      client: placed.organization.client,
      id: placed.organization.deployment,
    });
    expect(first.raw['resource_link_id']).toBe(placed.placement.resourceLink);
    expect('resource_link' in first.raw || 'context' in first.raw || 'provision' in first.raw).toBe(false);
    expect(first.raw['location']).toEqual({ id: placed.location.id, type: 'assessment', label: 'Week 3 quiz', params: { attempts: '3' } });
    expect(first.raw['iss']).toBe(new URL(server.url).origin);

    // A change through the management API applies at once to the placement's next launch.
    const res = await call('PATCH', `${server.url}/v1/apps/me/locations/${placed.location.id}`, {
      auth: tool.auth,
      body: { label: 'Week 3 quiz (timed)', params: { time_limit_minutes: '20' } },
    });
    expect(res.status).toBe(200);
    const next = await launchAs(server, placed);
    expect(next.raw['location']).toEqual({
      id: placed.location.id,
      type: 'assessment',
      label: 'Week 3 quiz (timed)',
      params: { time_limit_minutes: '20' },
    });
    expect(schemaErrors('2026-08-19', 'LaunchClaims', next.raw)).toEqual([]);
  });
});

describe('2026-08-25 claims, one by one', () => {
  it('user.groups and member, resource_link, organization.deployment, the placement’s copy of the location', async () => {
    const tool = await pinnedTool(server, '2026-08-25');
    const created = await call('POST', `${server.url}/v1/apps/me/locations`, {
      auth: tool.auth,
      body: { extid: 'essay', type: 'assessment', label: 'Essay' },
    });
    const placed = await placeStoredById(tool.appId, created.body['id'] as string);
    await call('PATCH', `${server.url}/v1/apps/me/locations/${placed.location.id}`, { auth: tool.auth, body: { label: 'Essay (renamed)' } });
    const launched = await launchAs(server, placed, ['instructor']);
    expect(launched.raw['location']).toEqual({ id: placed.location.id, extid: 'essay', type: 'assessment', label: 'Essay' });
    expect(launched.raw['user']).toMatchObject({ member: launched.member.id, groups: ['instructor'], full_name: 'Ada Lovelace' });
    expect(launched.raw['resource_link']).toBe(placed.placement.resourceLink);
    expect((launched.raw['organization'] as Record<string, unknown>)['deployment']).toBe(placed.organization.deployment);
    expect(launched.raw['grade_passback']).toBe(true);
  });
});

async function placeStoredById(appId: string, locationId: string): Promise<PlacedLocation> {
  const location = await server.services.store.locations.get(locationId);
  if (!location) throw new Error('no location');
  return placeInSandboxSchool(appId, location, { externalId: `c2-${appId}`, label: 'C 1' });
}
