/**
 * The lockstep scenario (scenario.ts) against both sides of the contract: the Prism mock a tool team
 * develops against, and the real service behind `prism proxy --errors`. Neither side may produce a
 * violation: no `sl-violations` header on any exchange, and no request refused by the proxy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentContractVersion } from '../../generated/index.js';
import { createTool, launch, placeLocation, startServer, type TestServer } from '../server/harness.js';
import { freePort, startMock, stopAllMocks, type RunningMock } from '../mocks/launcher.js';
import { PRISM_PROBLEM, recordingFetch, runStep, scenario, type Exchange, type ScenarioTarget } from './scenario.js';

afterAll(async () => {
  await stopAllMocks();
});

function violationsIn(exchanges: readonly Exchange[]): Exchange[] {
  return exchanges.filter((e) => e.violations !== null || e.problemType?.startsWith(PRISM_PROBLEM) === true);
}

describe('against the Prism mock of the current contract', () => {
  const exchanges: Exchange[] = [];
  let mock: RunningMock;
  let target: ScenarioTarget;

  beforeAll(async () => {
    mock = await startMock('mock', [currentContractVersion]);
    // The IDs of the spec's examples; Prism accepts any that match the path patterns.
    const ids = { context: 'ctx_7k2m9q4r8t1v5w3x6y0z', app: 'app_3f9c2a7d1e5b8h4j6k0m', location: 'loc_5n8p2r6t9v1x4z7b3d0f', member: 'mem_2c6e9g3j7l1n5q8s4u0w' };
    const course = `${mock.url}/v1/contexts/${ids.context}/apps/${ids.app}`;
    const member = `${course}/locations/${ids.location}/members/${ids.member}`;
    const classmate = `${course}/locations/${ids.location}/members/mem_9w4y7a0c3e6g1j5l8n2q`;
    target = {
      label: 'Prism mock',
      stateful: false,
      origin: mock.url,
      ids,
      student: {
        token: 'tis_at_Qm7vX2pL9kR4tW8yB1nC6dF3gH5jK0sZ2aE7uV9xY4c',
        memberLocationRow: `${member}/storage`,
        contextRow: `${course}/storage`,
        memberLocationFiles: `${member}/files`,
        gradeSubmit: `${member}/scores`,
      },
      classmateRow: `${classmate}/storage`,
      classmateScore: `${classmate}/scores`,
      practiceScore: `${course}/locations/loc_8b3d6f9h2k5m0p4r7t1v/members/${ids.member}/scores`,
      apiKey: `ltiaas_${ids.app}_s3cr3tK3yV4lu3`,
      // The examples' signed URLs (upload form, downloads) name the spec's origin: send them to the mock.
      fetchFor: (step, prefer) => recordingFetch({ step, from: 'https://tis.example.edu', to: mock.url, prefer, exchanges }),
      exchanges,
    };
  }, 60_000);

  for (const step of scenario) {
    it(step.name, () => runStep(step, target));
  }

  it('produced no violation on any exchange', () => {
    expect(exchanges.length).toBeGreaterThanOrEqual(scenario.length);
    expect(violationsIn(exchanges)).toEqual([]);
  });
});

describe('against the real service behind prism proxy --errors', () => {
  const exchanges: Exchange[] = [];
  let server: TestServer;
  let proxy: RunningMock;
  let target: ScenarioTarget;

  beforeAll(async () => {
    server = await startServer();
    proxy = await startMock('proxy', [currentContractVersion, server.url, '--port', String(await freePort())]);
    const tool = await createTool(server);
    const assessment = await placeLocation(server, { app: tool.app.id, type: 'assessment' });
    const practice = await placeLocation(server, { app: tool.app.id, type: 'practice', course: { contextId: assessment.context.id } });
    const student = await launch(server, { placed: assessment });
    const classmate = await launch(server, { placed: assessment });
    const gradeSubmit = student.claims.grade.submit;
    if (gradeSubmit === null) throw new Error('an assessment with a gradebook column launches with grade.submit');
    const ids = { context: assessment.context.id, app: tool.app.id, location: assessment.location.id, member: student.claims.user.member };
    target = {
      label: 'service behind the proxy',
      stateful: true,
      origin: proxy.url,
      ids,
      student: {
        token: student.apiToken,
        memberLocationRow: student.claims.storage.member_location,
        contextRow: student.claims.storage.context,
        memberLocationFiles: student.claims.files.member_location,
        gradeSubmit,
      },
      classmateRow: classmate.claims.storage.member_location,
      classmateScore: gradeSubmit.replace(`/members/${ids.member}/`, `/members/${classmate.claims.user.member}/`),
      practiceScore: `${server.url}/v1/contexts/${ids.context}/apps/${ids.app}/locations/${practice.location.id}/members/${ids.member}/scores`,
      apiKey: tool.apiKey,
      // The claims' URLs name the service (its PUBLIC_URL, which its Sandbox gradebook also lives under):
      // every call the scenario makes goes through the proxy instead.
      fetchFor: (step) => recordingFetch({ step, from: server.url, to: proxy.url, prefer: null, exchanges }),
      exchanges,
    };
  }, 60_000);

  afterAll(async () => {
    await proxy?.stop();
    await server?.stop();
  });

  for (const step of scenario) {
    it(step.name, () => runStep(step, target));
  }

  it('produced no violation on any exchange, and every call went through the proxy', () => {
    expect(exchanges.length).toBeGreaterThanOrEqual(scenario.length);
    expect(violationsIn(exchanges)).toEqual([]);
    expect(exchanges.filter((e) => !e.url.startsWith(proxy.url))).toEqual([]);
  });
});
