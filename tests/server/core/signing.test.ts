/**
 * Keys and rotation (NS-12, NS-13): the first key is made on first start and shared through the store;
 * a rotated-in key is published before it signs; an old key stays published until its tokens expire.
 */
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Signer } from '../../../server/signing/signer.js';
import { freshStore, ManualClock } from '../../store/helpers.js';
import type { TestServer } from '../harness.js';
import { startServer } from '../harness.js';

describe('Signer', () => {
  let clock: ManualClock;
  let ctx: Awaited<ReturnType<typeof freshStore>>;
  beforeEach(async () => {
    clock = new ManualClock();
    ctx = await freshStore({ clock });
  });
  afterEach(async () => ctx.done());

  const kidOf = (token: string): string => String(decodeProtectedHeader(token).kid);

  it('creates one 2048-bit RS256 key on first start and reuses it on the next', async () => {
    const a = new Signer(ctx.store, { clock });
    const first = await a.init();
    const b = new Signer(ctx.store, { clock });
    expect((await b.init()).kid).toBe(first.kid);
    const jwks = await a.jwks();
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', kid: first.kid, e: 'AQAB' });
    expect(Buffer.from(jwks.keys[0]!.n, 'base64url').length * 8).toBe(2048);
    expect(Object.keys(jwks.keys[0]!).sort()).toEqual(['alg', 'e', 'kid', 'kty', 'n', 'use']);
  });

  it('signs with the kid in the header, verifiable against its JWKS', async () => {
    const signer = new Signer(ctx.store, { clock });
    await signer.init();
    const token = await signer.sign({ iss: 'https://tis.example.edu', aud: 'app_x', iat: Math.floor(clock.nowMs() / 1000) });
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'RS256', typ: 'JWT' });
    const { payload } = await jwtVerify(token, createLocalJWKSet(await signer.jwks()), {
      currentDate: new Date(clock.nowMs()),
    });
    expect(payload['aud']).toBe('app_x');
  });

  it('rotation: publish first, sign after the delay, keep the old key until its tokens expired', async () => {
    const signer = new Signer(ctx.store, { clock, publishDelayMs: 600_000, maxTokenLifetimeMs: 300_000, clockSkewMs: 60_000 });
    const old = await signer.init();
    const beforeRotation = await signer.sign({ n: 1 });
    const rotated = await signer.rotate();
    expect(rotated.signFrom).toBe(clock.nowMs() + 600_000);
    expect(rotated.publishOldUntil).toBe(rotated.signFrom + 360_000);

    // Published at once, not yet signing.
    expect((await signer.jwks()).keys.map((k) => k.kid)).toEqual([old.kid, rotated.kid]);
    expect(kidOf(await signer.sign({ n: 2 }))).toBe(old.kid);

    clock.advance(600_000);
    const afterSwitch = await signer.sign({ n: 3 });
    expect(kidOf(afterSwitch)).toBe(rotated.kid);
    // The last token of the old key is still verifiable until it has expired.
    const set = createLocalJWKSet(await signer.jwks());
    await expect(jwtVerify(beforeRotation, set)).resolves.toBeTruthy();

    clock.advance(360_000);
    expect((await signer.jwks()).keys.map((k) => k.kid)).toEqual([rotated.kid]);
  });

  it('every instance follows a rotation made by another (keys live in the store)', async () => {
    const a = new Signer(ctx.store, { clock, publishDelayMs: 1000 });
    const b = new Signer(ctx.store, { clock });
    await a.init();
    const { kid } = await a.rotate();
    clock.advance(1000);
    expect(kidOf(await b.sign({}))).toBe(kid);
  });
});

describe('GET /.well-known/jwks.json', () => {
  let server: TestServer;
  beforeEach(async () => {
    server = await startServer();
  });
  afterAll(async () => server?.stop());
  afterEach(async () => server?.stop());

  it('serves the key set, cacheable for 300 s, without a credential', async () => {
    const res = await fetch(`${server.url}/.well-known/jwks.json`, { headers: { Authorization: 'Bearer nonsense' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=300');
    const body = (await res.json()) as { keys: Array<{ kid: string }> };
    expect(body.keys.length).toBeGreaterThanOrEqual(1);
    const token = await server.services.signer.sign({ hello: 'tools' });
    await expect(jwtVerify(token, createLocalJWKSet(body as never))).resolves.toBeTruthy();
  });
});
