/**
 * One validator per contract, and no mixing of components between them in one process
 * (express-openapi-validator issue #881: with several specs, response validation used the first spec's
 * components). Both archived specs name a component `GradeRecord`, with different fields: `max_score` is
 * required in 2026-08-25 and not allowed in 2026-08-19. A handler answering the same body under both
 * contracts must be accepted by exactly the spec whose record it is, whichever contract was loaded first.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contract20260819 } from '../../../server/contracts/2026-08-19/index.js';
import { contract20260825 } from '../../../server/contracts/2026-08-25/index.js';
import { contract20260921 } from '../../../server/contracts/2026-09-21/index.js';
import type { ContractDefinition } from '../../../server/http/pipeline.js';
import type { TestServer } from '../harness.js';
import { startServer } from '../harness.js';
import { call, pinnedTool } from './helpers.js';

const record = {
  grade_id: 'grd_fixed0000000000000000',
  launch_id: 'lch_fixed0000000000000000',
  score: 0.5,
  sync_status: 'synced',
  sync_error: null,
  submitted_at: '2026-09-01T10:00:00.000000Z',
  synced_at: '2026-09-01T10:00:00.100000Z',
};

/** The real contract with `getGrade` answering the record shape the request's `X-Shape` asks for. */
function withFixedGrade(contract: ContractDefinition): ContractDefinition {
  return {
    ...contract,
    handlers: {
      ...contract.handlers,
      getGrade: async (ctx: { headers: Record<string, unknown> }) => ({
        status: 200,
        body: ctx.headers['x-shape'] === '2026-08-25' ? { ...record, max_score: 40 } : record,
      }),
    },
  };
}

async function grade(server: TestServer, auth: string, contract: string, shape: string): Promise<number> {
  const res = await fetch(`${server.url}/v1/grades/grd_fixed0000000000000000`, {
    headers: { Authorization: auth, 'Contract-Version': contract, 'X-Shape': shape },
  });
  await res.arrayBuffer();
  expect(res.headers.get('contract-version')).toBe(contract);
  return res.status;
}

describe.each([
  ['2026-08-19 loaded first', [contract20260921, contract20260819, contract20260825]],
  ['2026-08-25 loaded first', [contract20260921, contract20260825, contract20260819]],
] as const)('response validation with %s', (_name, order) => {
  let server: TestServer;
  let auth: string;

  beforeAll(async () => {
    server = await startServer({ contracts: order.map(withFixedGrade) });
    auth = (await pinnedTool(server, '2026-08-25')).auth;
  });

  afterAll(async () => {
    await server?.stop();
  });

  it('each contract judges the response by its own GradeRecord, requests interleaved', async () => {
    for (let round = 0; round < 2; round += 1) {
      expect(await grade(server, auth, '2026-08-25', '2026-08-25')).toBe(200);
      // The 2026-08-19 record lacks the required max_score of 2026-08-25: a 500 from response validation.
      expect(await grade(server, auth, '2026-08-25', '2026-08-19')).toBe(500);
      expect(await grade(server, auth, '2026-08-19', '2026-08-19')).toBe(200);
      // And max_score is an additional property to 2026-08-19's record.
      expect(await grade(server, auth, '2026-08-19', '2026-08-25')).toBe(500);
    }
    // The 500s are the response validator's refusals, logged as such.
    const refusals = server.logs
      .filter((l) => l['level'] === 'error')
      .map((l) => (l['err'] as { message?: string } | undefined)?.message)
      .filter((m) => m !== undefined && m.startsWith('/response'));
    expect(refusals.filter((m) => m === "/response must have required property 'max_score'").length).toBeGreaterThanOrEqual(2);
    expect(refusals.filter((m) => m === '/response must NOT have additional properties').length).toBeGreaterThanOrEqual(2);
  });

  it('each contract judges requests by its own schemas too', async () => {
    // max_score is a field of 2026-08-25's GradeSubmission and unknown to 2026-08-19's.
    const body = { launch_id: 'lch_nosuch0000000000000000', score: 0.5, max_score: 10 };
    const as0825 = await call('POST', `${server.url}/v1/grades`, { auth, body, version: '2026-08-25' });
    expect(as0825.status).toBe(404);
    expect(as0825.body['detail']).toBe('Launch not found');
    const as0819 = await call('POST', `${server.url}/v1/grades`, { auth, body, version: '2026-08-19' });
    expect(as0819.status).toBe(422);
    expect(as0819.body['detail']).toBe('unknown field: max_score');
  });
});
