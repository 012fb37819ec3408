// Every resolver here is injected: no test resolves a name or opens a connection.

import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { checkEndpointUrl, classifyAddress, isWrittenAsParsed, pinnedLookup, type Resolver } from '../../rules/endpoint-url.js';

const PUBLIC_V4 = '93.184.215.14';
const PUBLIC_V6 = '2606:2800:21f:cb07:6820:80da:af6b:8b2c';

/** Answers from a fixed table and records every name asked, so tests can see what was resolved. */
function resolverOf(table: Record<string, readonly string[] | Error>): Resolver & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (hostname: string): Promise<readonly string[]> => {
    asked.push(hostname);
    const answer = table[hostname];
    if (answer === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    if (answer instanceof Error) throw answer;
    return answer;
  };
  return Object.assign(resolve, { asked });
}

const never: Resolver = async (hostname) => {
  throw new Error(`the resolver must not be asked about ${hostname}`);
};

const field = 'callback_url';

describe('classifyAddress', () => {
  it.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'this-network'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.0', 'shared'],
    ['100.127.255.255', 'shared'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.8', 'ietf-protocol'],
    ['192.0.2.10', 'documentation'],
    ['192.88.99.1', '6to4-relay'],
    ['192.168.0.1', 'private'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.51.100.1', 'documentation'],
    ['203.0.113.1', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.254', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::ffff:127.0.0.1', 'ipv4-mapped'],
    ['::ffff:7f00:1', 'ipv4-mapped'],
    ['::ffff:8.8.8.8', 'ipv4-mapped'],
    ['::127.0.0.1', 'ipv4-compatible'],
    ['::8.8.8.8', 'ipv4-compatible'],
    ['::ffff:0:8.8.8.8', 'ipv4-translated'],
    ['::1:0:0:1', 'reserved'],
    ['64:ff9b::808:808', 'nat64'],
    ['64:ff9b::127.0.0.1', 'nat64'],
    ['64:ff9b:1::a00:1', 'nat64'],
    ['100::1', 'discard'],
    ['2001::1', 'teredo'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    ['2001:2::1', 'benchmarking'],
    ['2001:10::1', 'ietf-protocol'],
    ['2001:1ff:ffff::1', 'ietf-protocol'],
    ['2001:db8::1', 'documentation'],
    ['2001:DB8:0:0:0:0:0:1', 'documentation'],
    ['2002:7f00:1::1', '6to4'],
    ['3fff::1', 'documentation'],
    ['3fff:fff:ffff::1', 'documentation'],
    ['5f00::1', 'srv6'],
    ['fc00::1', 'unique-local'],
    ['fdff:ffff::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['[fe80::1%25eth0]', 'link-local'],
    ['febf::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['1::', 'reserved'],
    ['4000::1', 'reserved'],
    ['e000::1', 'reserved'],
  ])('%s is %s', (ip, category) => {
    const c = classifyAddress(ip);
    expect(c.category).toBe(category);
    expect(c.publiclyRoutable).toBe(false);
  });

  it.each([
    ['8.8.8.8', '8.8.8.8'],
    ['1.1.1.1', '1.1.1.1'],
    ['9.255.255.255', '9.255.255.255'],
    ['11.0.0.0', '11.0.0.0'],
    ['100.63.255.255', '100.63.255.255'],
    ['100.128.0.0', '100.128.0.0'],
    ['172.15.255.255', '172.15.255.255'],
    ['172.32.0.0', '172.32.0.0'],
    ['192.0.1.1', '192.0.1.1'],
    ['192.0.3.1', '192.0.3.1'],
    ['192.169.0.1', '192.169.0.1'],
    ['198.17.255.255', '198.17.255.255'],
    ['198.20.0.0', '198.20.0.0'],
    ['223.255.255.255', '223.255.255.255'],
    [PUBLIC_V6, PUBLIC_V6],
    ['2001:200::1', '2001:200::1'],
    ['2001:db7:ffff::1', '2001:db7:ffff::1'],
    ['2001:db9::1', '2001:db9::1'],
    ['2003::1', '2003::1'],
    ['3ffe::1', '3ffe::1'],
    ['3fff:1000::1', '3fff:1000::1'],
    ['2A00:1450:4001:0000:0000:0000:0000:200E', '2a00:1450:4001::200e'],
  ])('%s is public (canonically %s)', (ip, canonical) => {
    expect(classifyAddress(ip)).toMatchObject({ category: 'public', publiclyRoutable: true, address: canonical });
  });

  it.each([
    ['2130706433', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['017700000001', '127.0.0.1'],
    ['0xa.0.0.1', '10.0.0.1'],
    ['0', '0.0.0.0'],
  ])('normalises the IPv4 spelling %s to %s before classifying', (ip, canonical) => {
    const c = classifyAddress(ip);
    expect(c.address).toBe(canonical);
    expect(c.publiclyRoutable).toBe(false);
  });

  it.each(['', 'example.com', '1.2.3.4/8', '1.2.3.4.5', '256.0.0.1', '1::2::3', '1:2:3:4:5:6:7:8:9', '12345::', ':1::', '1.2.3.4::', 'fe80::1%'])(
    '%j is not an address',
    (ip) => {
      const c = classifyAddress(ip);
      if (ip === 'fe80::1%') {
        // An empty zone still names the address before it.
        expect(c.category).toBe('link-local');
        return;
      }
      expect(c).toMatchObject({ category: 'invalid', address: null, publiclyRoutable: false });
    },
  );

  it('describes categories for messages', () => {
    expect(classifyAddress('127.0.0.1').description).toBe('loopback');
    expect(classifyAddress('100.64.1.1').description).toBe('CGNAT shared address space');
    expect(classifyAddress('::ffff:7f00:1').description).toBe('an IPv4-mapped IPv6 address');
  });
});

describe('checkEndpointUrl: scheme and form', () => {
  it.each([
    'http://tool.example/launch',
    '/launch',
    'tool.example/launch',
    '//tool.example/launch',
    'ftp://tool.example/',
    'ws://tool.example/',
    'wss://tool.example/',
    'file:///etc/passwd',
    'javascript:alert(1)',
    'data:text/plain,hi',
    'https://',
    '',
    ' https://tool.example/',
    'https://tool.example/ ',
    'https://tool\t.example/',
    'https://tool.example/\nx',
    'https://tool.example:99999/',
    'https://[fe80::1%25eth0]/',
    'https://1.2.3.999/',
  ])('refuses %j as not an absolute https:// URL', async (url) => {
    expect(await checkEndpointUrl(url, { field, resolve: never })).toEqual({
      ok: false,
      rule: 'absolute_https',
      message: 'callback_url must be an absolute https:// URL',
    });
  });

  it('refuses a value that is not a string', async () => {
    expect((await checkEndpointUrl(42, { field, resolve: never })).ok).toBe(false);
    expect((await checkEndpointUrl(null, { field, resolve: never })).ok).toBe(false);
  });

  it.each(['https://user:pass@tool.example/', 'https://user@tool.example/', 'https://:secret@tool.example/'])(
    'refuses credentials in %s',
    async (url) => {
      expect(await checkEndpointUrl(url, { field, resolve: never })).toEqual({
        ok: false,
        rule: 'no_credentials',
        message: 'callback_url must not contain credentials',
      });
    },
  );

  it('names the field it checks', async () => {
    const result = await checkEndpointUrl('http://tool.example/', { field: 'locations_url', resolve: never });
    expect(result).toMatchObject({ message: 'locations_url must be an absolute https:// URL' });
  });
});

describe('checkEndpointUrl: addresses', () => {
  it('accepts a public host and returns the normalised URL and every vetted address', async () => {
    const resolve = resolverOf({ 'tool.example': [PUBLIC_V4, PUBLIC_V6] });
    expect(await checkEndpointUrl('https://tool.example:8443/lti/launch?x=1', { field, resolve })).toEqual({
      ok: true,
      url: 'https://tool.example:8443/lti/launch?x=1',
      hostname: 'tool.example',
      port: 8443,
      addresses: [PUBLIC_V4, PUBLIC_V6],
    });
    expect(resolve.asked).toEqual(['tool.example']);
  });

  it('reports the default port', async () => {
    const result = await checkEndpointUrl('https://tool.example/', { field, resolve: resolverOf({ 'tool.example': [PUBLIC_V4] }) });
    expect(result).toMatchObject({ ok: true, port: 443 });
  });

  it.each([
    ['https://127.0.0.1/', '127.0.0.1 is loopback'],
    ['https://10.1.2.3/', '10.1.2.3 is private'],
    ['https://169.254.169.254/latest/meta-data', '169.254.169.254 is link-local'],
    ['https://100.64.0.1/', '100.64.0.1 is CGNAT shared address space'],
    ['https://192.0.2.1/', '192.0.2.1 is reserved for documentation'],
    ['https://224.0.0.1/', '224.0.0.1 is multicast'],
    ['https://255.255.255.255/', '255.255.255.255 is the broadcast address'],
    ['https://[::1]/', '::1 is loopback'],
    ['https://[::]/', ':: is unspecified'],
    ['https://[::ffff:7f00:1]/', '::ffff:7f00:1 is an IPv4-mapped IPv6 address'],
    ['https://[fe80::1]/', 'fe80::1 is link-local'],
    ['https://[fd00::1]/', 'fd00::1 is unique local'],
    ['https://[2001:db8::1]/', '2001:db8::1 is reserved for documentation'],
    ['https://[2002:7f00:1::]/', '2002:7f00:1:: is a 6to4 address'],
    ['https://[2001::1]/', '2001::1 is a Teredo address'],
    ['https://[ff02::1]/', 'ff02::1 is multicast'],
  ])('refuses the IP literal in %s without resolving (%s)', async (url, why) => {
    expect(await checkEndpointUrl(url, { field, resolve: never })).toEqual({
      ok: false,
      rule: 'public_address',
      message: `callback_url must resolve only to publicly routable addresses (${why})`,
    });
  });

  it('accepts public IP literals without resolving, returning them as the addresses', async () => {
    expect(await checkEndpointUrl(`https://${PUBLIC_V4}/x`, { field, resolve: never })).toMatchObject({
      ok: true,
      hostname: PUBLIC_V4,
      addresses: [PUBLIC_V4],
    });
    expect(await checkEndpointUrl('https://[2606:4700:4700::1111]/', { field, resolve: never })).toMatchObject({
      ok: true,
      hostname: '2606:4700:4700::1111',
      addresses: ['2606:4700:4700::1111'],
    });
    expect(await checkEndpointUrl('https://8.8.8.8', { field, resolve: never })).toMatchObject({
      ok: true,
      url: 'https://8.8.8.8/',
      addresses: ['8.8.8.8'],
    });
  });

  // H-04: a URL is judged as written. Any URL the WHATWG parser rewrites (other than by adding the `/` of
  // an empty path) is refused with the invalid-URL message, before any address is looked at.
  it.each([
    ...['https://2130706433/', 'https://0x7f000001/', 'https://0177.0.0.1/', 'https://127.1/', 'https://0x7f.1:8443/', 'https://127.0.0.1./', 'https://%31%32%37.0.0.1/', 'https://０x7f000001/', 'https://0/', 'https://167772161/', 'https://[0:0:0:0:0:0:0:1]/', 'https://[::ffff:127.0.0.1]/', 'https://[0:0:0:0:0:ffff:127.0.0.1]/', 'https://[::ffff:8.8.8.8]/', 'https://[::127.0.0.1]/', 'https://[64:ff9b::127.0.0.1]/'],
    'https://134744072/',
    'https:/tool.example/launch',
    'https:tool.example/launch',
    'https://tool.example\\launch',
    'https://tool.example\\@evil.example/',
    'https://user\\@tool.example/',
    'https://ｔｏｏｌ.example/',
    'https://ⓣⓞⓞⓛ.example/',
    'https://ëxample.com/',
    'HTTPS://tool.example/',
    'https://Tool.Example/',
    'https://tool.example:443/',
    'https://tool.example/a b',
    'https://tool.example/ä',
    'https://tool.example/./launch',
    'https://tool.example/x/../launch',
    'https://tool.example?',
  ])('refuses %s, which the parser rewrites (H-04)', async (url) => {
    expect(await checkEndpointUrl(url, { field, resolve: never })).toEqual({
      ok: false,
      rule: 'absolute_https',
      message: 'callback_url must be an absolute https:// URL',
    });
    expect(isWrittenAsParsed(url)).toBe(false);
  });

  it.each(['https://tool.example', 'https://tool.example/', 'https://tool.example/launch?x=1#top', 'https://xn--xample-ova.com/', 'https://[2606:4700:4700::1111]/'])(
    'accepts %s as written (H-04)',
    (url) => {
      expect(isWrittenAsParsed(url)).toBe(true);
    },
  );

  it.each<[string, string, readonly string[], string]>([
    ['a name resolving to loopback', 'https://localhost/', ['127.0.0.1'], '127.0.0.1 is loopback'],
    ['a name resolving to ::1', 'https://localhost/', ['::1'], '::1 is loopback'],
    ['a trailing-dot name resolving privately', 'https://intranet.example./', ['10.0.0.8'], '10.0.0.8 is private'],
    ['a single-label name resolving privately', 'https://intranet/', ['192.168.1.20'], '192.168.1.20 is private'],
    ['a public and a private answer', 'https://tool.example/', [PUBLIC_V4, '10.0.0.1'], '10.0.0.1 is private'],
    ['a private answer after a public one in IPv6', 'https://tool.example/', [PUBLIC_V6, 'fd12:3456::1'], 'fd12:3456::1 is unique local'],
    ['a mapped IPv6 answer', 'https://tool.example/', ['::ffff:10.0.0.1'], '::ffff:a00:1 is an IPv4-mapped IPv6 address'],
    ['a NAT64 answer', 'https://tool.example/', ['64:ff9b::a00:1'], '64:ff9b::a00:1 is a NAT64 address'],
    ['a link-local answer with a zone', 'https://tool.example/', ['fe80::1%eth0'], 'fe80::1 is link-local'],
    ['a cloud metadata answer', 'https://metadata.example/', ['169.254.169.254'], '169.254.169.254 is link-local'],
    ['a CGNAT answer', 'https://tool.example/', ['100.100.100.100'], '100.100.100.100 is CGNAT shared address space'],
    ['an answer that is not an address', 'https://tool.example/', ['tool.internal'], 'tool.internal is not an IP address'],
  ])('refuses %s', async (_name, url, answers, why) => {
    const hostname = new URL(url).hostname;
    const resolve = resolverOf({ [hostname]: answers });
    expect(await checkEndpointUrl(url, { field, resolve })).toEqual({
      ok: false,
      rule: 'public_address',
      message: `callback_url must resolve only to publicly routable addresses (${why})`,
    });
    expect(resolve.asked).toEqual([hostname]);
  });

  it('passes trailing-dot and single-label names to the resolver, which decides', async () => {
    const resolve = resolverOf({ 'tool.example.': [PUBLIC_V4], tool: [PUBLIC_V4] });
    expect(await checkEndpointUrl('https://tool.example./', { field, resolve })).toMatchObject({ ok: true, hostname: 'tool.example.' });
    expect(await checkEndpointUrl('https://tool/', { field, resolve })).toMatchObject({ ok: true, hostname: 'tool' });
  });

  it('resolves internationalised names written in their ASCII form (the Unicode form is refused, H-04)', async () => {
    const resolve = resolverOf({ 'xn--xample-ova.com': [PUBLIC_V4] });
    expect(await checkEndpointUrl('https://xn--xample-ova.com/', { field, resolve })).toMatchObject({ ok: true, url: 'https://xn--xample-ova.com/' });
  });

  it('refuses a name that does not resolve or resolves to nothing', async () => {
    expect(await checkEndpointUrl('https://missing.example/', { field, resolve: resolverOf({}) })).toEqual({
      ok: false,
      rule: 'resolvable',
      message: 'callback_url must resolve to a publicly routable host (missing.example did not resolve: ENOTFOUND)',
    });
    expect(await checkEndpointUrl('https://empty.example/', { field, resolve: resolverOf({ 'empty.example': [] }) })).toEqual({
      ok: false,
      rule: 'resolvable',
      message: 'callback_url must resolve to a publicly routable host (empty.example has no addresses)',
    });
  });

  it('carries the addresses it vetted, so a rebinding resolver cannot change where the call goes', async () => {
    const answers = [[PUBLIC_V4], ['127.0.0.1']];
    let calls = 0;
    const rebinding: Resolver = async () => answers[Math.min(calls++, answers.length - 1)] as string[];
    const first = await checkEndpointUrl('https://rebind.example/hook', { field, resolve: rebinding });
    expect(first).toEqual({ ok: true, url: 'https://rebind.example/hook', hostname: 'rebind.example', port: 443, addresses: [PUBLIC_V4] });
    expect(calls).toBe(1);
    // Asked again, the same resolver now answers loopback: a second resolution at connect time
    // would have reached it, which is why the caller connects to first.addresses instead.
    const second = await checkEndpointUrl('https://rebind.example/hook', { field, resolve: rebinding });
    expect(second).toMatchObject({ ok: false, rule: 'public_address', message: 'callback_url must resolve only to publicly routable addresses (127.0.0.1 is loopback)' });
    expect(calls).toBe(2);
  });

  it('deduplicates and canonicalises the vetted addresses', async () => {
    const resolve = resolverOf({ 'tool.example': [PUBLIC_V4, PUBLIC_V4, '2606:4700:4700:0:0:0:0:1111'] });
    expect(await checkEndpointUrl('https://tool.example/', { field, resolve })).toMatchObject({
      addresses: [PUBLIC_V4, '2606:4700:4700::1111'],
    });
  });
});

describe('checkEndpointUrl: the development switch allowLoopbackHttp', () => {
  const dev = { field, allowLoopbackHttp: true } as const;

  it.each([
    ['http://127.0.0.1:3000/launch', '127.0.0.1', 3000],
    ['http://[::1]:3000/launch', '::1', 3000],
    ['http://127.0.0.1/launch', '127.0.0.1', 80],
    ['https://127.0.0.1:8443/launch', '127.0.0.1', 8443],
  ])('accepts %s', async (url, address, port) => {
    expect(await checkEndpointUrl(url, { ...dev, resolve: never })).toMatchObject({ ok: true, addresses: [address], port });
  });

  it('accepts localhost only when every answer is loopback', async () => {
    const loop = resolverOf({ localhost: ['127.0.0.1', '::1'] });
    expect(await checkEndpointUrl('http://localhost:5173/', { ...dev, resolve: loop })).toMatchObject({
      ok: true,
      url: 'http://localhost:5173/',
      addresses: ['127.0.0.1', '::1'],
    });
    const hijacked = resolverOf({ localhost: ['127.0.0.1', '10.0.0.5'] });
    expect(await checkEndpointUrl('http://localhost:5173/', { ...dev, resolve: hijacked })).toMatchObject({
      ok: false,
      rule: 'public_address',
      message: 'callback_url must resolve only to publicly routable addresses (10.0.0.5 is private)',
    });
  });

  it.each([
    ['http://127.0.0.2:3000/', 'absolute_https'],
    ['http://localhost.:3000/', 'absolute_https'],
    ['http://tool.localhost:3000/', 'absolute_https'],
    ['http://10.0.0.1:3000/', 'absolute_https'],
    ['http://tool.example/', 'absolute_https'],
    ['http://[::ffff:127.0.0.1]:3000/', 'absolute_https'],
    ['https://127.0.0.2/', 'public_address'],
    ['https://10.0.0.1/', 'public_address'],
    ['https://[::ffff:7f00:1]/', 'public_address'],
    ['https://[::ffff:127.0.0.1]/', 'absolute_https'],
    ['http://user:pw@127.0.0.1:3000/', 'no_credentials'],
  ])('still refuses %s', async (url, rule) => {
    const resolve = resolverOf({ 'localhost.': ['127.0.0.1'], 'tool.localhost': ['127.0.0.1'], 'tool.example': [PUBLIC_V4] });
    expect(await checkEndpointUrl(url, { ...dev, resolve })).toMatchObject({ ok: false, rule });
  });

  it('is off unless asked for', async () => {
    expect(await checkEndpointUrl('http://127.0.0.1:3000/', { field, resolve: never })).toMatchObject({ ok: false, rule: 'absolute_https' });
    expect(await checkEndpointUrl('https://127.0.0.1:3000/', { field, resolve: never })).toMatchObject({ ok: false, rule: 'public_address' });
    expect(await checkEndpointUrl('http://localhost:3000/', { field, resolve: never, allowLoopbackHttp: false })).toMatchObject({
      ok: false,
      rule: 'absolute_https',
    });
  });
});

describe('pinnedLookup', () => {
  type Answer = { err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family: number | undefined };
  function ask(addresses: readonly string[], options: { family?: number | 'IPv4' | 'IPv6'; all?: boolean }): Answer {
    let answer: Answer | undefined;
    pinnedLookup(addresses)('tool.example', options, (err, address, family) => {
      answer = { err, address, family };
    });
    if (!answer) throw new Error('the lookup did not answer synchronously');
    return answer;
  }

  it('answers with the vetted addresses only, honouring family and all', () => {
    const vetted = [PUBLIC_V4, PUBLIC_V6];
    expect(ask(vetted, {})).toEqual({ err: null, address: PUBLIC_V4, family: 4 });
    expect(ask(vetted, { family: 6 })).toEqual({ err: null, address: PUBLIC_V6, family: 6 });
    expect(ask(vetted, { family: 'IPv4' })).toEqual({ err: null, address: PUBLIC_V4, family: 4 });
    expect(ask(vetted, { all: true })).toEqual({
      err: null,
      address: [
        { address: PUBLIC_V4, family: 4 },
        { address: PUBLIC_V6, family: 6 },
      ],
      family: undefined,
    });
  });

  it('fails rather than falling back to DNS when no vetted address fits', () => {
    const answer = ask([PUBLIC_V4], { family: 6 });
    expect(answer.err?.code).toBe('ENOTFOUND');
  });
});
