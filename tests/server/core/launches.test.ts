/**
 * The launch service: what a launch records, and the claims of launch, provision and locations tokens,
 * validated against the spec's schemas and verified with `jose` against the served JWKS.
 */
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCurrentLaunchClaims, roleOf, UnsupportedContractError } from '../../../server/launches/claims.js';
import { groupsFromLmsRoles } from '../../../server/launches/groups.js';
import type { PlacedLocation, TestServer, Tool } from '../harness.js';
import { createTool, launch, placeLocation, startServer } from '../harness.js';
import { claimErrors } from './claims-schema.js';

let server: TestServer;
let tool: Tool;
let quiz: PlacedLocation;

beforeAll(async () => {
  server = await startServer();
  tool = await createTool(server);
  quiz = await placeLocation(server, { app: tool.app.id, type: 'assessment', label: 'Week 3 quiz', points: 50 });
});
afterAll(async () => server?.stop());

describe('launch claims', () => {
  it('a student launch: valid claims, no personal data, grade.submit the /contexts/... URL', async () => {
    const student = await launch(server, { placed: quiz, groups: ['student'], givenName: 'Sam' });
    const c = student.claims;
    expect(claimErrors('LaunchClaims', c)).toEqual([]);
    expect(c.user).toMatchObject({ groups: ['student'], given_name: null, family_name: null, full_name: null, email: null });
    expect(c.grade.submit).toBe(
      `${server.url}/v1/contexts/${quiz.context.id}/apps/${tool.app.id}/locations/${quiz.location.id}/members/${student.member.id}/scores`,
    );
    expect(c.iss).toBe(server.url);
    expect(c.aud).toBe(tool.app.id);
    expect(c.app).toBe(tool.app.id);
    expect(c.exp - c.iat).toBe(300);
    expect(c.api.domain).toBe(new URL(server.url).host);
    expect(c.api.token).toMatch(/^tis_at_[A-Za-z0-9_-]{43}$/);
    expect(c.location).toEqual({ id: quiz.location.id, extid: quiz.location.extid, type: 'assessment', label: 'Week 3 quiz' });
    expect(c.storage.member).toBe(`${server.url}/v1/contexts/${quiz.context.id}/apps/${tool.app.id}/members/${student.member.id}/storage`);
    expect(c.files.member_location).toBe(c.storage.member_location.replace(/\/storage$/, '/files'));
    expect(c.provision).toEqual({
      context: `${server.url}/v1/contexts/${quiz.context.id}/apps/${tool.app.id}/provision`,
      location: `${server.url}/v1/contexts/${quiz.context.id}/apps/${tool.app.id}/locations/${quiz.location.id}/provision`,
    });
    expect(c.course).toEqual({ name: quiz.context.name, label: quiz.context.label });
    expect(c.launch_id).toBe(student.launch.id);
  });

  it.each([['instructor'], ['assistant'], ['manager']] as const)('a %s launch carries name and email', async (group) => {
    const staff = await launch(server, { placed: quiz, groups: [group], givenName: 'Maria', familyName: 'Okafor', email: 'm@x.edu' });
    expect(claimErrors('LaunchClaims', staff.claims)).toEqual([]);
    expect(staff.claims.user).toMatchObject({ given_name: 'Maria', family_name: 'Okafor', full_name: 'Maria Okafor', email: 'm@x.edu' });
  });

  it('a launch with no mapped group carries no personal data', async () => {
    const someone = await launch(server, { placed: quiz, groups: [] });
    expect(claimErrors('LaunchClaims', someone.claims)).toEqual([]);
    expect(someone.claims.user.email).toBeNull();
  });

  it('grade.submit is null for a location that is not an assessment', async () => {
    const content = await placeLocation(server, { app: tool.app.id, type: 'content', course: { contextId: quiz.context.id } });
    const l = await launch(server, { placed: content, groups: ['instructor'] });
    expect(claimErrors('LaunchClaims', l.claims)).toEqual([]);
    expect(l.claims.grade.submit).toBeNull();
  });

  it('grade.submit is null for an assessment without a gradebook column', async () => {
    const noColumn = await placeLocation(server, { app: tool.app.id, type: 'assessment', lineItem: false });
    const l = await launch(server, { placed: noColumn });
    expect(claimErrors('LaunchClaims', l.claims)).toEqual([]);
    expect(l.claims.grade.submit).toBeNull();
  });

  it('is signed RS256 with kid and typ JWT, and verifies against the served JWKS', async () => {
    const l = await launch(server, { placed: quiz });
    const header = decodeProtectedHeader(l.token);
    expect(header).toMatchObject({ alg: 'RS256', typ: 'JWT' });
    expect(typeof header.kid).toBe('string');
    const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
    const { payload } = await jwtVerify(l.token, jwks, { issuer: server.url, audience: tool.app.id, typ: 'JWT' });
    expect(payload).toEqual(l.claims);
    const again = await launch(server, { placed: quiz });
    expect(again.claims.jti).not.toBe(l.claims.jti);
  });

  it('the api.token lives API_TOKEN_TTL_SECONDS (NS-14)', async () => {
    const l = await launch(server, { placed: quiz });
    const ttl = server.services.config.apiTokenTtlSeconds;
    expect(l.apiTokenRecord.expiresAt - l.apiTokenRecord.createdAt).toBe(ttl * 1000);
  });
});

describe('what a launch records', () => {
  const org = { issuer: 'https://lms.northfield.edu', client: 'client-42', deployment: 'dep-1', title: 'Northfield University' };

  it('an unseen deployment is a new school, an unseen resource_link a new placement', async () => {
    const location = (await server.services.store.locations.syncServed(tool.app.id, [{ extid: 'essay', type: 'assessment', label: 'Essay' }]))[0]!;
    const input = {
      organization: org,
      course: { externalId: 'STAT-101', name: 'Statistics', label: 'STAT 101' },
      user: { externalId: 'lms-user-1', roles: ['http://purl.imsglobal.org/vocab/lis/v2/membership#Learner'] },
      placement: { appId: tool.app.id, locationId: location.id, resourceLink: 'rl-essay-1' },
    };
    const first = await server.services.launches.launch(input);
    expect(first.newOrganization).toBe(true);
    expect(first.newPlacement).toBe(true);
    expect(first.member.groups).toEqual(['student']);
    expect('resource_link' in first.claims && first.claims.resource_link).toBe('rl-essay-1');
    expect(claimErrors('LaunchClaims', first.claims)).toEqual([]);
    const second = await server.services.launches.launch({ ...input, user: { externalId: 'lms-user-2', roles: ['Instructor'] } });
    expect(second.newOrganization).toBe(false);
    expect(second.newPlacement).toBe(false);
    expect(second.organization.id).toBe(first.organization.id);
    expect(second.placement.id).toBe(first.placement.id);
    expect('resource_link' in second.claims && second.claims.resource_link).toBe('rl-essay-1');
    // Member rows are open from the first launch: the student's own row answers at once.
    const row = await fetch(first.claims.storage.member, { headers: { Authorization: `Bearer ${first.apiToken}` } });
    expect(row.status).toBe(200);
    const other = await server.services.launches.launch({
      ...input,
      organization: { ...org, deployment: 'dep-2' },
      placement: { ...input.placement, resourceLink: 'rl-essay-2' },
    });
    expect(other.newOrganization).toBe(true);
    expect(other.user.id).not.toBe(first.user.id);
    // One resource_link names one placement: another course cannot claim it.
    await expect(
      server.services.launches.launch({ ...input, course: { externalId: 'BIO-1', name: 'Biology' } }),
    ).rejects.toThrow(/names another placement/);
  });
});

describe('LMS roles → groups (NS-07)', () => {
  it.each([
    [['http://purl.imsglobal.org/vocab/lis/v2/membership#Learner'], ['student']],
    [['Learner'], ['student']],
    [['http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor'], ['instructor']],
    [['Teacher'], ['instructor']],
    [['http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant'], ['assistant']],
    [['http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator'], ['manager']],
    [['http://purl.imsglobal.org/vocab/lis/v2/membership#ContentDeveloper'], ['manager']],
    [['http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor', 'Observer'], []],
    [['Instructor', 'Learner', 'Instructor'], ['student', 'instructor']],
  ])('%j → %j', (roles, groups) => {
    expect(groupsFromLmsRoles(roles)).toEqual(groups);
  });
});

describe('provision and locations claims', () => {
  it('a course-level provision request (NS-06)', async () => {
    const r = await server.services.launches.provisionRequest({ appId: tool.app.id, contextId: quiz.context.id });
    expect(claimErrors('ProvisionClaims', r.claims)).toEqual([]);
    expect(r.claims.location).toBeNull();
    expect(r.claims.storage).toEqual({ context: `${server.url}/v1/contexts/${quiz.context.id}/apps/${tool.app.id}/storage`, location: null });
    expect(r.claims.provision.location).toBeNull();
    expect(r.apiTokenRecord).toMatchObject({ kind: 'provision', provisionLevels: ['context'], locationId: null });
    expect(r.apiTokenRecord.expiresAt - r.apiTokenRecord.createdAt).toBe(86_400_000);
    expect(r.claims).not.toHaveProperty('user');
  });

  it('a location-level provision request of a copied course names the parent rows', async () => {
    const store = server.services.store;
    const copy = await store.contexts.create({
      organizationId: quiz.context.organizationId,
      name: 'Statistics (copy)',
      parentContextId: quiz.context.id,
    });
    const r = await server.services.launches.provisionRequest({ appId: tool.app.id, contextId: copy.id, locationId: quiz.location.id });
    expect(claimErrors('ProvisionClaims', r.claims)).toEqual([]);
    expect(r.claims.storage.parent_context).toBe(`${server.url}/v1/contexts/${quiz.context.id}/apps/${tool.app.id}/storage`);
    expect(r.claims.storage.parent_location).toBe(
      `${server.url}/v1/contexts/${quiz.context.id}/apps/${tool.app.id}/locations/${quiz.location.id}/storage`,
    );
    expect(r.apiTokenRecord).toMatchObject({ provisionLevels: ['context', 'location'], parentContextId: quiz.context.id });
  });

  it('a locations request: api.token null, personal data only for staff', async () => {
    const instructor = await launch(server, { placed: quiz, groups: ['instructor'] });
    const withUser = await server.services.launches.locationsRequest({
      appId: tool.app.id,
      contextId: quiz.context.id,
      memberId: instructor.member.id,
    });
    expect(claimErrors('LocationsClaims', withUser.claims)).toEqual([]);
    expect(withUser.claims.api.token).toBeNull();
    expect(withUser.claims.user.email).not.toBeNull();
    const anonymous = await server.services.launches.locationsRequest({ appId: tool.app.id, contextId: quiz.context.id });
    expect(claimErrors('LocationsClaims', anonymous.claims)).toEqual([]);
    expect(anonymous.claims.user).toEqual({ id: null, member: null, groups: null, given_name: null, family_name: null, full_name: null, email: null });
    const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
    await expect(jwtVerify(withUser.token, jwks, { issuer: server.url, audience: tool.app.id })).resolves.toBeTruthy();
  });
});

describe('claims by the tool’s pin (NS-18)', () => {
  it('2026-08-19 user.role: the most privileged mapped group, student when none maps (S-16)', () => {
    expect(roleOf([])).toBe('student');
    expect(roleOf(['student'])).toBe('student');
    expect(roleOf(['assistant', 'student'])).toBe('assistant');
    expect(roleOf(['assistant', 'instructor'])).toBe('instructor');
    expect(roleOf(['instructor', 'manager'])).toBe('manager');
  });

  it('a pin no contract has is refused rather than shaped as another contract', async () => {
    const pinned = await server.services.store.apps.create({ name: 'Pinned far', hosting: 'self_hosted', contractVersion: '2025-01-01' });
    const location = (await server.services.store.locations.syncServed(pinned.app.id, [{ extid: 'x', type: 'content', label: 'X' }]))[0]!;
    await expect(
      server.services.launches.launch({
        organization: { issuer: 'https://lms.pin.edu', client: 'c', deployment: 'd', title: 'Pin U' },
        course: { externalId: 'PIN-1', name: 'Pins' },
        user: { externalId: 'u1', groups: ['student'] },
        placement: { appId: pinned.app.id, locationId: location.id, resourceLink: 'rl-pin-1' },
      }),
    ).rejects.toBeInstanceOf(UnsupportedContractError);
  });

  it('the same launch shaped for each contract: isCurrentLaunchClaims tells the current shape apart', async () => {
    const outcomes = [];
    for (const contractVersion of ['2026-09-21', '2026-08-25', '2026-08-19']) {
      outcomes.push(
        await server.services.launches.launch({
          organization: quiz.organizationInput,
          course: { contextId: quiz.context.id },
          user: { externalId: 'u2', groups: ['instructor'] },
          placement: { appId: tool.app.id, locationId: quiz.location.id, resourceLink: quiz.placement.resourceLink },
          contractVersion,
        }),
      );
    }
    expect(outcomes.map((o) => isCurrentLaunchClaims(o.claims))).toEqual([true, false, false]);
    expect(outcomes.map((o) => ('grade_passback' in o.claims ? o.claims.grade_passback : null))).toEqual([null, true, true]);
  });
});
