import { describe, expect, it } from 'vitest';
import { OrderedObject, parseOrderedJson, stringifyOrdered, toPlain } from '../../rules/ordered-json.js';

function keys(text: string): string[] {
  const parsed = parseOrderedJson(text);
  if (!parsed.ok || !(parsed.value instanceof OrderedObject)) throw new Error('expected an object');
  return parsed.value.entries().map(([k]) => k);
}

/** Deterministic pseudo-random numbers, so a failing case can be replayed. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function randomJson(rand: () => number, depth: number): unknown {
  const pick = Math.floor(rand() * (depth > 3 ? 5 : 7));
  const key = (): string => ['a', 'b', '10', '2', '0', '01', '-1', '__proto__', 'é', '\u2028', ' '][Math.floor(rand() * 11)] as string;
  switch (pick) {
    case 0: return null;
    case 1: return rand() < 0.5;
    case 2: return [0, -0, 1.5, -2e-7, 1e21, 123456789012345678901234567890, 5e-324][Math.floor(rand() * 7)];
    case 3: return ['', 'x', '"\\/\b\f\n\r\t', '\u0000\u001f', '\ud83d\ude00', 'é'][Math.floor(rand() * 6)];
    case 4: return 'text';
    case 5: return Array.from({ length: Math.floor(rand() * 4) }, () => randomJson(rand, depth + 1));
    default: {
      const out: Record<string, unknown> = {};
      for (let i = Math.floor(rand() * 5); i > 0; i--) {
        Object.defineProperty(out, key(), { value: randomJson(rand, depth + 1), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
  }
}

describe('parseOrderedJson', () => {
  it('keeps written key order where JSON.parse moves digit-only keys first', () => {
    const text = '{"b":1,"10":2,"a":3,"2":4}';
    expect(Object.keys(JSON.parse(text) as object)).toEqual(['2', '10', 'b', 'a']);
    expect(keys(text)).toEqual(['b', '10', 'a', '2']);
  });

  it('resolves a repeated key like JSON.parse: first position, last value', () => {
    const parsed = parseOrderedJson('{"a":1,"b":2,"a":3}');
    expect(parsed.ok && parsed.value instanceof OrderedObject && parsed.value.entries()).toEqual([
      ['a', 3],
      ['b', 2],
    ]);
  });

  it('agrees with JSON.parse on values for a seeded corpus of random documents', () => {
    const rand = prng(20260921);
    for (let n = 0; n < 500; n++) {
      const value = randomJson(rand, 0);
      const spaced = JSON.stringify(value, null, n % 3 === 0 ? '\t' : n % 3 === 1 ? 2 : undefined);
      for (const text of [JSON.stringify(value), spaced, ` \r\n${spaced}\n `]) {
        const parsed = parseOrderedJson(text);
        expect(parsed.ok).toBe(true);
        if (parsed.ok) expect(toPlain(parsed.value)).toEqual(JSON.parse(text));
      }
    }
  });

  it('keeps number edge cases identical to JSON.parse', () => {
    for (const text of ['-0', '1e400', '-1e400', '0.1', '1E+2', '1e-2', '123456789012345678901234567890', '5e-324', '2.2250738585072014e-308']) {
      const parsed = parseOrderedJson(text);
      expect(parsed.ok && Object.is(parsed.value, JSON.parse(text))).toBe(true);
    }
  });

  it('keeps lone surrogate escapes as JSON.parse does', () => {
    const parsed = parseOrderedJson('"\\ud800x"');
    expect(parsed.ok && parsed.value).toBe('\ud800x');
  });

  it.each([
    '', ' ', '{', '}', '[1,]', '{"a":1,}', '{"a" 1}', '{a:1}', "{'a':1}", '01', '1.', '.5', '-', '+1', '1e', '0x10',
    'tru', 'nul', 'NaN', 'Infinity', '"\t"', '"\\x"', '"\\u12"', '"abc', '[1 2]', '1 2', '\ufeff{}', '{"a":1}}', '[]]',
    '/* c */ {}', '{"a":1}\u00a0', 'undefined',
  ])('refuses %j exactly as JSON.parse does', (text) => {
    expect(() => JSON.parse(text)).toThrow();
    const parsed = parseOrderedJson(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.position).toBeGreaterThanOrEqual(0);
  });

  it('parses nesting far deeper than the call stack', () => {
    const depth = 200_000;
    const parsed = parseOrderedJson('['.repeat(depth) + ']'.repeat(depth));
    expect(parsed.ok).toBe(true);
  });

  it('keeps "__proto__" as an ordinary member in both representations', () => {
    const parsed = parseOrderedJson('{"__proto__":{"polluted":1}}');
    if (!parsed.ok) throw new Error('expected success');
    const plain = toPlain(parsed.value) as Record<string, unknown>;
    expect(Object.keys(plain)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(plain)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(stringifyOrdered(parsed.value)).toBe('{"__proto__":{"polluted":1}}');
  });

  it('stringifies in recorded order', () => {
    const parsed = parseOrderedJson('{ "b" : [1, {"9":null, "x":"\\u00e9"}], "10": true }');
    expect(parsed.ok && stringifyOrdered(parsed.value)).toBe('{"b":[1,{"9":null,"x":"é"}],"10":true}');
  });
});
