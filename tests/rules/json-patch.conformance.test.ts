// The public RFC 6902 conformance suite (json-patch/json-patch-tests, vendored under fixtures/).
// The rules must pass every enabled case as RFC 6902 defines it; the contract's "missing
// intermediate objects are created by an add" is an option, and its divergence from the suite is
// pinned here so that it cannot grow unnoticed.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { applyPatch, type JsonValue } from '../../rules/json-patch.js';

interface SuiteCase {
  comment?: string;
  doc?: JsonValue;
  patch?: unknown;
  expected?: JsonValue;
  error?: string;
  disabled?: boolean;
}

function load(file: string): Array<SuiteCase & { id: string }> {
  const url = new URL(`./fixtures/json-patch-tests/${file}`, import.meta.url);
  const cases = JSON.parse(readFileSync(url, 'utf8')) as SuiteCase[];
  return cases.map((c, i) => ({ ...c, id: `${file}#${i}${c.comment ? ` ${c.comment}` : ''}` }));
}

const all = [...load('tests.json'), ...load('spec_tests.json')];
const enabled = all.filter((c) => c.disabled !== true && c.patch !== undefined && c.doc !== undefined);
const withExpected = enabled.filter((c) => Object.prototype.hasOwnProperty.call(c, 'expected'));
const withError = enabled.filter((c) => c.error !== undefined && !Object.prototype.hasOwnProperty.call(c, 'expected'));

describe('JSON Patch conformance suite, RFC behaviour (createIntermediates off)', () => {
  it('has the cases this file expects to run', () => {
    // Guards against an empty or truncated fixture making every loop below vacuous.
    expect(withExpected.length).toBe(74);
    expect(withError.length).toBe(34);
    expect(withExpected.length + withError.length).toBe(enabled.length);
  });

  it.each(withExpected.map((c) => [c.id, c] as const))('%s', (_id, c) => {
    const before = JSON.stringify(c.doc);
    const result = applyPatch(c.doc as JsonValue, c.patch);
    expect(result).toEqual({ ok: true, doc: c.expected });
    expect(JSON.stringify(c.doc)).toBe(before);
  });

  it.each(withError.map((c) => [c.id, c] as const))('%s refuses', (_id, c) => {
    const before = JSON.stringify(c.doc);
    const result = applyPatch(c.doc as JsonValue, c.patch);
    expect(result.ok).toBe(false);
    expect(JSON.stringify(c.doc)).toBe(before);
  });
});

describe('JSON Patch conformance suite with the contract option createIntermediates on', () => {
  const outcome = (c: SuiteCase, createIntermediates: boolean): string => {
    const r = applyPatch(c.doc as JsonValue, c.patch, { createIntermediates });
    return r.ok ? `ok ${JSON.stringify(r.doc)}` : 'refused';
  };
  const changed = enabled.filter((c) => outcome(c, false) !== outcome(c, true));

  it('changes exactly the two RFC cases that refuse an add below a missing object member', () => {
    expect(changed.map((c) => c.id)).toEqual([
      'spec_tests.json#0 4.1. add with missing object',
      'spec_tests.json#12 A.12.  Adding to a Non-existent Target',
    ]);
    expect(changed.map((c) => outcome(c, true))).toEqual([
      'ok {"q":{"bar":2},"a":{"b":1}}',
      'ok {"foo":"bar","baz":{"bat":"qux"}}',
    ]);
  });

  it.each(enabled.filter((c) => !changed.includes(c)).map((c) => [c.id, c] as const))('%s is unaffected', (_id, c) => {
    const result = applyPatch(c.doc as JsonValue, c.patch, { createIntermediates: true });
    if (Object.prototype.hasOwnProperty.call(c, 'expected')) expect(result).toEqual({ ok: true, doc: c.expected });
    else expect(result.ok).toBe(false);
  });
});
