// Shared by the archived-contract tests: tools pinned to a contract, launches that keep the claims as the
// tool received them, each bundled spec's schemas under Ajv 2020, and terse HTTP calls.

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { expect } from 'vitest';
import type { LaunchOutcome } from '../../../server/launches/service.js';
import type { MemberGroup } from '../../../server/store/index.js';
import type { PlacedLocation, TestServer } from '../harness.js';
import { enrolInLms } from '../harness.js';

const addFormats = addFormatsModule.default;

export const VERSIONS = ['2026-09-21', '2026-08-25', '2026-08-19'] as const;
export type Version = (typeof VERSIONS)[number];
export const ARCHIVED = ['2026-08-25', '2026-08-19'] as const;
export type Archived = (typeof ARCHIVED)[number];

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
for (const version of VERSIONS) {
  const spec = JSON.parse(readFileSync(new URL(`../../../generated/${version}/openapi.json`, import.meta.url), 'utf8')) as {
    components: Record<string, unknown>;
  };
  ajv.addSchema({ $id: `tis-${version}`, components: spec.components });
}

/** Every failure of `value` against a component schema of that version's bundled spec ([] when valid). */
export function schemaErrors(version: Version, schema: string, value: unknown): string[] {
  const validate = ajv.getSchema(`tis-${version}#/components/schemas/${schema}`);
  if (!validate) throw new Error(`${version} has no schema ${schema}`);
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`);
}

export function hasSchema(version: Version, schema: string): boolean {
  return ajv.getSchema(`tis-${version}#/components/schemas/${schema}`) !== undefined;
}

export function expectValid(version: Version, schema: string, value: unknown): void {
  expect(schemaErrors(version, schema, value), `${version} ${schema}`).toEqual([]);
}

/** A self-hosted tool registered as the dashboard registers one (Home location included), active. */
export async function pinnedTool(
  server: Pick<TestServer, 'services'>,
  version: Version,
  options: { status?: 'draft' | 'active' | 'suspended' } = {},
): Promise<{ appId: string; apiKey: string; auth: string }> {
  const store = server.services.store;
  const created = await store.apps.create({ name: `Pinned ${version} ${randomUUID().slice(0, 6)}`, hosting: 'self_hosted', contractVersion: version });
  const apiKey = created.apiKey as string;
  const status = options.status ?? 'active';
  if (status !== 'draft') await store.apps.setStatus(created.app.id, 'active');
  if (status === 'suspended') await store.apps.setStatus(created.app.id, 'suspended');
  return { appId: created.app.id, apiKey, auth: `Bearer ${apiKey}` };
}

export interface ArchivedLaunch extends LaunchOutcome {
  /** The claims exactly as the tool received them (any contract's shape). */
  raw: Record<string, unknown>;
  storage: { context: string; location: string; member: string; member_location: string };
  auth: string;
}

/** A real launch through the launch service (as `launch()` of the harness); the claims follow the tool's pin. */
export async function launchAs(
  server: Pick<TestServer, 'services'>,
  placed: PlacedLocation,
  groups: readonly MemberGroup[] = ['student'],
  userExternalId = `person-${randomUUID()}`,
): Promise<ArchivedLaunch> {
  // In the Sandbox's LMS the person is enrolled in the LMS course too, so their grades are taken.
  await enrolInLms(server, placed, userExternalId, groups);
  const outcome = await server.services.launches.launch({
    organization: placed.organizationInput,
    course: { contextId: placed.context.id },
    user: {
      externalId: userExternalId,
      givenName: 'Ada',
      familyName: 'Lovelace',
      fullName: 'Ada Lovelace',
      email: `${userExternalId}@example.edu`,
      groups,
    },
    placement: { appId: placed.appId, locationId: placed.location.id, resourceLink: placed.placement.resourceLink },
  });
  const raw = outcome.claims as unknown as Record<string, unknown>;
  return { ...outcome, raw, storage: raw['storage'] as ArchivedLaunch['storage'], auth: `Bearer ${outcome.apiToken}` };
}

export interface Call {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** One JSON request; the body of any answer parsed (204 gives `{}`). */
export async function call(
  method: string,
  url: string,
  options: { auth?: string | null; body?: unknown; version?: string; contentType?: string } = {},
): Promise<Call> {
  const headers: Record<string, string> = {};
  if (options.auth) headers['Authorization'] = options.auth;
  if (options.version) headers['Contract-Version'] = options.version;
  if (options.body !== undefined) headers['Content-Type'] = options.contentType ?? 'application/json';
  const res = await fetch(url, {
    method,
    headers,
    ...(options.body !== undefined ? { body: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

/** Asserts a problem: status, exact detail, code, and the served contract. */
export function expectProblem(res: Call, status: number, detail: string, version?: string): void {
  expect({ status: res.status, detail: res.body['detail'] }).toEqual({ status, detail });
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(typeof res.body['code']).toBe('string');
  if (version) expect(res.headers.get('contract-version')).toBe(version);
}
