/**
 * Nothing a caller sends to the built-in Sandbox LMS produces a 500 either (issue 3: "nothing the caller
 * sends produces a 500"; tests/server/core/fuzz.test.ts covers the contract's operations, this file the
 * Sandbox LMS operations of the dashboard spec as the full service mounts them). Garbage path segments,
 * bodies, media types and credentials (none, garbage, a real AGS token) at every operation must get a 4xx
 * or a success, each with a request id; errors of the AGS routes in the problem envelope, errors of the
 * token endpoint in RFC 6749's shape.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../../../generated/dashboard/operations.js';
import { AGS_MEDIA_TYPES, AGS_SCOPES, sandboxClientId, sandboxTokenUrl } from '../../../server/sandbox-lms/school.js';
import type { TestServer } from '../harness.js';
import { createTool, launch, placeLocation, startServer } from '../harness.js';
import type { Attempt } from '../fuzz-runner.js';
import { runAttempts, urlFor as fuzzUrl } from '../fuzz-runner.js';

let server: TestServer;
let valid: Record<string, string>;
let auths: Record<string, string | null>;
let assertion: () => Promise<string>;

const sandboxOperations = Object.values(operations).filter((op) => op.tag === 'Sandbox LMS');

beforeAll(async () => {
  server = await startServer({ config: { logLevel: 'warn' } });
  const tool = await createTool(server);
  const placed = await placeLocation(server, { app: tool.app.id, type: 'assessment', points: 10 });
  await launch(server, { placed, groups: ['student'] });
  if (!placed.placement.lineItemId) throw new Error('the assessment has no gradebook column');
  valid = { context_id: placed.context.id, line_item_id: placed.placement.lineItemId };
  const client = sandboxClientId(tool.app.id);
  assertion = async () => {
    const iat = Math.floor(Date.now() / 1000);
    return server.services.signer.sign({ iss: client, sub: client, aud: sandboxTokenUrl(server.url), iat, exp: iat + 300, jti: randomUUID() });
  };
  const token = await fetch(`${server.url}/sandbox-lms/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: await assertion(),
      scope: `${AGS_SCOPES.score} ${AGS_SCOPES.lineItem}`,
    }).toString(),
  });
  expect(token.status).toBe(200);
  auths = {
    none: null,
    token: `Bearer ${((await token.json()) as { access_token: string }).access_token}`,
    unknown: `Bearer sbx_at_${'A'.repeat(43)}`,
    garbage: `Bearer ${'\u00e9x'.repeat(3000)}`,
    basic: 'Basic Zm9vOmJhcg==',
  };
});
afterAll(async () => server?.stop());

const SEGMENTS = ['x'.repeat(3000), '%00', '%', '%E0%A4%A', '..', '%2E%2E', '%E2%98%83', '-1', 'null', '__proto__', "'; DROP TABLE line_items; --"];

const deepObject = `${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`;

const BODIES: Array<string | Uint8Array> = [
  '',
  'null',
  '[]',
  '{}',
  '"x"',
  '1e999',
  '{"scoreMaximum":1e309,"label":"x"}',
  '{"scoreMaximum":-1,"label":""}',
  '{"scoreMaximum":10,"label":"\\u0000","resourceLinkId":{"a":1},"tag":["x"]}',
  '{"userId":null,"scoreGiven":"1","scoreMaximum":0,"activityProgress":"x","gradingProgress":1,"timestamp":"yesterday"}',
  `{"userId":"u","scoreGiven":1,"scoreMaximum":1,"activityProgress":"Completed","gradingProgress":"FullyGraded","timestamp":"${'9'.repeat(40)}"}`,
  '{"userId":"u","scoreGiven":1,"scoreMaximum":1,"activityProgress":"Completed","gradingProgress":"FullyGraded","timestamp":"2026-13-45T99:99:99Z"}',
  '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}',
  '{"a":1}{"b":2}',
  deepObject,
  new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
  'grant_type=client_credentials&scope=%',
  'grant_type=client_credentials&grant_type=password&client_assertion=a.b.c&scope=x',
  `grant_type=client_credentials&client_assertion_type=x&client_assertion=${'a'.repeat(100_000)}&scope=${AGS_SCOPES.score}`,
  'client_assertion=eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.&grant_type=client_credentials&scope=x',
];

const CONTENT_TYPES = [
  'application/json',
  AGS_MEDIA_TYPES.lineItem,
  AGS_MEDIA_TYPES.score,
  'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded; charset=iso-8859-1',
  'text/plain',
  'multipart/form-data; boundary=x',
  undefined,
];

const urlFor = (template: string, params: Record<string, string>): string => fuzzUrl(server.url, template, params);
const runAll = (attempts: Attempt[]) => runAttempts(attempts, 8);

describe('no caller input to the Sandbox LMS produces a 500', () => {
  it('covers every Sandbox LMS operation of the dashboard spec', () => {
    expect(sandboxOperations.map((op) => op.id).sort()).toEqual([
      'createSandboxLineItem',
      'getSandboxLineItem',
      'issueSandboxLmsToken',
      'listSandboxLineItems',
      'postSandboxScore',
      'updateSandboxLineItem',
    ]);
  });

  it('garbage path segments, with every credential', async () => {
    const attempts: Attempt[] = [];
    for (const op of sandboxOperations) {
      const names = [...op.path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1] as string);
      for (const name of names) {
        for (const segment of SEGMENTS) {
          for (const [who, auth] of Object.entries(auths)) {
            attempts.push({
              method: op.method,
              url: urlFor(op.path, { ...valid, [name]: segment }),
              headers: { ...(auth ? { Authorization: auth } : {}), 'Content-Type': 'application/json' },
              ...(op.method === 'GET' ? {} : { body: '{"label":"x","scoreMaximum":10}' }),
              label: `${op.id} ${name}=${segment.slice(0, 20)} as ${who}`,
              tokenEndpoint: false,
            });
          }
        }
      }
    }
    expect(await runAll(attempts)).toEqual([]);
  });

  it('garbage bodies and media types, with every credential', async () => {
    const attempts: Attempt[] = [];
    for (const op of sandboxOperations) {
      const tokenEndpoint = op.id === 'issueSandboxLmsToken';
      for (const body of BODIES) {
        for (const contentType of CONTENT_TYPES) {
          for (const [who, auth] of Object.entries(auths)) {
            if (tokenEndpoint && who !== 'none' && who !== 'garbage') continue;
            attempts.push({
              method: op.method,
              url: urlFor(op.path, valid),
              headers: { ...(auth ? { Authorization: auth } : {}), ...(contentType ? { 'Content-Type': contentType } : {}) },
              ...(op.method === 'GET' ? {} : { body }),
              label: `${op.id} body=${String(body).slice(0, 30)} type=${contentType} as ${who}`,
              tokenEndpoint,
            });
          }
        }
      }
    }
    expect(await runAll(attempts)).toEqual([]);
  });

  it('odd methods and query strings on every path; a replayed or forged assertion', async () => {
    const attempts: Attempt[] = [];
    const paths = [...new Set(sandboxOperations.map((op) => op.path))];
    for (const path of paths) {
      for (const method of ['HEAD', 'OPTIONS', 'PATCH', 'DELETE', 'PUT', 'POST', 'GET']) {
        attempts.push({
          method,
          url: `${urlFor(path, valid)}?__proto__[x]=1&limit=-1&limit=${'9'.repeat(400)}&rlid=%00`,
          headers: { Authorization: auths['token'] ?? '' },
          label: `${method} ${path}`,
          tokenEndpoint: path.endsWith('/token'),
        });
      }
    }
    const replayed = await assertion();
    for (const client_assertion of [replayed, replayed, `${replayed.slice(0, -4)}AAAA`, 'a.b.c', '..', '\u00e9.\u00e9.\u00e9']) {
      attempts.push({
        method: 'POST',
        url: `${server.url}/sandbox-lms/token`,
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
          client_assertion,
          scope: AGS_SCOPES.score,
        }).toString(),
        label: `token with assertion ${client_assertion.slice(0, 20)}`,
        tokenEndpoint: true,
      });
    }
    expect(await runAll(attempts)).toEqual([]);
  });

  it('leaves no polluted prototype behind', () => {
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});
