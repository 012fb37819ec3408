import { describe, expect, it } from 'vitest';
import { digestsEqual, sha256Hex } from '../../server/store/ids.js';
import { NoApiKeyError, apiKeyHint } from '../../server/store/index.js';
import { ManualClock, STORE_TARGETS } from './helpers.js';

describe.each(STORE_TARGETS)('apps ($name)', (target) => {
  it('registers a self-hosted tool in draft with a key shown once and stored only as a digest', async () => {
    const { store, done } = await target.fresh();
    try {
      const { app, apiKey } = await store.apps.create({ name: 'Quizzer', hosting: 'self_hosted', description: 'Quizzes' });
      expect(app.id).toMatch(/^app_[a-z2-7]{26}$/);
      expect(app).toMatchObject({
        name: 'Quizzer',
        description: 'Quizzes',
        status: 'draft',
        hosting: 'self_hosted',
        contractVersion: '2026-09-21',
        gradesReleased: true,
        callbackUrl: null,
      });
      expect(apiKey).toMatch(new RegExp(`^ltiaas_${app.id}_[A-Za-z0-9_-]{43}$`));
      // 43 base64url characters carry 258 bits; at least 256 come from randomness.
      expect(Buffer.from(apiKey!.slice(-43), 'base64url').length).toBe(32);
      expect(app.apiKeyHint).toBe(`ltiaas_...${apiKey!.slice(-4)}`);
      expect(app.apiKeyHint).toBe(apiKeyHint(apiKey!));
      const stored = await store.driver.get<Record<string, unknown>>('SELECT * FROM apps WHERE id = ?', [app.id]);
      expect(JSON.stringify(stored)).not.toContain(apiKey!.slice(-43));
      expect(stored?.['api_key_hash']).toMatch(/^[0-9a-f]{64}$/);
    } finally {
      await done();
    }
  });

  it('verifies the key, refuses near misses, and refuses the old key at once after rotation', async () => {
    const { store, done } = await target.fresh();
    try {
      const { app, apiKey } = await store.apps.create({ name: 'Quizzer', hosting: 'self_hosted' });
      const key = apiKey!;
      expect((await store.apps.verifyApiKey(key))?.id).toBe(app.id);

      const lastChar = key.at(-1) === 'A' ? 'B' : 'A';
      expect(await store.apps.verifyApiKey(key.slice(0, -1) + lastChar)).toBeNull(); // same length, wrong secret
      expect(await store.apps.verifyApiKey(key + 'x')).toBeNull();
      expect(await store.apps.verifyApiKey('ltiaas_app_aaaaaaaaaaaaaaaaaaaaaaaaaa_' + key.slice(-43))).toBeNull();
      expect(await store.apps.verifyApiKey('')).toBeNull();

      const other = await store.apps.create({ name: 'Other', hosting: 'self_hosted' });
      // Another tool's secret under this tool's ID is not this tool's key.
      expect(await store.apps.verifyApiKey(`ltiaas_${app.id}_${other.apiKey!.slice(-43)}`)).toBeNull();

      const rotated = await store.apps.rotateApiKey(app.id);
      expect(rotated).not.toBeNull();
      expect(rotated!.apiKey).not.toBe(key);
      expect(rotated!.apiKeyHint).toBe(`ltiaas_...${rotated!.apiKey.slice(-4)}`);
      expect(rotated!.app.apiKeyHint).toBe(rotated!.apiKeyHint);
      expect(await store.apps.verifyApiKey(key)).toBeNull();
      expect((await store.apps.verifyApiKey(rotated!.apiKey))?.id).toBe(app.id);
      expect(await store.apps.rotateApiKey('app_unknown')).toBeNull();
    } finally {
      await done();
    }
  });

  it('gives hosted tools no key and refuses to rotate one', async () => {
    const { store, done } = await target.fresh();
    try {
      const { app, apiKey } = await store.apps.create({ name: 'Hosted', hosting: 'hosted' });
      expect(apiKey).toBeNull();
      expect(app.apiKeyHint).toBeNull();
      await expect(store.apps.rotateApiKey(app.id)).rejects.toBeInstanceOf(NoApiKeyError);
    } finally {
      await done();
    }
  });

  it('changes settings but not status or hosting, and moves status as the platform team does', async () => {
    const clock = new ManualClock();
    const { store, done } = await target.fresh({ clock });
    try {
      const { app } = await store.apps.create({ name: 'Quizzer', hosting: 'self_hosted', contractVersion: '2026-08-25' });
      expect(app.contractVersion).toBe('2026-08-25');
      clock.advance(1000);
      const updated = await store.apps.update(app.id, {
        callbackUrl: 'https://tool.example.com/launch',
        locationsUrl: 'https://tool.example.com/locations',
        gradesReleased: false,
        description: null,
      });
      expect(updated).toMatchObject({
        name: 'Quizzer',
        callbackUrl: 'https://tool.example.com/launch',
        locationsUrl: 'https://tool.example.com/locations',
        provisionUrl: null,
        gradesReleased: false,
        updatedAt: app.createdAt + 1000,
      });
      expect(await store.apps.update('app_missing', { name: 'x' })).toBeNull();

      expect(await store.apps.setStatus(app.id, 'suspended')).toMatchObject({ previous: 'draft', app: { status: 'suspended' } });
      expect(await store.apps.setStatus(app.id, 'active')).toMatchObject({ previous: 'suspended', app: { status: 'active' } });
      expect(await store.apps.setStatus(app.id, 'active')).toMatchObject({ previous: 'active', app: { status: 'active' } });
      expect(await store.apps.setStatus('app_missing', 'active')).toBeNull();
    } finally {
      await done();
    }
  });

  it('registers the Home location with a new tool unless told not to', async () => {
    const { store, done } = await target.fresh();
    try {
      const { app } = await store.apps.create({ name: 'With home', hosting: 'self_hosted' });
      const stored = await store.locations.listStored(app.id);
      expect(stored).toHaveLength(1);
      expect(stored[0]).toMatchObject({ extid: 'home', isDefault: true, type: 'content', label: 'Home', order: 0, params: {} });
      const bare = await store.apps.create({ name: 'Bare', hosting: 'self_hosted', homeLocation: false });
      expect(await store.locations.listStored(bare.app.id)).toEqual([]);
    } finally {
      await done();
    }
  });
});

describe('digest comparison', () => {
  it('compares digests of equal length with timingSafeEqual and refuses other lengths without throwing', () => {
    const a = sha256Hex('ltiaas_app_x_secret');
    expect(digestsEqual(a, a)).toBe(true);
    expect(digestsEqual(a, sha256Hex('ltiaas_app_x_secreT'))).toBe(false);
    expect(digestsEqual(a, a.slice(0, 62))).toBe(false);
    expect(digestsEqual(a, '')).toBe(false);
    expect(digestsEqual('', '')).toBe(false);
  });
});

describe.each(STORE_TARGETS)('builders ($name)', (target) => {
  it('issues tisb_ tokens stored as digests, verifies and rotates them, and tracks app membership', async () => {
    const { store, done } = await target.fresh();
    try {
      const { builder, token } = await store.builders.create({ name: 'Grace', email: ' Grace@Example.com ' });
      expect(builder.id).toMatch(/^bld_/);
      expect(builder.email).toBe('grace@example.com');
      expect(token).toMatch(/^tisb_[A-Za-z0-9_-]{43}$/);
      expect(builder.tokenHint).toBe(`tisb_...${token.slice(-4)}`);
      expect((await store.builders.verifyToken(token))?.id).toBe(builder.id);
      expect(await store.builders.verifyToken('tisb_' + 'x'.repeat(43))).toBeNull();
      expect(await store.builders.verifyToken('nonsense')).toBeNull();
      expect((await store.builders.findByEmail('GRACE@example.com'))?.id).toBe(builder.id);

      const newToken = await store.builders.rotateToken(builder.id);
      expect(newToken).not.toBeNull();
      expect(await store.builders.verifyToken(token)).toBeNull();
      expect((await store.builders.verifyToken(newToken!))?.id).toBe(builder.id);

      const { app } = await store.apps.create({ name: 'Mine', hosting: 'self_hosted', builderId: builder.id });
      expect(await store.builders.appRole(app.id, builder.id)).toBe('owner');
      const { builder: helper } = await store.builders.create({ name: 'Helper' });
      await store.builders.addToApp(app.id, helper.id);
      expect(await store.builders.appRole(app.id, helper.id)).toBe('member');
      expect((await store.builders.listForApp(app.id)).map((b) => [b.id, b.appRole])).toEqual([
        [builder.id, 'owner'],
        [helper.id, 'member'],
      ]);
      expect((await store.apps.listForBuilder(helper.id)).map((a) => a.id)).toEqual([app.id]);
      expect(await store.builders.removeFromApp(app.id, helper.id)).toBe(true);
      expect(await store.builders.appRole(app.id, helper.id)).toBeNull();

      const { builder: platform } = await store.builders.create({ name: 'Ops', role: 'platform' });
      expect(platform.role).toBe('platform');
    } finally {
      await done();
    }
  });
});
