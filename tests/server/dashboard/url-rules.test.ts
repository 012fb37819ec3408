/**
 * The endpoint URL rules of the settings over HTTP for host names, with the service's tool resolver
 * injected (the harness's `toolResolver`): no name is ever looked up beyond this process. A name that does
 * not resolve, one with no addresses, and one with a private address among its answers are each 422 with
 * the rule's exact message (AppSettingsPatch; contract, URL rules), and nothing is written; a name that
 * resolves to public addresses only is kept as normalised. Also, for a tool pinned to 2026-08-19 the URLs
 * pass the same rules and are kept (decision S-41).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schemas } from '../../../generated/dashboard/schemas.ts';
import type { TestServer } from '../harness.js';
import { startServer } from '../harness.js';
import type { Builder } from './helpers.js';
import { caller, createBuilder, expectProblem, platformToken, register } from './helpers.js';

/** The injected DNS: every name this test uses, and what it answers. */
const ANSWERS: Readonly<Record<string, readonly string[] | 'ENOTFOUND' | 'EAI_AGAIN'>> = {
  'tool.missing.example': 'ENOTFOUND',
  'tool.flaky.example': 'EAI_AGAIN',
  'tool.empty.example': [],
  'tool.mixed.example': ['93.184.216.34', '10.1.2.3'],
  'tool.public.example': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
  localhost: ['127.0.0.1'],
};
const asked: string[] = [];

let server: TestServer;
let builder: Builder;

beforeAll(async () => {
  server = await startServer({
    toolResolver: async (hostname) => {
      asked.push(hostname);
      const answer = ANSWERS[hostname];
      if (answer === undefined || typeof answer === 'string') {
        throw Object.assign(new Error(`getaddrinfo ${answer ?? 'ENOTFOUND'} ${hostname}`), { code: answer ?? 'ENOTFOUND' });
      }
      return answer;
    },
  });
  builder = await createBuilder(server, caller(server, platformToken(server)), 'Resolver Builder');
});
afterAll(async () => {
  await server?.stop();
});

describe('settings: endpoint URLs whose host is a name', () => {
  it.each([
    ['provision_url', 'https://tool.missing.example/provision', 'url_unresolvable', 'provision_url must resolve to a publicly routable host (tool.missing.example did not resolve: ENOTFOUND)'],
    ['locations_url', 'https://tool.flaky.example/locations', 'url_unresolvable', 'locations_url must resolve to a publicly routable host (tool.flaky.example did not resolve: EAI_AGAIN)'],
    ['callback_url', 'https://tool.empty.example/launch', 'url_unresolvable', 'callback_url must resolve to a publicly routable host (tool.empty.example has no addresses)'],
    ['provision_url', 'https://tool.mixed.example/provision', 'url_not_public', 'provision_url must resolve only to publicly routable addresses (10.1.2.3 is private)'],
  ])('%s %s: 422, nothing written', async (field, url, code, detail) => {
    const { appId } = await register(builder);
    const before = await builder.call('GET', `/apps/${appId}`);
    const refused = await builder.call('PATCH', `/apps/${appId}`, { name: 'Renamed', [field]: url });
    expectProblem(refused, 422, code, detail);
    expect(asked).toContain(new URL(url).hostname);
    const after = await builder.call('GET', `/apps/${appId}`);
    expect(after.body).toEqual(before.body);
  });

  it('a name with public addresses only is kept as written', async () => {
    const { appId } = await register(builder);
    const set = await builder.call('PATCH', `/apps/${appId}`, {
      callback_url: 'https://tool.public.example/launch',
      provision_url: 'https://tool.public.example',
    });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ callback_url: 'https://tool.public.example/launch', provision_url: 'https://tool.public.example/' });
  });

  it.each([
    ['callback_url', 'https://TOOL.public.example:443/launch'],
    ['callback_url', 'https:/tool.public.example/launch'],
    ['provision_url', 'https://tool.public.example\\@evil.example/provision'],
    ['locations_url', 'https://ｔｏｏｌ.public.example/locations'],
    ['locations_url', 'https://ⓣⓞⓞⓛ.public.example/locations'],
  ])('%s %s, which the URL parser would rewrite, is refused as written and nothing is kept (H-04)', async (field, url) => {
    const { appId } = await register(builder);
    const refused = await builder.call('PATCH', `/apps/${appId}`, { [field]: url });
    expectProblem(refused, 422, 'url_not_https', `${field} must be an absolute https:// URL`);
    const read = await builder.call<Record<string, unknown>>('GET', `/apps/${appId}`);
    expect(read.body[field]).toBeNull();
  });

  it.each([
    ['callback_url', 'http://127.0.0.1:8080/launch', 'url_not_https', 'callback_url must be an absolute https:// URL'],
    ['provision_url', 'https://127.0.0.1/provision', 'url_not_public', 'provision_url must resolve only to publicly routable addresses (127.0.0.1 is loopback)'],
    ['locations_url', 'http://localhost:8080/locations', 'url_not_https', 'locations_url must be an absolute https:// URL'],
  ])('%s %s with the development switch off: the rule\'s message, and a hint naming the switch (OPS-43)', async (field, url, code, detail) => {
    const { appId } = await register(builder);
    const refused = await builder.call('PATCH', `/apps/${appId}`, { [field]: url });
    expectProblem(refused, 422, code, detail);
    expect(refused.body['hint']).toBe(schemas.AppSettingsPatch['x-messages'].development_hint);
    expect(refused.body['hint']).toContain('ALLOW_LOOPBACK_TOOLS=1');
    // Any other host gets the rule alone: the switch would not help it.
    const other = await builder.call('PATCH', `/apps/${appId}`, { [field]: 'http://tool.public.example/x' });
    expectProblem(other, 422, 'url_not_https', `${field} must be an absolute https:// URL`);
    expect(other.body).not.toHaveProperty('hint');
  });

  it('a tool pinned to 2026-08-19: the same rules, and the URLs kept (S-41)', async () => {
    const { appId } = await register(builder, { name: 'Old Quiz', hosting: 'self_hosted', contract_version: '2026-08-19' });
    const refused = await builder.call('PATCH', `/apps/${appId}`, { locations_url: 'https://tool.missing.example/locations' });
    expectProblem(refused, 422, 'url_unresolvable', 'locations_url must resolve to a publicly routable host (tool.missing.example did not resolve: ENOTFOUND)');
    const set = await builder.call('PATCH', `/apps/${appId}`, {
      provision_url: 'https://tool.public.example/provision',
      locations_url: 'https://tool.public.example/locations',
    });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      contract_version: '2026-08-19',
      provision_url: 'https://tool.public.example/provision',
      locations_url: 'https://tool.public.example/locations',
    });
    expect((await builder.call('GET', `/apps/${appId}`)).body).toMatchObject({ locations_url: 'https://tool.public.example/locations' });
  });
});
