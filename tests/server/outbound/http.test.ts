/**
 * The outbound HTTP client: the endpoint URL rules on every call (with the development switch OFF and an
 * injected resolver), connections only to the vetted addresses, no redirects followed, one total timeout,
 * a capped body, and typed outcomes. No test here opens a connection to anything but 127.0.0.1: the
 * connector that would dial a vetted public address is replaced by one that records the target and
 * connects to a loopback server instead, and throws for anything else.
 */
import { request as httpRequest } from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectTarget, Connector, ToolOutcome } from '../../../server/outbound/index.js';
import { ToolHttpClient, defaultConnector } from '../../../server/outbound/index.js';
import type { Resolver } from '../../../rules/endpoint-url.js';
import type { ToolServer } from './fixtures.js';
import { answer, closedPort, startToolServer } from './fixtures.js';

let tool: ToolServer;

beforeAll(async () => {
  tool = await startToolServer();
  tool.route('/ok', answer.text('accepted', 200));
  tool.route('/no-content', answer.status(204));
  tool.route('/hang', answer.hang());
  tool.route('/redirect', answer.redirect('/elsewhere'));
  tool.route('/redirect-301', answer.redirect('/elsewhere', 301));
  tool.route('/elsewhere', answer.text('followed', 200));
  tool.route('/big', (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(Buffer.alloc(2 * 1_048_576, 0x20));
  });
  tool.route('/error', answer.text('oops', 500));
});
afterAll(async () => tool?.close());

/** Records every socket the client asks for and sends it to the loopback tool; never dials the target. */
function loopbackConnector(seen: ConnectTarget[]): Connector {
  return (target) => {
    seen.push(target);
    return net.connect({ host: '127.0.0.1', port: tool.port });
  };
}

/** Fails the test if the client ever asks for a socket. */
const noConnection: Connector = (target) => {
  throw new Error(`a connection was attempted to ${target.hostname} (${target.addresses.join(', ')})`);
};

function client(options: { resolve?: Resolver; allowLoopback?: boolean; connect?: Connector } = {}): ToolHttpClient {
  return new ToolHttpClient({
    resolve: options.resolve ?? (async (host) => Promise.reject(Object.assign(new Error(`no DNS in tests: ${host}`), { code: 'ENOTFOUND' }))),
    allowLoopback: options.allowLoopback ?? false,
    ...(options.connect ? { connect: options.connect } : {}),
  });
}

function post(c: ToolHttpClient, url: string | null, overrides: { timeoutMs?: number; maxBodyBytes?: number } = {}): Promise<ToolOutcome> {
  return c.postForm({
    url,
    field: 'locations_url',
    form: { launch_data: 'header.payload.signature' },
    timeoutMs: overrides.timeoutMs ?? 2000,
    maxBodyBytes: overrides.maxBodyBytes ?? 1_048_576,
  });
}

describe('the endpoint URL rules on every call, switch off', () => {
  // [url, rule]; IP literals need no resolver, every spelling of an address is caught (one the parser rewrites
  // as an invalid URL, H-04).
  const literals: Array<[string, string]> = [
    ['http://tool.example/hook', 'absolute_https'],
    ['/relative/hook', 'absolute_https'],
    ['ftp://tool.example/hook', 'absolute_https'],
    ['https://tool.example/ hook', 'absolute_https'],
    ['https://tool.example/\thook', 'absolute_https'],
    ['https://user:secret@tool.example/hook', 'no_credentials'],
    ['http://127.0.0.1:8080/hook', 'absolute_https'],
    ['http://localhost:8080/hook', 'absolute_https'],
    ['https://127.0.0.1/hook', 'public_address'],
    ['https://127.255.255.254/hook', 'public_address'],
    ['https://2130706433/hook', 'absolute_https'],
    ['https://0x7f000001/hook', 'absolute_https'],
    ['https://0177.0.0.1/hook', 'absolute_https'],
    ['https://0x7f.1/hook', 'absolute_https'],
    ['https://127.1/hook', 'absolute_https'],
    ['https://10.0.0.1/hook', 'public_address'],
    ['https://012.0.0.1/hook', 'absolute_https'],
    ['https://167772161/hook', 'absolute_https'],
    ['https://172.16.5.4/hook', 'public_address'],
    ['https://192.168.1.20/hook', 'public_address'],
    ['https://169.254.169.254/latest/meta-data', 'public_address'],
    ['https://100.64.0.1/hook', 'public_address'],
    ['https://0.0.0.0/hook', 'public_address'],
    ['https://224.0.0.1/hook', 'public_address'],
    ['https://255.255.255.255/hook', 'public_address'],
    ['https://192.0.2.10/hook', 'public_address'],
    ['https://198.51.100.7/hook', 'public_address'],
    ['https://203.0.113.9/hook', 'public_address'],
    ['https://198.18.0.1/hook', 'public_address'],
    ['https://240.0.0.1/hook', 'public_address'],
    ['https://[::1]/hook', 'public_address'],
    ['https://[::]/hook', 'public_address'],
    ['https://[::ffff:127.0.0.1]/hook', 'absolute_https'],
    ['https://[::ffff:7f00:1]/hook', 'public_address'],
    ['https://[::ffff:93.184.216.34]/hook', 'absolute_https'],
    ['https://[::127.0.0.1]/hook', 'absolute_https'],
    ['https://[64:ff9b::a00:1]/hook', 'public_address'],
    ['https://[64:ff9b:1::a00:1]/hook', 'public_address'],
    ['https://[fe80::1]/hook', 'public_address'],
    ['https://[fc00::1]/hook', 'public_address'],
    ['https://[fd12:3456::1]/hook', 'public_address'],
    ['https://[fec0::1]/hook', 'public_address'],
    ['https://[ff02::1]/hook', 'public_address'],
    ['https://[2001:db8::1]/hook', 'public_address'],
    ['https://[2002:7f00:1::1]/hook', 'public_address'],
    ['https://[2001::1]/hook', 'public_address'],
  ];

  it.each(literals)('%s fails %s and opens no connection', async (url, rule) => {
    const outcome = await post(client({ connect: noConnection }), url);
    expect(outcome).toMatchObject({ kind: 'rule_failure', rule });
    if (outcome.kind === 'rule_failure') expect(outcome.message).toMatch(/^locations_url must /);
  });

  it('refuses an IPv6 zone id', async () => {
    const outcome = await post(client({ connect: noConnection }), 'https://[fe80::1%25eth0]/hook');
    expect(outcome.kind).toBe('rule_failure');
  });

  // [resolver answer, rule]: a name is as good as every address it resolves to.
  const answers: Array<[string, readonly string[], string]> = [
    ['private', ['10.0.4.17'], 'public_address'],
    ['loopback', ['127.0.0.1'], 'public_address'],
    ['IPv6 loopback', ['::1'], 'public_address'],
    ['link-local (cloud metadata)', ['169.254.169.254'], 'public_address'],
    ['CGNAT', ['100.100.1.1'], 'public_address'],
    ['IPv4-mapped private', ['::ffff:10.0.0.1'], 'public_address'],
    ['NAT64 of a private address', ['64:ff9b::c0a8:101'], 'public_address'],
    ['unique local', ['fd00::5'], 'public_address'],
    ['public and private mixed', ['93.184.216.34', '10.0.0.5'], 'public_address'],
    ['public IPv6 and loopback', ['2606:4700::1111', '::1'], 'public_address'],
    ['nothing', [], 'resolvable'],
  ];

  it.each(answers)('a name resolving to %s fails %s', async (_label, addresses, rule) => {
    const resolve: Resolver = async () => addresses;
    const outcome = await post(client({ resolve, connect: noConnection }), 'https://tool.northwind.example/hook');
    expect(outcome).toMatchObject({ kind: 'rule_failure', rule });
  });

  it('a name that does not resolve fails `resolvable` (a DNS failure is a connection failure of the rules)', async () => {
    const outcome = await post(client({ connect: noConnection }), 'https://nowhere.northwind.example/hook');
    expect(outcome).toMatchObject({ kind: 'rule_failure', rule: 'resolvable' });
    if (outcome.kind === 'rule_failure') expect(outcome.message).toContain('did not resolve: ENOTFOUND');
  });

  it('localhost is a name like any other with the switch off', async () => {
    const outcome = await post(client({ resolve: async () => ['127.0.0.1'], connect: noConnection }), 'https://localhost/hook');
    expect(outcome).toMatchObject({ kind: 'rule_failure', rule: 'public_address' });
  });

  it('a URL that is not set is a rule failure, with nothing resolved', async () => {
    let asked = 0;
    const c = client({ resolve: async () => (asked++, ['93.184.216.34']), connect: noConnection });
    expect(await post(c, null)).toMatchObject({ kind: 'rule_failure', rule: 'missing', message: 'locations_url is not set' });
    expect(await post(c, '  ')).toMatchObject({ kind: 'rule_failure', rule: 'missing' });
    expect(asked).toBe(0);
  });
});

describe('the connection goes to the vetted address', () => {
  it('a name that answers public, then private (DNS rebinding): one resolution, the socket goes to the public address', async () => {
    const answersInTurn = [['93.184.216.34'], ['127.0.0.1']];
    let asked = 0;
    const resolve: Resolver = async () => answersInTurn[Math.min(asked++, 1)] as string[];
    const seen: ConnectTarget[] = [];
    const c = client({ resolve, connect: loopbackConnector(seen) });
    const before = tool.to('/ok').length;
    // http:// is refused with the switch off, so the URL is https://; the loopback stand-in speaks plain
    // HTTP, which is fine: the point is where the socket was asked to go and what was sent over it.
    const outcome = await post(c, 'https://rebind.northwind.example:8443/ok');
    expect(asked).toBe(1);
    expect(seen).toEqual([{ hostname: 'rebind.northwind.example', port: 8443, tls: true, addresses: ['93.184.216.34'] }]);
    expect(outcome).toMatchObject({ kind: 'response', status: 200 });
    const received = tool.to('/ok').slice(before);
    expect(received).toHaveLength(1);
    expect(received[0]?.headers.host).toBe('rebind.northwind.example:8443');
  });

  it('every vetted address of a name is handed to the socket, and only those', async () => {
    const seen: ConnectTarget[] = [];
    const c = client({ resolve: async () => ['2606:4700::1111', '93.184.216.34', '93.184.216.34'], connect: loopbackConnector(seen) });
    await post(c, 'https://dual.northwind.example/ok');
    expect(seen[0]?.addresses).toEqual(['2606:4700::1111', '93.184.216.34']);
  });

  it('an IP literal connects to that address (the literal is the vetted address)', async () => {
    const seen: ConnectTarget[] = [];
    let asked = 0;
    const c = client({ resolve: async () => (asked++, ['10.0.0.1']), connect: loopbackConnector(seen) });
    await post(c, 'https://93.184.216.34/ok');
    expect(asked).toBe(0);
    expect(seen).toEqual([{ hostname: '93.184.216.34', port: 443, tls: true, addresses: ['93.184.216.34'] }]);
  });

  it('the default connector never consults DNS: it connects to the vetted address for any name', async () => {
    // `tool.invalid` cannot resolve (RFC 6761); the socket still reaches the loopback server it was pinned to.
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        {
          method: 'GET',
          path: '/ok',
          headers: { Host: 'tool.invalid' },
          createConnection: () => defaultConnector({ hostname: 'tool.invalid', port: tool.port, tls: false, addresses: ['127.0.0.1'] }),
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(200);
  });

  it('with the switch on, localhost goes to the address the resolver vetted, not to what the system would pick', async () => {
    const onV4 = client({ allowLoopback: true, resolve: async () => ['127.0.0.1'] });
    expect(await post(onV4, `http://localhost:${tool.port}/ok`)).toMatchObject({ kind: 'response', status: 200 });
    // The loopback tool listens on 127.0.0.1 only: pinned to ::1, the same URL cannot reach it.
    const onV6 = client({ allowLoopback: true, resolve: async () => ['::1'] });
    expect(await post(onV6, `http://localhost:${tool.port}/ok`)).toMatchObject({ kind: 'connection_failure' });
  });

  it('with the switch on, a name resolving to loopback is still refused unless it is localhost', async () => {
    const c = client({ allowLoopback: true, resolve: async () => ['127.0.0.1'], connect: noConnection });
    expect(await post(c, `http://dev.northwind.example:${tool.port}/ok`)).toMatchObject({ kind: 'rule_failure', rule: 'absolute_https' });
    expect(await post(c, `https://dev.northwind.example:${tool.port}/ok`)).toMatchObject({ kind: 'rule_failure', rule: 'public_address' });
    expect(await post(c, 'http://10.0.0.1/ok')).toMatchObject({ kind: 'rule_failure', rule: 'absolute_https' });
  });
});

describe('what goes out and what comes back (switch on, loopback tool)', () => {
  const loopback = () => client({ allowLoopback: true });

  it('a form POST of launch_data with a User-Agent, to the path and query of the URL', async () => {
    const before = tool.requests.length;
    const outcome = await post(loopback(), `${tool.url('/ok')}?course=1#frag`);
    expect(outcome).toMatchObject({ kind: 'response', status: 200 });
    if (outcome.kind === 'response') expect(outcome.body.toString()).toBe('accepted');
    const sent = tool.requests.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ method: 'POST', path: '/ok', body: 'launch_data=header.payload.signature' });
    expect(sent[0]?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(sent[0]?.headers['user-agent']).toMatch(/^ToolIntegrationService\//);
    expect(sent[0]?.headers.host).toBe(`127.0.0.1:${tool.port}`);
    expect(sent[0]?.headers.cookie).toBeUndefined();
  });

  it('a 204 is a response with an empty body', async () => {
    expect(await post(loopback(), tool.url('/no-content'))).toMatchObject({ kind: 'response', status: 204 });
  });

  it.each([
    ['/redirect', 302],
    ['/redirect-301', 301],
  ])('a redirect (%s) is handed back, never followed', async (path, status) => {
    const followed = tool.to('/elsewhere').length;
    const outcome = await post(loopback(), tool.url(path));
    expect(outcome).toMatchObject({ kind: 'redirect', status, location: '/elsewhere' });
    expect(tool.to('/elsewhere')).toHaveLength(followed);
  });

  it('an error status is a response with that status', async () => {
    expect(await post(loopback(), tool.url('/error'))).toMatchObject({ kind: 'response', status: 500 });
  });

  it('a tool that never answers is a timeout at the configured bound', async () => {
    const outcome = await post(loopback(), tool.url('/hang'), { timeoutMs: 300 });
    expect(outcome.kind).toBe('timeout');
    expect(outcome.elapsedMs).toBeGreaterThanOrEqual(290);
    expect(outcome.elapsedMs).toBeLessThan(2000);
  });

  it('a resolver that never answers counts against the same timeout', async () => {
    const c = client({ resolve: () => new Promise<never>(() => undefined), connect: noConnection });
    expect(await post(c, 'https://slow-dns.northwind.example/ok', { timeoutMs: 200 })).toMatchObject({ kind: 'timeout' });
  });

  it('a URL check on its own (settings, the launch page) gives up on a silent resolver', async () => {
    const c = client({ resolve: () => new Promise<never>(() => undefined), connect: noConnection });
    expect(await c.check('https://slow-dns.northwind.example/launch', 'callback_url', 100)).toEqual({
      ok: false,
      rule: 'resolvable',
      message: 'callback_url must resolve to a publicly routable host (its name did not resolve within 100 ms)',
    });
  });

  it('a body over the cap is not read', async () => {
    expect(await post(loopback(), tool.url('/big'))).toMatchObject({ kind: 'too_large', status: 200, limitBytes: 1_048_576 });
  });

  it('a closed port is a refused connection', async () => {
    const port = await closedPort();
    expect(await post(loopback(), `http://127.0.0.1:${port}/hook`)).toMatchObject({ kind: 'connection_failure', reason: 'refused', code: 'ECONNREFUSED' });
  });

  it('a TLS failure (https to a server that does not speak TLS) is a connection failure', async () => {
    expect(await post(loopback(), `https://127.0.0.1:${tool.port}/ok`)).toMatchObject({ kind: 'connection_failure', reason: 'tls' });
  });

  it('a connection closed before an answer is a connection failure', async () => {
    const server = net.createServer((socket) => socket.once('data', () => socket.destroy()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      expect(await post(loopback(), `http://127.0.0.1:${port}/hook`)).toMatchObject({ kind: 'connection_failure' });
    } finally {
      server.close();
    }
  });
});
