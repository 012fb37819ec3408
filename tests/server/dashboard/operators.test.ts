/**
 * Named operators and the audit log over real HTTP (decisions OPS-02, OPS-03): the bootstrap token creates
 * an operator, the operator's own token has the platform team's rights, every platform action is logged
 * with who, what and when, and a revoked operator's token stops at once while the log keeps its name.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../harness.js';
import { startServer } from '../harness.js';
import { sha256Hex } from '../../../server/store/ids.js';
import type { Caller } from './helpers.js';
import { caller, createBuilder, expectProblem, platformToken, register } from './helpers.js';

let server: TestServer;
let bootstrap: Caller;

interface Entry {
  id: string;
  at: string;
  actor: { kind: string; id: string | null; name: string };
  action: string;
  target: string | null;
  detail: Record<string, unknown>;
}

beforeAll(async () => {
  server = await startServer();
  bootstrap = caller(server, platformToken(server));
});
afterAll(async () => {
  await server?.stop();
});

describe('operators', () => {
  it('the bootstrap token creates a named operator whose token acts as the platform team, under its name', async () => {
    const created = await bootstrap<{ operator: Record<string, unknown>; token: string }>('POST', '/operators', {
      name: 'Kofi Mensah',
      email: `Kofi.${Date.now()}@northwind.example`,
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    // An operator's own prefixes, not a builder's (OPS-51).
    expect(created.body.token).toMatch(/^tiso_[A-Za-z0-9_-]{43}$/);
    expect(created.body.operator).toMatchObject({ name: 'Kofi Mensah', revoked: null, token_hint: `tiso_...${created.body.token.slice(-4)}` });
    expect(created.body.operator['id']).toMatch(/^opr_[a-z0-9]{20,}$/);
    const operatorId = String(created.body.operator['id']);
    const kofi = caller(server, created.body.token);

    // The operator has the platform team's rights: identity, builders, activation.
    expect((await kofi('GET', '/me')).body).toEqual({ kind: 'platform', builder: null });
    const builder = await createBuilder(server, kofi, 'Ana Ruiz');
    const { appId } = await register(builder);
    expect((await kofi('POST', `/apps/${appId}/activate`)).status).toBe(200);
    expect((await bootstrap('POST', `/apps/${appId}/suspend`)).status).toBe(200);
    expect((await builder.call('POST', `/apps/${appId}/rotate-key`)).status).toBe(200);

    // Who, what, when: newest first.
    const log = await kofi<{ entries: Entry[]; next_cursor: string | null }>('GET', `/audit-log?app_id=${appId}`);
    expect(log.status).toBe(200);
    expect(log.body.entries.map((e) => [e.action, e.actor.kind, e.actor.name])).toEqual([
      ['app.rotate_key', 'builder', 'Ana Ruiz'],
      ['app.suspend', 'platform_token', 'platform token'],
      ['app.activate', 'operator', 'Kofi Mensah'],
      ['app.register', 'builder', 'Ana Ruiz'],
    ]);
    expect(log.body.entries[2]).toMatchObject({ target: appId, actor: { id: operatorId }, client_address: '127.0.0.1', detail: { previous: 'draft' } });
    expect(Date.parse(log.body.entries[0]?.at ?? '')).toBeGreaterThan(Date.now() - 60_000);
    // Nothing secret is logged: the new key's hint only.
    expect(JSON.stringify(log.body)).not.toMatch(/ltiaas_app_[^.]+_[A-Za-z0-9_-]{20,}/);

    const all = await bootstrap<{ entries: Entry[] }>('GET', '/audit-log?limit=100');
    expect(all.body.entries.find((e) => e.action === 'operator.create' && e.target === operatorId)?.actor.kind).toBe('platform_token');
    expect(all.body.entries.find((e) => e.action === 'builder.create' && e.target === builder.id)?.actor).toEqual({ kind: 'operator', id: operatorId, name: 'Kofi Mensah' });

    // Revoked: the token stops at once; the operator stays listed and named in the log.
    expect((await bootstrap('DELETE', `/operators/${operatorId}`)).status).toBe(204);
    expectProblem(await kofi('GET', '/me'), 401, 'invalid_bearer_token', 'Invalid bearer token');
    expect((await bootstrap('DELETE', `/operators/${operatorId}`)).status).toBe(204);
    const listed = await bootstrap<{ operators: Array<{ id: string; revoked: string | null }> }>('GET', '/operators');
    expect(listed.body.operators.find((o) => o.id === operatorId)?.revoked).toMatch(/^\d{4}-\d\d-\d\dT/);
    const revocations = (await bootstrap<{ entries: Entry[] }>('GET', '/audit-log?limit=100')).body.entries.filter((e) => e.action === 'operator.revoke');
    expect(revocations).toHaveLength(1);
    expect(revocations[0]).toMatchObject({ target: operatorId, detail: { name: 'Kofi Mensah' } });
  });

  it('an operator made before OPS-51 keeps its bld_ ID and tisb_ token: both still work', async () => {
    // The row as the service wrote it before operators had their own prefixes.
    const token = `tisb_${randomBytes(32).toString('base64url')}`;
    const id = `bld_legacyoperator${Date.now()}`;
    await server.services.store.driver.run(
      `INSERT INTO builders (id, name, email, role, token_hash, token_hint, created_at, updated_at) VALUES (?, ?, ?, 'platform', ?, ?, ?, ?)`,
      [id, 'Old Ops', `old.${Date.now()}@northwind.example`, sha256Hex(token), `tisb_...${token.slice(-4)}`, Date.now(), Date.now()],
    );
    const old = caller(server, token);
    expect((await old('GET', '/me')).body).toEqual({ kind: 'platform', builder: null });
    const listed = await old<{ operators: Array<{ id: string; token_hint: string }> }>('GET', '/operators');
    expect(listed.body.operators.find((o) => o.id === id)?.token_hint).toBe(`tisb_...${token.slice(-4)}`);
    expect((await bootstrap('DELETE', `/operators/${id}`)).status).toBe(204);
    expectProblem(await old('GET', '/me'), 401, 'invalid_bearer_token');
  });

  it('pages the audit log by cursor with no entry twice', async () => {
    const builder = await createBuilder(server, bootstrap, 'Pager');
    const { appId } = await register(builder);
    for (let i = 0; i < 5; i += 1) await builder.call('PATCH', `/apps/${appId}`, { name: `Quiz ${i}` });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { entries: Entry[]; next_cursor: string | null } } = await bootstrap('GET', `/audit-log?app_id=${appId}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.body.entries.map((e) => e.id));
      cursor = page.body.next_cursor;
    } while (cursor !== null);
    expect(seen).toHaveLength(6);
    expect(new Set(seen).size).toBe(6);
    expectProblem(await bootstrap('GET', `/audit-log?cursor=${'x'.repeat(20)}`), 400, 'invalid_cursor', 'cursor is not valid for this list');
  });

  it('refuses builders, unknown operators, duplicates and bad bodies with the API words', async () => {
    const builder = await createBuilder(server, bootstrap, 'Not Ops');
    expectProblem(await builder.call('GET', '/audit-log'), 403, 'platform_only');
    expectProblem(await builder.call('POST', '/operators', { name: 'x', email: 'x@northwind.example' }), 403, 'platform_only');
    expectProblem(await bootstrap('DELETE', '/operators/bld_nobody'), 404, 'operator_not_found', 'no operator bld_nobody');
    // A builder is not an operator: revoking one by ID answers 404 and its token keeps working.
    expectProblem(await bootstrap('DELETE', `/operators/${builder.id}`), 404, 'operator_not_found');
    expect((await builder.call('GET', '/me')).status).toBe(200);
    expectProblem(await bootstrap('POST', '/operators', { name: 'Dup', email: builder.email }), 409, 'builder_email_taken', `a builder with the email ${builder.email} already exists`);
    const email = `ops.${Date.now()}@northwind.example`;
    expect((await bootstrap('POST', '/operators', { name: 'Ops', email })).status).toBe(201);
    expectProblem(await bootstrap('POST', '/operators', { name: 'Ops 2', email }), 409, 'operator_email_taken', `an operator with the email ${email} already exists`);
    expectProblem(await bootstrap('POST', '/builders', { name: 'Ops 3', email }), 409, 'operator_email_taken', `an operator with the email ${email} already exists`);
    // A builder's token is not an operator's: the same secret under the operator prefix is refused.
    expectProblem(await caller(server, builder.token.replace(/^tisb_/, 'tiso_'))('GET', '/me'), 401, 'invalid_bearer_token');
    expectProblem(await bootstrap('POST', '/operators', { email: 'a@northwind.example' }), 422, 'field_required', 'name is required');
    expectProblem(await bootstrap('POST', '/operators', { name: 'A', email: 'nope' }), 422, 'invalid_email', 'email must be an email address');
    expectProblem(await bootstrap('POST', '/operators', { name: 'A', email: 'a@b.example', role: 'x' }), 422, 'unknown_field', 'unknown field: role');
    expectProblem(await bootstrap('GET', '/audit-log?app_id=%20'), 400, 'invalid_query');
  });
});
