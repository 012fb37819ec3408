/**
 * `TRUST_PROXY` (decisions H-20, H-21) and the metrics' settings (OPS-11) as the start reads them: Express's
 * `trust proxy` values but `true`, one clear line naming the variable for a bad one; and the client address
 * each setting resolves (the HTTP behaviour is tested over real HTTP in throttle.test.ts).
 */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../server/config.js';
import { clientAddressResolver } from '../../../server/http/client-address.js';

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

function requestFrom(peer: string, forwarded?: string): IncomingMessage {
  return { socket: { remoteAddress: peer }, headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded }, connection: { remoteAddress: peer } } as unknown as IncomingMessage;
}

describe('TRUST_PROXY', () => {
  it('reads named ranges, addresses and CIDRs (comma-separated) and hop counts; unset trusts none', () => {
    expect(loadConfig({}).trustProxy).toEqual({ kind: 'none' });
    expect(loadConfig({ TRUST_PROXY: 'loopback' }).trustProxy).toEqual({ kind: 'addresses', addresses: ['loopback'] });
    expect(loadConfig({ TRUST_PROXY: ' Loopback, 10.0.0.0/8 ,192.168.1.5, fd00::/8' }).trustProxy).toEqual({
      kind: 'addresses',
      addresses: ['loopback', '10.0.0.0/8', '192.168.1.5', 'fd00::/8'],
    });
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toEqual({ kind: 'hops', hops: 2 });
  });

  it('refuses true, a bad address and an out-of-range hop count, in one line naming the variable', () => {
    for (const [value, says] of [
      ['true', 'a client cannot choose its own address'],
      ['*', 'a client cannot choose its own address'],
      ['10.0.0.0/33', '"10.0.0.0/33" is not an IP address or CIDR range'],
      ['loopback,proxy.example.edu', '"proxy.example.edu" is not an IP address or CIDR range'],
      ['0', 'a hop count of 0 is out of range'],
      ['99', 'a hop count of 99 is out of range'],
    ] as const) {
      const problems = problemsOf({ TRUST_PROXY: value });
      expect(problems, value).toHaveLength(1);
      expect(problems[0]).toMatch(/^TRUST_PROXY must be loopback, linklocal, uniquelocal, IP addresses or CIDR ranges/);
      expect(problems[0]).toContain(says);
      expect(problems[0]).not.toContain('\n');
    }
  });

  it('names the client: the peer without trust; behind trusted proxies, the nearest address they did not add', () => {
    const none = clientAddressResolver({ kind: 'none' });
    expect(none(requestFrom('127.0.0.1', '203.0.113.7'))).toBe('127.0.0.1');
    const loopback = clientAddressResolver({ kind: 'addresses', addresses: ['loopback'] });
    expect(loopback(requestFrom('127.0.0.1', '203.0.113.7'))).toBe('203.0.113.7');
    // A client's own X-Forwarded-For entry to the left of what the proxy appended is not believed.
    expect(loopback(requestFrom('127.0.0.1', '198.51.100.1, 203.0.113.7'))).toBe('203.0.113.7');
    // A peer that is not a trusted proxy is the client, whatever it sends.
    expect(loopback(requestFrom('192.0.2.10', '203.0.113.7'))).toBe('192.0.2.10');
    const oneHop = clientAddressResolver({ kind: 'hops', hops: 1 });
    expect(oneHop(requestFrom('10.1.2.3', '198.51.100.1, 203.0.113.7'))).toBe('203.0.113.7');
    const cidr = clientAddressResolver({ kind: 'addresses', addresses: ['10.0.0.0/8'] });
    expect(cidr(requestFrom('10.1.2.3', '203.0.113.7, 10.9.9.9'))).toBe('203.0.113.7');
  });
});

describe('METRICS, METRICS_PORT, METRICS_HOST', () => {
  it('metrics on by default with no port of their own; the port binds to HOST unless METRICS_HOST says', () => {
    expect(loadConfig({})).toMatchObject({ metrics: true, metricsPort: null, metricsHost: '127.0.0.1' });
    expect(loadConfig({ HOST: '0.0.0.0', METRICS_PORT: '9464' })).toMatchObject({ metricsPort: 9464, metricsHost: '0.0.0.0' });
    expect(loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '10.0.0.5' })).toMatchObject({ metricsHost: '10.0.0.5' });
    expect(loadConfig({ METRICS: 'off' }).metrics).toBe(false);
  });

  it('refuses a bad port, the service port, and a port with the metrics off', () => {
    expect(problemsOf({ METRICS_PORT: 'x' })).toEqual(['METRICS_PORT must be a whole number, got "x"']);
    expect(problemsOf({ PORT: '3000', METRICS_PORT: '3000' })).toEqual(['METRICS_PORT must differ from PORT (both 3000)']);
    expect(problemsOf({ METRICS: 'off', METRICS_PORT: '9464' })).toEqual(['METRICS_PORT is set but METRICS is off: there would be nothing to serve on it']);
  });
});
