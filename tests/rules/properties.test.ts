/**
 * Property-based tests (fast-check) of the pure rules, beside their example tests: what must hold for every
 * input, not just the ones someone thought of. The endpoint URL properties hold whether the rule repairs a URL
 * the WHATWG parser normalises or refuses it (both readings are under discussion, decision KIT-07): they speak
 * only of what an accepted URL is and of what is never accepted.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkEndpointUrl, classifyAddress, type Resolver } from '../../rules/endpoint-url.js';
import { applyPatch, type JsonValue } from '../../rules/json-patch.js';
import { compactJsonBytes, rowTooLarge } from '../../server/contracts/2026-09-21/rows.js';
import { MEMBER_ROW_MAX_BYTES, rowMaxBytes, SHARED_ROW_MAX_BYTES } from '../../server/store/repos/rows.js';

const RUNS = { numRuns: 300 };

// Addresses across every category: public, private, loopback, documentation, mapped IPv6, ...
const ipv4 = fc.ipV4();
const ipv6 = fc.ipV6();
const anyAddress = fc.oneof(ipv4, ipv6, fc.constantFrom('127.0.0.1', '10.1.2.3', '192.168.0.1', '169.254.169.254', '::1', '::ffff:10.0.0.1', 'fe80::1', '8.8.8.8', '2001:4860::8888'));
const resolverOf = (addresses: readonly string[]): Resolver => async () => addresses;
// Hyphens in a label's third and fourth places are reserved for IDNA (RFC 5891 §4.2.3.1): `xn--0` is an
// invalid A-label that URL parsing refuses before any address rule applies, so such labels are not host names.
const hostLabel = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}[a-z0-9]$/).filter((label) => label.slice(2, 4) !== '--');
const hostName = fc.tuple(hostLabel, fc.constantFrom('example', 'quiz', 'tool'), fc.constantFrom('com', 'edu', 'org')).map((parts) => parts.join('.'));
// Paths as the WHATWG parser keeps them: a path it would rewrite (`/.`, `/a/../b`, a character it
// percent-encodes) is refused as written (H-04) before any other rule, which other properties cover.
const keptAsWritten = (path: string): boolean => {
  const url = new URL(`https://h.example${path}`);
  return path === '' || `${url.pathname}${url.search}${url.hash}` === path;
};
const pathPart = fc.webPath().filter(keptAsWritten);

describe('endpoint URL rules (properties)', () => {
  it('never throws, whatever the input and whatever the resolver answers', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string(), fc.webUrl(), fc.anything()), fc.array(anyAddress, { maxLength: 3 }), fc.boolean(), async (url, answers, dev) => {
        const result = await checkEndpointUrl(url, { resolve: resolverOf(answers), allowLoopbackHttp: dev });
        expect(typeof result.ok).toBe('boolean');
      }),
      RUNS,
    );
  });

  it('an accepted URL is https (or dev loopback http), has no credentials, and connects only to public addresses it vetted', async () => {
    await fc.assert(
      fc.asyncProperty(fc.webUrl({ withQueryParameters: true, withFragments: true }), fc.array(anyAddress, { minLength: 1, maxLength: 3 }), async (url, answers) => {
        const result = await checkEndpointUrl(url, { resolve: resolverOf(answers) });
        if (!result.ok) return;
        const parsed = new URL(result.url);
        expect(parsed.protocol).toBe('https:');
        expect(parsed.username + parsed.password).toBe('');
        expect(result.addresses.length).toBeGreaterThan(0);
        for (const address of result.addresses) expect(classifyAddress(address).publiclyRoutable).toBe(true);
      }),
      RUNS,
    );
  });

  it('an accepted URL is accepted again as it was stored, unchanged (the stored URL is a fixed point)', async () => {
    await fc.assert(
      fc.asyncProperty(hostName, pathPart, fc.constantFrom('8.8.8.8', '1.1.1.1', '2606:4700::1111'), async (host, path, address) => {
        const first = await checkEndpointUrl(`https://${host}${path}`, { resolve: resolverOf([address]) });
        if (!first.ok) return;
        const again = await checkEndpointUrl(first.url, { resolve: resolverOf([address]) });
        expect(again).toMatchObject({ ok: true, url: first.url });
      }),
      RUNS,
    );
  });

  it('refuses every URL whose host resolves to any address that is not publicly routable', async () => {
    const privateAddress = fc.constantFrom('127.0.0.1', '10.0.0.7', '172.16.5.4', '192.168.1.1', '169.254.169.254', '100.64.0.1', '::1', 'fc00::1', 'fe80::1', '::ffff:127.0.0.1', '0.0.0.0');
    await fc.assert(
      fc.asyncProperty(hostName, pathPart, privateAddress, fc.array(fc.constantFrom('8.8.8.8', '2606:4700::1111'), { maxLength: 2 }), async (host, path, bad, good) => {
        const result = await checkEndpointUrl(`https://${host}${path}`, { resolve: resolverOf([...good, bad]) });
        expect(result).toMatchObject({ ok: false, rule: 'public_address' });
      }),
      RUNS,
    );
  });

  it('refuses plain http to any host but the development loopback names, and any URL with credentials', async () => {
    await fc.assert(
      fc.asyncProperty(hostName, pathPart, fc.stringMatching(/^[a-z]{1,8}$/), async (host, path, user) => {
        const resolve = resolverOf(['8.8.8.8']);
        expect(await checkEndpointUrl(`http://${host}${path}`, { resolve, allowLoopbackHttp: true })).toMatchObject({ ok: false, rule: 'absolute_https' });
        expect(await checkEndpointUrl(`https://${user}@${host}${path}`, { resolve })).toMatchObject({ ok: false, rule: 'no_credentials' });
      }),
      RUNS,
    );
  });
});

describe('IP address classification (properties)', () => {
  it('never throws, and anything it cannot read is invalid and not public', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const c = classifyAddress(text);
        if (c.address === null) expect(c).toMatchObject({ category: 'invalid', publiclyRoutable: false, family: null });
      }),
      RUNS,
    );
  });

  it('is stable on its own canonical form: same address, family, category and verdict', () => {
    fc.assert(
      fc.property(anyAddress, (text) => {
        const c = classifyAddress(text);
        expect(c.address).not.toBeNull();
        const again = classifyAddress(c.address as string);
        expect(again).toEqual(c);
      }),
      RUNS,
    );
  });

  it('gives IPv4 addresses family 4 and their dotted-decimal text, and never calls the private ranges public', () => {
    const octet = fc.integer({ min: 0, max: 255 });
    const privateV4 = fc.oneof(
      fc.tuple(fc.constant(10), octet, octet, octet),
      fc.tuple(fc.constant(127), octet, octet, octet),
      fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), octet, octet),
      fc.tuple(fc.constant(192), fc.constant(168), octet, octet),
      fc.tuple(fc.constant(169), fc.constant(254), octet, octet),
    );
    fc.assert(
      fc.property(privateV4, (parts) => {
        const text = parts.join('.');
        const c = classifyAddress(text);
        expect(c).toMatchObject({ address: text, family: 4, publiclyRoutable: false });
        // The same address written as IPv4-mapped IPv6 is no more reachable.
        expect(classifyAddress(`::ffff:${text}`).publiclyRoutable).toBe(false);
      }),
      RUNS,
    );
  });
});

// JSON objects as rows hold them (no undefined, no -0, which JSON cannot carry).
const jsonValue = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v)) as JsonValue);
const jsonObject = fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }).filter((k) => !k.includes('/') && !k.includes('~')), jsonValue, { maxKeys: 6 });
const freshKey = (doc: Record<string, unknown>) => fc.string({ minLength: 1, maxLength: 8 }).filter((k) => !(k in doc) && !k.includes('/') && !k.includes('~') && k !== '__proto__');

describe('JSON Patch (properties)', () => {
  it('an empty patch changes nothing, and no patch mutates its input', () => {
    fc.assert(
      fc.property(jsonObject, fc.array(fc.record({ op: fc.constantFrom('add', 'remove', 'replace', 'test'), path: fc.constantFrom('/a', '/b/c', '/0', ''), value: jsonValue })), (doc, ops) => {
        const before = structuredClone(doc);
        expect(applyPatch(doc, [])).toEqual({ ok: true, doc: before });
        applyPatch(doc, ops);
        expect(doc).toEqual(before);
      }),
      RUNS,
    );
  });

  it('add of a new key then remove of it gives back the document; a test of the value just added passes', () => {
    fc.assert(
      fc.property(jsonObject.chain((doc) => fc.tuple(fc.constant(doc), freshKey(doc), jsonValue)), ([doc, key, value]) => {
        const path = `/${key}`;
        const added = applyPatch(doc, [{ op: 'add', path, value }]);
        expect(added.ok).toBe(true);
        if (!added.ok) return;
        expect((added.doc as Record<string, unknown>)[key]).toEqual(value);
        expect(applyPatch(added.doc, [{ op: 'test', path, value }]).ok).toBe(true);
        expect(applyPatch(added.doc, [{ op: 'remove', path }])).toEqual({ ok: true, doc });
      }),
      RUNS,
    );
  });

  it('a patch that fails part-way applies nothing: the answer is an error naming the failed operation', () => {
    fc.assert(
      fc.property(jsonObject.chain((doc) => fc.tuple(fc.constant(doc), freshKey(doc), freshKey(doc), jsonValue)), ([doc, key, missing, value]) => {
        fc.pre(key !== missing);
        const result = applyPatch(doc, [
          { op: 'add', path: `/${key}`, value },
          { op: 'remove', path: `/${missing}` },
        ]);
        expect(result.ok).toBe(false);
        if (result.ok) return;
        expect(result.error.index).toBe(1);
        expect(result.error.message).toMatch(/^patch operation 1 \(remove /);
      }),
      RUNS,
    );
  });
});

describe('row size (properties)', () => {
  it('counts the UTF-8 bytes of the compact JSON, never fewer than its characters', () => {
    fc.assert(
      fc.property(jsonObject, (row) => {
        const text = JSON.stringify(row);
        expect(compactJsonBytes(row)).toBe(new TextEncoder().encode(text).length);
        expect(compactJsonBytes(row)).toBeGreaterThanOrEqual(text.length);
      }),
      RUNS,
    );
  });

  it('the refusal states the measured size and the limit of the row kind, in the contract words', () => {
    fc.assert(
      fc.property(fc.constantFrom('member', 'member_location', 'context', 'location') as fc.Arbitrary<'member' | 'member_location' | 'context' | 'location'>, fc.integer({ min: 1, max: 1_000_000 }), (kind, over) => {
        const limit = rowMaxBytes(kind);
        expect(limit).toBe(kind.startsWith('member') ? MEMBER_ROW_MAX_BYTES : SHARED_ROW_MAX_BYTES);
        const problem = rowTooLarge(kind, limit + over);
        expect(problem.status).toBe(422);
        expect(problem.code).toBe('row_too_large');
        expect(problem.detail).toMatch(new RegExp(`^row too large: ${limit + over} bytes of compact JSON, at most ${limit} \\(${kind.startsWith('member') ? '512 KB' : '1 MB'}\\) for a ${kind} row$`));
      }),
      RUNS,
    );
  });
});
