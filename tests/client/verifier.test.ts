import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { SignJWT } from 'jose';
import {
  createTokenVerifier,
  MemoryReplayCache,
  TokenError,
  type LaunchClaims,
  type ContractVersion,
  type ProvisionClaims,
  type ReplayStore,
  type TokenVerifierOptions,
} from '../../client/tool/index.js';
import { exampleClaims, fakeService, sign, signingKey, type FakeService, type SigningKey } from './support.js';

const appId = 'app_3f9c2a7d1e5b8h4j6k0m';

let keyA: SigningKey;
let keyB: SigningKey;
let service: FakeService;

beforeAll(async () => {
  [keyA, keyB] = await Promise.all([signingKey('key-a'), signingKey('key-b')]);
  service = await fakeService(keyA);
});

afterAll(async () => {
  await service?.close();
});

function verifier<V extends ContractVersion = '2026-09-21'>(options: Partial<TokenVerifierOptions<V>> = {}) {
  return createTokenVerifier<V>({ issuer: service.origin, appId, ...options });
}

const launch = (overrides: Record<string, unknown> = {}) => ({
  ...exampleClaims('LaunchClaims', { issuer: service.origin, appId }),
  ...overrides,
});

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

describe('createTokenVerifier', () => {
  it('accepts a launch token signed with a published key and returns the typed claims', async () => {
    const claims = launch();
    const { claims: verified, error } = await verifier().verifyLaunch(await sign(claims, keyA));
    expect(error).toBeUndefined();
    expect(verified).toEqual(claims);
    expectTypeOf(verified).toEqualTypeOf<LaunchClaims<'2026-09-21'> | undefined>();
    if (verified) {
      expectTypeOf(verified.grade.submit).toEqualTypeOf<string | null>();
      expectTypeOf(verified.user.groups).toEqualTypeOf<('student' | 'instructor' | 'assistant' | 'manager')[]>();
    }
  });

  it('accepts provision and locations tokens on their own methods', async () => {
    const v = verifier();
    const provision = exampleClaims('ProvisionClaims', { issuer: service.origin, appId, index: 1 });
    const p = await v.verifyProvision(await sign(provision, keyA));
    expect(p.error).toBeUndefined();
    expect(p.claims?.storage.parent_context).toBe((provision.storage as Record<string, unknown>).parent_context);
    expectTypeOf(p.claims).toEqualTypeOf<ProvisionClaims | undefined>();
    const locations = exampleClaims('LocationsClaims', { issuer: service.origin, appId });
    const l = await v.verifyLocations(await sign(locations, keyA));
    expect(l.error).toBeUndefined();
    expect(l.claims?.api.token).toBeNull();
  });

  it('refuses a token of another kind on each endpoint', async () => {
    const v = verifier();
    const provision = await sign(exampleClaims('ProvisionClaims', { issuer: service.origin, appId }), keyA);
    const locations = await sign(exampleClaims('LocationsClaims', { issuer: service.origin, appId }), keyA);
    const launchToken = await sign(launch(), keyA);
    expect((await v.verifyLaunch(provision)).error?.code).toBe('wrong_token_kind');
    expect((await v.verifyLaunch(locations)).error?.code).toBe('wrong_token_kind');
    expect((await v.verifyProvision(launchToken)).error?.code).toBe('wrong_token_kind');
    expect((await v.verifyLocations(launchToken)).error?.code).toBe('wrong_token_kind');
    // A refused token does not use up its jti.
    expect((await v.verifyLaunch(launchToken)).error).toBeUndefined();
  });

  it('refuses HS256, including an HMAC keyed with the public key, and alg none, without fetching keys', async () => {
    const fresh = await fakeService(keyA);
    try {
      const v = createTokenVerifier({ issuer: fresh.origin, appId });
      const claims = exampleClaims('LaunchClaims', { issuer: fresh.origin, appId });
      const hs256 = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256', kid: keyA.kid, typ: 'JWT' })
        .sign(new TextEncoder().encode('a-shared-secret-of-sufficient-length!'));
      const input = `${base64url({ alg: 'HS256', kid: keyA.kid, typ: 'JWT' })}.${base64url(claims)}`;
      const confused = `${input}.${createHmac('sha256', JSON.stringify(keyA.publicJwk)).update(input).digest('base64url')}`;
      const none = `${base64url({ alg: 'none', kid: keyA.kid, typ: 'JWT' })}.${base64url(claims)}.`;
      for (const token of [hs256, confused, none]) {
        const { error } = await v.verifyLaunch(token);
        expect(error).toBeInstanceOf(TokenError);
        expect(error?.code).toBe('algorithm_not_allowed');
        expect(error?.status).toBe(401);
      }
      expect(fresh.jwksFetches()).toBe(0);
    } finally {
      await fresh.close();
    }
  });

  it.each([
    ['wrong_issuer', { iss: 'https://other.example.edu' }],
    ['wrong_audience', { aud: 'app_someoneelse000000000' }],
    ['wrong_app', { app: 'app_someoneelse000000000' }],
    ['expired', { iat: Math.floor(Date.now() / 1000) - 900, exp: Math.floor(Date.now() / 1000) - 600 }],
    ['not_yet_valid', { iat: Math.floor(Date.now() / 1000) + 600, exp: Math.floor(Date.now() / 1000) + 900 }],
    ['missing_claim', { jti: undefined }],
  ])('refuses %s', async (code, overrides) => {
    const { claims, error } = await verifier().verifyLaunch(await sign(launch(overrides), keyA));
    expect(claims).toBeUndefined();
    expect(error?.code).toBe(code);
    expect(error?.status).toBe(401);
  });

  it('refuses a replayed jti, and keeps the jti in a pluggable store until the token expires', async () => {
    const remembered: [string, number][] = [];
    const seen = new Set<string>();
    const store: ReplayStore = {
      async remember(jti, expiresAt) {
        remembered.push([jti, expiresAt]);
        if (seen.has(jti)) return false;
        seen.add(jti);
        return true;
      },
    };
    const v = verifier({ replayCache: store });
    const claims = launch();
    const token = await sign(claims, keyA);
    expect((await v.verifyLaunch(token)).error).toBeUndefined();
    const again = await v.verifyLaunch(token);
    expect(again.error?.code).toBe('replayed');
    expect(remembered).toEqual([
      [claims.jti, claims.exp],
      [claims.jti, claims.exp],
    ]);
    // The default in-memory cache refuses the replay too.
    const inMemory = verifier();
    const other = await sign(launch(), keyA);
    expect((await inMemory.verifyLaunch(other)).error).toBeUndefined();
    expect((await inMemory.verifyLaunch(other)).error?.code).toBe('replayed');
  });

  it('refetches the JWKS once for an unknown kid and then accepts a token of the rotated key', async () => {
    const rotating = await fakeService(keyA);
    try {
      const v = createTokenVerifier({ issuer: rotating.origin, appId, jwks: { cooldownMs: 0 } });
      const claimsFor = () => exampleClaims('LaunchClaims', { issuer: rotating.origin, appId });
      expect((await v.verifyLaunch(await sign(claimsFor(), keyA))).error).toBeUndefined();
      expect(rotating.jwksFetches()).toBe(1);
      // The service publishes its new key before it signs with it (decision NS-13).
      rotating.publish(keyA, keyB);
      expect((await v.verifyLaunch(await sign(claimsFor(), keyB))).error).toBeUndefined();
      expect(rotating.jwksFetches()).toBe(2);
      expect((await v.verifyLaunch(await sign(claimsFor(), keyB))).error).toBeUndefined();
      expect((await v.verifyLaunch(await sign(claimsFor(), keyA))).error).toBeUndefined();
      expect(rotating.jwksFetches()).toBe(2);
      // A kid the service never published: one more fetch, then a refusal.
      const stranger = await signingKey('key-unpublished');
      const { error } = await v.verifyLaunch(await sign(claimsFor(), stranger));
      expect(error?.code).toBe('unknown_key');
      expect(rotating.jwksFetches()).toBe(3);
    } finally {
      await rotating.close();
    }
  });

  it('does not refetch for unknown kids within the cooldown, so strangers cannot flood the JWKS', async () => {
    const guarded = await fakeService(keyA);
    try {
      const v = createTokenVerifier({ issuer: guarded.origin, appId });
      const claimsFor = () => exampleClaims('LaunchClaims', { issuer: guarded.origin, appId });
      expect((await v.verifyLaunch(await sign(claimsFor(), keyA))).error).toBeUndefined();
      const stranger = await signingKey();
      for (let i = 0; i < 5; i += 1) {
        expect((await v.verifyLaunch(await sign(claimsFor(), stranger))).error?.code).toBe('unknown_key');
      }
      expect(guarded.jwksFetches()).toBe(1);
    } finally {
      await guarded.close();
    }
  });

  it('refuses a signature made with another key under a published kid', async () => {
    const forger = await signingKey(keyA.kid);
    const { error } = await verifier().verifyLaunch(await sign(launch(), forger));
    expect(error?.code).toBe('invalid_signature');
  });

  it('refuses malformed tokens: garbage, no kid, another typ, nothing at all', async () => {
    const v = verifier();
    expect((await v.verifyLaunch('not.a.jwt')).error?.code).toBe('malformed');
    expect((await v.verifyLaunch(await sign(launch(), keyA, { kid: null }))).error?.code).toBe('malformed');
    expect((await v.verifyLaunch(await sign(launch(), keyA, { typ: 'at+jwt' }))).error?.code).toBe('malformed');
    expect((await v.verifyLaunch(undefined)).error?.code).toBe('missing_token');
    expect((await v.verifyLaunch('')).error?.code).toBe('missing_token');
  });

  it('answers jwks_unavailable (503) when the keys cannot be fetched', async () => {
    const gone = await fakeService(keyA);
    const origin = gone.origin;
    await gone.close();
    const v = createTokenVerifier({ issuer: origin, appId, jwks: { timeoutMs: 2000 } });
    const { error } = await v.verifyLaunch(await sign(exampleClaims('LaunchClaims', { issuer: origin, appId }), keyA));
    expect(error?.code).toBe('jwks_unavailable');
    expect(error?.status).toBe(503);
  });

  it('types and verifies the claims of an archived contract', async () => {
    const v0825 = verifier({ contractVersion: '2026-08-25' });
    const claims = exampleClaims('LaunchClaims', { issuer: service.origin, appId, version: '2026-08-25' });
    const { claims: verified } = await v0825.verifyLaunch(await sign(claims, keyA));
    expect(verified?.grade_passback).toBe(claims.grade_passback);
    expectTypeOf(v0825.verifyLaunch).returns.resolves.toHaveProperty('claims');
    const v0819 = createTokenVerifier({ issuer: service.origin, appId, contractVersion: '2026-08-19' });
    expect('verifyProvision' in v0819).toBe(false);
    // @ts-expect-error 2026-08-19 sends no provision requests
    void v0819.verifyProvision;
    const old = exampleClaims('LaunchClaims', { issuer: service.origin, appId, version: '2026-08-19' });
    const result = await v0819.verifyLaunch(await sign(old, keyA));
    expect(result.error).toBeUndefined();
    expect(result.claims?.resource_link_id).toBe(old.resource_link_id);
  });

  it('checks its options', () => {
    expect(() => createTokenVerifier({ issuer: 'tis.example.edu', appId })).toThrow(TypeError);
    expect(() => createTokenVerifier({ issuer: 'https://tis.example.edu', appId: '' })).toThrow(TypeError);
    // @ts-expect-error not a contract version
    expect(() => createTokenVerifier({ issuer: 'https://tis.example.edu', appId, contractVersion: '2026-01-01' })).toThrow(RangeError);
  });
});

describe('MemoryReplayCache', () => {
  it('keeps a jti until its exp and forgets it afterwards', () => {
    let now = 1_000_000_000_000;
    const cache = new MemoryReplayCache({ now: () => now });
    const exp = now / 1000 + 300;
    expect(cache.remember('a', exp)).toBe(true);
    expect(cache.remember('a', exp)).toBe(false);
    now += 299_000;
    expect(cache.remember('a', exp)).toBe(false);
    now += 2_000;
    expect(cache.remember('a', exp + 301)).toBe(true);
  });

  it('drops expired entries first, then the least recently seen, past maxEntries', () => {
    let now = 1_000_000_000_000;
    const cache = new MemoryReplayCache({ maxEntries: 3, now: () => now });
    const t = now / 1000;
    cache.remember('old', t + 10);
    cache.remember('b', t + 300);
    cache.remember('c', t + 300);
    now += 20_000;
    cache.remember('d', t + 300);
    expect(cache.size).toBe(3);
    expect(cache.remember('b', t + 300)).toBe(false);
    cache.remember('e', t + 300);
    // 'c' was the least recently seen live entry ('b' was just seen again).
    expect(cache.remember('b', t + 300)).toBe(false);
    expect(cache.remember('c', t + 300)).toBe(true);
    expect(cache.size).toBe(3);
  });
});
