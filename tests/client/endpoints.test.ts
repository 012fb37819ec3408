// A tool's three endpoints, mounted in a real Express app and called with real form posts.

import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import {
  createTokenVerifier,
  locationsResponse,
  type LaunchClaims,
  type LocationsClaims,
  type ProvisionClaims,
} from '../../client/tool/index.js';
import { toolEndpoints } from '../../client/tool/express.js';
import { exampleClaims, fakeService, sign, signingKey, type FakeService, type SigningKey } from './support.js';

const appId = 'app_3f9c2a7d1e5b8h4j6k0m';

let key: SigningKey;
let service: FakeService;
let tool: Server;
let toolUrl: string;
const seen: { kind: string; claims: unknown }[] = [];
let locationsAnswer: 'builder' | 'object' | 'invalid' | 'digits' = 'builder';

beforeAll(async () => {
  key = await signingKey();
  service = await fakeService(key);
  const verifier = createTokenVerifier({ issuer: service.origin, appId });
  const app = express();
  app.use(
    '/tis',
    toolEndpoints({
      verifier,
      onLaunch(claims, _req, res) {
        expectTypeOf(claims).toEqualTypeOf<LaunchClaims>();
        seen.push({ kind: 'launch', claims });
        res.status(200).type('html').send(`<p>Hello ${claims.user.full_name ?? 'student'}</p>`);
      },
      async onProvision(claims) {
        expectTypeOf(claims).toEqualTypeOf<ProvisionClaims>();
        seen.push({ kind: 'provision', claims });
      },
      onLocations(claims) {
        expectTypeOf(claims).toEqualTypeOf<LocationsClaims>();
        seen.push({ kind: 'locations', claims });
        switch (locationsAnswer) {
          case 'object':
            return { locations: { 'week-1-quiz': { type: 'assessment', label: 'Week 1 quiz', points: 10 } }, message: 'Pick one' };
          case 'invalid':
            return { grouped_locations: [{ label: '   ' }] };
          case 'digits':
            return locationsResponse()
              .location('intro', { type: 'content', label: 'Introduction' })
              .location('10', { type: 'practice', label: 'Drill 10' });
          default:
            return locationsResponse()
              .location('week-3-quiz', { type: 'assessment', label: 'Week 3 quiz', points: 20 })
              .group('Practice', (group) => group.location('drill-1', { type: 'practice', label: 'Drill 1' }))
              .message('Choose what to place.');
        }
      },
    }),
  );
  // The tool's own error handler sees what the kit refuses to send.
  app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(500).json({ tool_error: error.name, message: error.message });
  });
  tool = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  toolUrl = `http://127.0.0.1:${(tool.address() as AddressInfo).port}/tis`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => tool?.close(() => resolve()));
  await service?.close();
});

function post(path: string, fields: Record<string, string>, contentType = 'application/x-www-form-urlencoded') {
  return fetch(`${toolUrl}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': contentType },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });
}

const claims = (schema: 'LaunchClaims' | 'ProvisionClaims' | 'LocationsClaims') =>
  exampleClaims(schema, { issuer: service.origin, appId });

describe('toolEndpoints', () => {
  it('verifies a launch and hands the claims to the tool, which answers the browser', async () => {
    const launch = claims('LaunchClaims');
    const response = await post('/launch', { launch_data: await sign(launch, key) });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('Hello');
    expect(seen.at(-1)).toEqual({ kind: 'launch', claims: launch });
  });

  it('answers a provision request 204 when the tool leaves the response alone', async () => {
    const provision = claims('ProvisionClaims');
    const response = await post('/provision', { launch_data: await sign(provision, key) });
    expect(response.status).toBe(204);
    expect(seen.at(-1)).toEqual({ kind: 'provision', claims: provision });
  });

  it('answers a locations request 200 with the builder as JSON', async () => {
    locationsAnswer = 'builder';
    const response = await post('/locations', { launch_data: await sign(claims('LocationsClaims'), key) });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual({
      locations: { 'week-3-quiz': { type: 'assessment', label: 'Week 3 quiz', points: 20 } },
      grouped_locations: [{ label: 'Practice', locations: { 'drill-1': { type: 'practice', label: 'Drill 1' } } }],
      message: 'Choose what to place.',
    });
  });

  it('keeps the order the builder was given, digit-only extids included', async () => {
    locationsAnswer = 'digits';
    const response = await post('/locations', { launch_data: await sign(claims('LocationsClaims'), key) });
    const text = await response.text();
    expect(text.indexOf('"intro"')).toBeLessThan(text.indexOf('"10"'));
  });

  it('accepts a plain object from onLocations', async () => {
    locationsAnswer = 'object';
    const response = await post('/locations', { launch_data: await sign(claims('LocationsClaims'), key) });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      locations: { 'week-1-quiz': { type: 'assessment', label: 'Week 1 quiz', points: 10 } },
      message: 'Pick one',
    });
  });

  it('refuses to send a locations response the service would refuse, through the app error handler', async () => {
    locationsAnswer = 'invalid';
    const response = await post('/locations', { launch_data: await sign(claims('LocationsClaims'), key) });
    expect(response.status).toBe(500);
    expect(await response.json()).toMatchObject({
      tool_error: 'LocationsResponseError',
      message: expect.stringContaining('the app returned a location group with an empty label'),
    });
  });

  it.each([
    ['no launch_data', {}, 'missing_token'],
    ['a garbage token', { launch_data: 'garbage' }, 'malformed'],
  ])('answers 401 with a problem for %s', async (_name, fields, code) => {
    const response = await post('/launch', fields);
    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await response.json()).toMatchObject({ type: 'about:blank', title: 'Unauthorized', status: 401, code });
  });

  it('answers 401 for an expired token, a replay and a token of another kind', async () => {
    const now = Math.floor(Date.now() / 1000);
    const expired = await post('/launch', { launch_data: await sign({ ...claims('LaunchClaims'), iat: now - 900, exp: now - 600 }, key) });
    expect((await expired.json()).code).toBe('expired');

    const token = await sign(claims('LaunchClaims'), key);
    expect((await post('/launch', { launch_data: token })).status).toBe(200);
    const replay = await post('/launch', { launch_data: token });
    expect(replay.status).toBe(401);
    expect((await replay.json()).code).toBe('replayed');

    const crossed = await post('/launch', { launch_data: await sign(claims('ProvisionClaims'), key) });
    expect(crossed.status).toBe(401);
    expect((await crossed.json()).code).toBe('wrong_token_kind');
  });

  it('does not read launch_data from a JSON body', async () => {
    const response = await fetch(`${toolUrl}/launch`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ launch_data: await sign(claims('LaunchClaims'), key) }),
    });
    expect(response.status).toBe(401);
  });

  it('mounts only the endpoints given, and refuses provisioning handlers for 2026-08-19', async () => {
    const verifier0819 = createTokenVerifier({ issuer: service.origin, appId, contractVersion: '2026-08-19' });
    const router = toolEndpoints({ verifier: verifier0819, onLaunch: () => undefined });
    expect(router.stack.map((layer) => layer.route?.path)).toEqual(['/launch']);
    expect(() =>
      toolEndpoints({
        verifier: verifier0819,
        // @ts-expect-error 2026-08-19 sends no provision requests
        onProvision: () => undefined,
      }),
    ).toThrow(/sends no provision or locations requests/);
  });

  it('lets the tool answer refusals its own way', async () => {
    const app = express();
    app.use(
      toolEndpoints({
        verifier: createTokenVerifier({ issuer: service.origin, appId }),
        onLaunch: () => undefined,
        onRefused: (error, kind, _req, res) => void res.status(error.status).type('html').send(`<p>${kind}: ${error.code}</p>`),
      }),
    );
    const server = await new Promise<Server>((resolve) => {
      const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
    });
    try {
      const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/launch`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: 'launch_data=x',
      });
      expect(response.status).toBe(401);
      expect(await response.text()).toBe('<p>launch: malformed</p>');
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
