/**
 * diffContracts, run on the real bundles, agrees with the contracts' own Versioning sections
 * (../shared/contract/current-2026-09-21.md and archived-2026-08-25-and-2026-08-19.md), and detects additions,
 * removals and `x-replaces` renames on a small synthetic pair.
 */
import { describe, expect, it } from 'vitest';
import { diffContracts, diffSchema, isEmptyDiff, type ContractDiff, type SchemaChange } from '../../scripts/changelog.ts';
import type { JsonObject } from '../../scripts/lib/bundle.ts';
import { contract, readBundle } from './bundles.ts';

function schema(diff: ContractDiff, name: string): SchemaChange {
  const found = diff.schemas.changed.find((c) => c.name === name);
  if (found === undefined) throw new Error(`no change recorded for schema ${name}`);
  return found;
}

const ops = (list: ContractDiff['operations']['removed']): string[] => list.map((o) => `${o.method} ${o.path}`);

describe('diffContracts on the real contracts', () => {
  describe('2026-08-25 → 2026-09-21', () => {
    const diff = diffContracts(readBundle(contract('2026-08-25')), readBundle(contract('2026-09-21')));

    it('removes POST /v1/grades, GET /v1/grades/{grade_id} and every /v1/apps/me operation', () => {
      const removed = ops(diff.operations.removed);
      expect(removed).toContain('POST /v1/grades');
      expect(removed).toContain('GET /v1/grades/{grade_id}');
      const older = readBundle(contract('2026-08-25'));
      const appsMe = Object.entries(older['paths'] as Record<string, Record<string, unknown>>)
        .filter(([p]) => p === '/v1/apps/me' || p.startsWith('/v1/apps/me/'))
        .flatMap(([p, item]) =>
          Object.keys(item)
            .filter((k) => ['get', 'put', 'post', 'delete', 'patch'].includes(k))
            .map((m) => `${m.toUpperCase()} ${p}`),
        );
      expect(appsMe.length).toBeGreaterThan(0);
      for (const op of appsMe) expect(removed, op).toContain(op);
      expect(removed.filter((o) => !o.includes('/v1/apps/me') && !o.includes('/v1/grades'))).toEqual([]);
      expect(diff.operationIds.removed).toEqual(
        expect.arrayContaining(diff.operations.removed.map((o) => o.operationId).filter((id): id is string => id !== null)),
      );
    });

    it('adds the score URLs that replace grade passback', () => {
      const added = ops(diff.operations.added);
      expect(added).toContain('POST /v1/contexts/{context_id}/apps/{app_id}/locations/{location_id}/members/{member_id}/scores');
    });

    it('renames grade_passback to grade (grade.submit) and adds the files claim', () => {
      const claims = schema(diff, 'LaunchClaims');
      expect(claims.renamed).toContainEqual({ from: 'grade_passback', to: 'grade' });
      expect(claims.added).toContain('files');
      expect(claims.added).toContain('grade.submit');
      expect(claims.removed).not.toContain('grade_passback');
    });

    it('keeps the webhooks', () => {
      expect(diff.webhooks.added).toEqual([]);
      expect(diff.webhooks.removed).toEqual([]);
    });

    it('adds message and grouped_locations to the locations response (2026-09-04 additions)', () => {
      expect(schema(diff, 'LocationsResponse').added).toEqual(expect.arrayContaining(['message', 'grouped_locations']));
    });
  });

  describe('2026-08-19 → 2026-08-25', () => {
    const diff = diffContracts(readBundle(contract('2026-08-19')), readBundle(contract('2026-08-25')));

    it('renames user.role, resource_link_id and organization.id in the launch claims', () => {
      const claims = schema(diff, 'LaunchClaims');
      expect(claims.renamed).toEqual(
        expect.arrayContaining([
          { from: 'user.role', to: 'user.groups' },
          { from: 'resource_link_id', to: 'resource_link' },
          { from: 'organization.id', to: 'organization.deployment' },
        ]),
      );
      for (const gone of ['user.role', 'resource_link_id', 'organization.id']) expect(claims.removed).not.toContain(gone);
    });

    it('adds the context and location.extid claims and user.member', () => {
      const claims = schema(diff, 'LaunchClaims');
      expect(claims.added).toEqual(expect.arrayContaining(['context', 'location.extid', 'user.member']));
    });

    it('adds key rotation', () => {
      expect(ops(diff.operations.added)).toContain('POST /v1/apps/me/rotate-key');
      expect(diff.operations.removed).toEqual([]);
    });

    it('adds the provision and locations webhooks and their claims', () => {
      expect(diff.webhooks.added.map((h) => h.name).sort()).toEqual(['locations', 'provision']);
      expect(diff.webhooks.removed).toEqual([]);
      expect(diff.schemas.added).toEqual(expect.arrayContaining(['ProvisionClaims', 'LocationsClaims', 'LocationsResponse']));
    });

    it('adds provision_url, locations_url and location extid to the app object, and max_score to grades', () => {
      const app = schema(diff, 'App');
      expect(app.added).toEqual(expect.arrayContaining(['provision_url', 'locations_url', 'locations[].extid']));
      const grade = diff.schemas.changed.filter((c) => c.added.includes('max_score')).map((c) => c.name);
      expect(grade.length).toBeGreaterThan(0);
    });
  });
});

describe('diffContracts on a synthetic pair', () => {
  const older: JsonObject = {
    openapi: '3.1.0',
    info: { title: 'old', version: '1' },
    paths: {
      '/a': { get: { operationId: 'getA', summary: 'A' }, delete: { operationId: 'deleteA' } },
      '/b': { post: { operationId: 'makeB' } },
    },
    webhooks: { ping: { post: { operationId: 'ping' } } },
    components: {
      schemas: {
        Claims: {
          type: 'object',
          properties: {
            kept: { type: 'string' },
            old_name: { type: 'string' },
            dropped: { type: 'integer' },
            who: { $ref: '#/components/schemas/Who' },
            items: { type: 'array', items: { type: 'object', properties: { x: { type: 'string' } } } },
          },
        },
        Who: { type: 'object', properties: { role: { type: 'string' }, id: { type: 'string' } } },
        Gone: { type: 'object' },
        Same: { type: 'object', properties: { a: { type: 'string' } } },
      },
    },
  };
  const newer: JsonObject = {
    openapi: '3.1.0',
    info: { title: 'new', version: '2' },
    paths: {
      '/a': { get: { operationId: 'getA', summary: 'A' } },
      '/c': { post: { operationId: 'makeB' } },
    },
    webhooks: { ping: { post: { operationId: 'ping' } }, pong: { post: { operationId: 'pong' } } },
    components: {
      schemas: {
        Claims: {
          type: 'object',
          properties: {
            kept: { type: 'string' },
            new_name: { type: 'string', 'x-replaces': 'old_name' },
            who: { oneOf: [{ $ref: '#/components/schemas/Who' }, { type: 'null' }] },
            items: { type: 'array', items: { type: 'object', properties: { x: { type: 'string' }, y: { type: 'string' } } } },
            extra: { type: 'object', properties: { deep: { type: 'string' } } },
          },
        },
        Who: {
          type: 'object',
          properties: { groups: { type: 'array', items: { type: 'string' }, 'x-replaces': 'who.role' }, id: { type: 'string' } },
        },
        Same: { type: 'object', properties: { a: { type: 'string' } } },
        Fresh: { type: 'object' },
      },
    },
  };
  const diff = diffContracts(older, newer);

  it('finds operations added and removed by method and path, and by operationId', () => {
    expect(ops(diff.operations.removed)).toEqual(['DELETE /a', 'POST /b']);
    expect(ops(diff.operations.added)).toEqual(['POST /c']);
    // makeB moved from /b to /c: gone by path, kept by operationId.
    expect(diff.operationIds.removed).toEqual(['deleteA']);
    expect(diff.operationIds.added).toEqual([]);
  });

  it('finds webhooks added and removed', () => {
    expect(diff.webhooks.added.map((h) => h.name)).toEqual(['pong']);
    expect(diff.webhooks.removed).toEqual([]);
  });

  it('finds schemas added and removed, and leaves unchanged ones out', () => {
    expect(diff.schemas.added).toEqual(['Fresh']);
    expect(diff.schemas.removed).toEqual(['Gone']);
    expect(diff.schemas.changed.map((c) => c.name).sort()).toEqual(['Claims', 'Who']);
  });

  it('finds properties added, removed and renamed, through $ref, oneOf and array items', () => {
    const claims = schema(diff, 'Claims');
    expect(claims.renamed).toEqual([
      { from: 'old_name', to: 'new_name' },
      { from: 'who.role', to: 'who.groups' },
    ]);
    expect(claims.added).toEqual(['items[].y', 'extra']);
    expect(claims.removed).toEqual(['dropped']);
  });

  it('reads a dotted x-replaces as a sibling inside a nested component', () => {
    expect(schema(diff, 'Who').renamed).toEqual([{ from: 'role', to: 'groups' }]);
  });

  it('does not call it a rename when the old property is still there', () => {
    const change = diffSchema(
      'S',
      {},
      { properties: { a: { type: 'string' } } },
      {},
      { properties: { a: { type: 'string' }, b: { type: 'string', 'x-replaces': 'a' } } },
    );
    expect(change).toEqual({ name: 'S', added: ['b'], removed: [], renamed: [] });
  });

  it('finds nothing between a document and itself', () => {
    expect(isEmptyDiff(diffContracts(newer, structuredClone(newer)))).toBe(true);
  });
});
