/**
 * The pipeline's own behaviour with handlers swapped in: an unexpected exception is a logged 500 with
 * the request id and no internals; a response that breaks the spec is caught by response validation.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { contract20260921, handlers } from '../../../server/contracts/2026-09-21/index.js';
import type { ContractDefinition } from '../../../server/http/pipeline.js';
import type { TestServer } from '../harness.js';
import { problemOf, startServer } from '../harness.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

function withHandler(id: string, handler: unknown): ContractDefinition {
  return { ...contract20260921, handlers: { ...handlers, [id]: handler } };
}

describe('unexpected failures', () => {
  it('an exception is answered 500 `internal error` and logged with the request id', async () => {
    server = await startServer({
      contracts: [withHandler('getPublicKeys', async () => {
        throw new Error('secret internals');
      })],
    });
    const res = await fetch(`${server.url}/.well-known/jwks.json`);
    const p = await problemOf(res);
    expect(p).toMatchObject({ status: 500, code: 'internal_error', detail: 'internal error' });
    expect(JSON.stringify(p.body)).not.toContain('secret internals');
    const id = res.headers.get('request-id');
    const logged = server.logs.find((l) => l['level'] === 'error' && l['request_id'] === id);
    expect(logged?.['msg']).toBe('unexpected error');
    expect(JSON.stringify(logged)).toContain('secret internals');
  });

  it('a response that does not match the spec is a 500, not a silent contract break', async () => {
    server = await startServer({
      contracts: [withHandler('getPublicKeys', async () => ({ status: 200, body: { keys: 'not a list' } }))],
    });
    const res = await fetch(`${server.url}/.well-known/jwks.json`);
    expect(res.status).toBe(500);
    expect(server.logs.some((l) => l['level'] === 'error' && l['request_id'] === res.headers.get('request-id'))).toBe(true);
  });

  it('a handler that is slow still answers while others are served', async () => {
    server = await startServer({
      contracts: [withHandler('getPublicKeys', async () => {
        await new Promise((r) => setTimeout(r, 200));
        return { status: 200, body: { keys: [] } };
      })],
      config: { responseValidation: false },
    });
    const slow = fetch(`${server.url}/.well-known/jwks.json`);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect((await slow).status).toBe(200);
  });
});
