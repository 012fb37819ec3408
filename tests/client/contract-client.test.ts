// The typed clients against Prism mocks of the specs (current, dashboard) and against a recording server
// for the exact requests and headers. An archived contract's client gets the 2026-08-25 spec's own answer
// from the recording server; Prism serving that contract is tests/mocks/prism.test.ts's (decision CI-47).

import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import {
  createContractClient,
  createDashboardClient,
  type ContractProblem,
  type ContractVersion,
  type Problem,
} from '../../client/index.js';
import { rows, submitScore } from '../../client/tool/index.js';
import { recordingServer, sendJson, startPrism, type PrismMock, type RecordingServer } from './support.js';

const requireJson = createRequire(import.meta.url);
type Spec = { components: { examples: Record<string, { value: unknown }> } };
const current = requireJson('../../generated/2026-09-21/openapi.json') as Spec;
const dashboard = requireJson('../../generated/dashboard/openapi.json') as Spec;
const archived = requireJson('../../generated/2026-08-25/openapi.json') as Spec;
const example = (spec: Spec, name: string) => {
  const found = spec.components.examples[name];
  if (!found) throw new Error(`no example ${name}`);
  return found.value;
};

const token = 'tis_at_Pv4xN9mQ2rT7wK1yH6bD3fG8jL0sA5cE9uZ2iO7nR4m';
const ids = { context_id: 'ctx_7k2m9q4r8t1v5w3x6y0z', app_id: 'app_3f9c2a7d1e5b8h4j6k0m' };
const scoreIds = { ...ids, location_id: 'loc_8d1f4h7k0m3p6r9t2v5x', member_id: 'mem_6h9k2m5p8r1t4w7y0b3d' };

let prism: PrismMock;
let prismDashboard: PrismMock;

beforeAll(async () => {
  // `--errors`: a request that breaks the spec is answered with an error, never with a success example.
  [prism, prismDashboard] = await Promise.all([startPrism('2026-09-21', ['--errors']), startPrism('dashboard', ['--errors'])]);
});

afterAll(async () => {
  await Promise.all([prism?.stop(), prismDashboard?.stop()]);
});

describe('createContractClient against the Prism mock of 2026-09-21', () => {
  const client = () => createContractClient({ version: '2026-09-21', baseUrl: prism.url, token: token });

  it("reads a row: the spec's example", async () => {
    const { data, error, response } = await client().GET('/v1/contexts/{context_id}/apps/{app_id}/storage', {
      params: { path: ids },
    });
    expect(error).toBeUndefined();
    expect(response.status).toBe(200);
    expect(data).toEqual(example(current, 'ContextRow'));
    expectTypeOf(data).toEqualTypeOf<{ [key: string]: unknown } | undefined>();
  });

  it('serves a named example chosen with Prefer', async () => {
    const { data } = await client().GET('/v1/contexts/{context_id}/apps/{app_id}/storage', {
      params: { path: ids },
      headers: { Prefer: 'example=EmptyRow' },
    });
    expect(data).toEqual({});
  });

  it('returns an error case as a typed Problem (Prefer: code=422)', async () => {
    const { data, error, response } = await client().PATCH('/v1/contexts/{context_id}/apps/{app_id}/storage', {
      params: { path: ids },
      body: { patch: [{ op: 'add', path: '/settings/attempts_allowed', value: 4 }] },
      headers: { Prefer: 'code=422, example=ContextNotProvisioned' },
    });
    expect(data).toBeUndefined();
    expect(response.status).toBe(422);
    expect(error).toEqual(example(current, 'ContextNotProvisioned'));
    expectTypeOf(error).toEqualTypeOf<ContractProblem<'2026-09-21'> | undefined>();
    expectTypeOf(error).toEqualTypeOf<Problem | undefined>();
  });

  it('returns the spec\'s problem for a request that breaks the spec', async () => {
    const { error } = await client().PATCH('/v1/contexts/{context_id}/apps/{app_id}/storage', {
      params: { path: ids },
      // @ts-expect-error the body must be {patch: [...]}
      body: { nope: 1 },
    });
    expect(error?.status).toBe(422);
    expect(error?.detail).toBe('PATCH body must be an object with the single key "patch"');
  });

  it('answers 401 without a credential', async () => {
    const anonymous = createContractClient({ version: '2026-09-21', baseUrl: prism.url });
    const { error } = await anonymous.GET('/v1/contexts/{context_id}/apps/{app_id}/storage', { params: { path: ids } });
    expect(error).toMatchObject({ status: 401, code: 'missing_bearer_token', detail: 'Missing bearer token' });
  });

  it('submits a score and reads the attempt', async () => {
    const { data, error } = await client().POST(
      '/v1/contexts/{context_id}/apps/{app_id}/locations/{location_id}/members/{member_id}/scores',
      { params: { path: scoreIds }, body: { score: 0.85, comment: 'Well argued.' } },
    );
    expect(error).toBeUndefined();
    expect(data).toEqual(example(current, 'AttemptSuccess'));
    if (data) expectTypeOf(data.status).toEqualTypeOf<'success' | 'failed'>();
  });

  it('is typed per contract: archived paths are not in the current client', () => {
    const typed = client();
    // @ts-expect-error removed from the current contract (decision L-07)
    void (() => typed.GET('/v1/apps/me'));
  });

  it('drives the tool helpers against the mock as well', async () => {
    const base = `${prism.url}/v1/contexts/${ids.context_id}/apps/${ids.app_id}`;
    const row = await rows(`${base}/storage`, token, { contractVersion: '2026-09-21' }).get();
    expect(row.data).toEqual(example(current, 'ContextRow'));
    const refused = await submitScore(
      `${prism.url}/v1/contexts/${ids.context_id}/apps/${ids.app_id}/locations/${scoreIds.location_id}/members/${scoreIds.member_id}/scores`,
      token,
      // @ts-expect-error score is required
      { comment: 'no score' },
    );
    expect(!refused.skipped && refused.error?.status).toBe(422);
  });
});

describe('createContractClient for an archived contract', () => {
  it('reads the app of 2026-08-25 with the API key', async () => {
    // The 2026-08-25 spec's own answer for /v1/apps/me, served by a recording server: the request the
    // archived client makes and the typed data it gives back.
    type Operation = { responses: Record<string, { content: Record<string, { examples?: Record<string, { $ref: string }> }> }> };
    const paths = (archived as unknown as { paths: Record<string, { get: Operation }> }).paths;
    const ref = Object.values(paths['/v1/apps/me']!.get.responses['200']!.content['application/json']!.examples ?? {})[0]!.$ref;
    const answer = archived.components.examples[ref.split('/').at(-1)!]!.value;
    const server = await recordingServer((_req, res) => sendJson(res, 200, answer));
    try {
      const client = createContractClient({ version: '2026-08-25', baseUrl: server.url, token: 'ltiaas_app_3f9c2a7d1e5b8h4j6k0m_secret' });
      const { data, error } = await client.GET('/v1/apps/me');
      expect(error).toBeUndefined();
      expect(data).toEqual(answer);
      if (data) expectTypeOf(data.grades_released).toEqualTypeOf<boolean>();
      expect(server.requests.map((r) => [r.method, r.path, r.headers['contract-version'], r.headers.authorization])).toEqual([
        ['GET', '/v1/apps/me', '2026-08-25', 'Bearer ltiaas_app_3f9c2a7d1e5b8h4j6k0m_secret'],
      ]);
    } finally {
      await server.close();
    }
  });

  it('refuses an unknown version at runtime', () => {
    expect(() =>
      createContractClient({ version: '2026-01-01' as ContractVersion, baseUrl: prism.url }),
    ).toThrow(/unknown contract version "2026-01-01"; served versions: 2026-09-21, 2026-08-25, 2026-08-19/);
  });
});

describe('headers and errors on the wire', () => {
  let server: RecordingServer;
  beforeAll(async () => {
    server = await recordingServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it('sends Contract-Version and the bearer credential; a credential function is asked on every call', async () => {
    server.handle((_req, res) => sendJson(res, 200, {}));
    let calls = 0;
    const client = createContractClient({
      version: '2026-08-25',
      baseUrl: `${server.url}/`,
      token: async () => `token-${++calls}`,
    });
    await client.GET('/v1/contexts/{context_id}/apps/{app_id}/storage', { params: { path: ids } });
    await client.GET('/v1/contexts/{context_id}/apps/{app_id}/storage', { params: { path: ids } });
    expect(server.requests.map((r) => [r.path, r.headers['contract-version'], r.headers.authorization])).toEqual([
      [`/v1/contexts/${ids.context_id}/apps/${ids.app_id}/storage`, '2026-08-25', 'Bearer token-1'],
      [`/v1/contexts/${ids.context_id}/apps/${ids.app_id}/storage`, '2026-08-25', 'Bearer token-2'],
    ]);
  });

  it('sends the dashboard token and no Contract-Version', async () => {
    server.requests.length = 0;
    server.handle((_req, res) => sendJson(res, 200, { kind: 'platform' }));
    await createDashboardClient({ baseUrl: server.url, token: 'tisp_x' }).GET('/dashboard/v1/me');
    expect(server.requests[0]!.headers.authorization).toBe('Bearer tisp_x');
    expect(server.requests[0]!.headers['contract-version']).toBeUndefined();
  });

  it('turns an error body that is not the envelope into a Problem', async () => {
    server.handle((_req, res) => void res.writeHead(503, { 'Content-Type': 'text/plain' }).end('upstream down'));
    const client = createContractClient({ version: '2026-09-21', baseUrl: server.url, token: token });
    const { error } = await client.GET('/v1/contexts/{context_id}/apps/{app_id}/storage', { params: { path: ids } });
    expect(error).toEqual({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'upstream down', code: 'unexpected_response' });

    server.handle((_req, res) => sendJson(res, 401, { error: 'invalid_client', error_description: 'client assertion rejected' }));
    const dash = await createDashboardClient({ baseUrl: server.url }).GET('/dashboard/v1/me');
    expect(dash.error).toMatchObject({ status: 401, code: 'unexpected_response', detail: 'client assertion rejected' });
  });

  it('passes the service envelope through untouched', async () => {
    const envelope = { type: 'about:blank', title: 'Not Found', status: 404, detail: 'row not found', code: 'row_not_found', request_id: 'req_1' };
    server.handle((_req, res) => sendJson(res, 404, envelope, 'application/problem+json'));
    const client = createContractClient({ version: '2026-09-21', baseUrl: server.url, token: token });
    const { error, response } = await client.GET('/v1/contexts/{context_id}/apps/{app_id}/storage', { params: { path: ids } });
    expect(error).toEqual(envelope);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
  });
});
