import { describe, expect, it } from 'vitest';
import {
  applyPatch,
  PATCH_WRAPPER_MESSAGE,
  validatePatchShape,
  type JsonObject,
  type JsonValue,
} from '../../rules/json-patch.js';
import { formatPointer, parsePointer } from '../../rules/json-pointer.js';

function applied(doc: JsonValue, ops: unknown, createIntermediates = false): JsonValue {
  const result = applyPatch(doc, ops, { createIntermediates });
  if (!result.ok) throw new Error(`expected success, got: ${result.error.message}`);
  return result.doc;
}

function failure(doc: JsonValue, ops: unknown, createIntermediates = false) {
  const result = applyPatch(doc, ops, { createIntermediates });
  if (result.ok) throw new Error(`expected a refusal, got ${JSON.stringify(result.doc)}`);
  return result.error;
}

describe('JSON Pointer', () => {
  it('decodes ~1 before ~0 so "~01" is the key "~1"', () => {
    expect(parsePointer('/~01/a~1b/~0')).toEqual({ ok: true, tokens: ['~1', 'a/b', '~'] });
  });
  it('refuses a pointer without a leading slash and a bare or unknown escape', () => {
    expect(parsePointer('foo').ok).toBe(false);
    expect(parsePointer('/a~').ok).toBe(false);
    expect(parsePointer('/a~2').ok).toBe(false);
  });
  it('formats tokens back to an escaped pointer', () => {
    expect(formatPointer(['a/b', '~x', 3])).toBe('/a~1b/~0x/3');
  });
});

describe('applyPatch: purity and atomicity', () => {
  it('never mutates the input document or the operations', () => {
    const doc: JsonValue = { a: { b: [1, 2] }, c: 'x' };
    const ops = [
      { op: 'add', path: '/a/b/-', value: { deep: [1] } },
      { op: 'replace', path: '/c', value: 'y' },
      { op: 'move', from: '/a/b/0', path: '/moved' },
    ];
    const docBefore = JSON.stringify(doc);
    const opsBefore = JSON.stringify(ops);
    const result = applied(doc, ops) as JsonObject;
    expect(JSON.stringify(doc)).toBe(docBefore);
    expect(JSON.stringify(ops)).toBe(opsBefore);
    expect(result).toEqual({ a: { b: [2, { deep: [1] }] }, c: 'y', moved: 1 });
  });

  it('shares no object with the input or the patch values', () => {
    const value = { nested: { n: 1 } };
    const doc: JsonValue = { keep: { k: 1 } };
    const result = applied(doc, [{ op: 'add', path: '/v', value }]) as JsonObject;
    (result['keep'] as JsonObject)['k'] = 2;
    ((result['v'] as JsonObject)['nested'] as JsonObject)['n'] = 2;
    expect(doc).toEqual({ keep: { k: 1 } });
    expect(value).toEqual({ nested: { n: 1 } });
  });

  it('copies deeply, so a copy and its source change independently', () => {
    const result = applied({ src: { list: [1] } }, [
      { op: 'copy', from: '/src', path: '/dst' },
      { op: 'add', path: '/dst/list/-', value: 2 },
    ]);
    expect(result).toEqual({ src: { list: [1] }, dst: { list: [1, 2] } });
  });

  it('applies nothing when a later operation fails', () => {
    const doc: JsonValue = { a: 1 };
    const error = failure(doc, [
      { op: 'add', path: '/b', value: 2 },
      { op: 'remove', path: '/a' },
      { op: 'replace', path: '/answers/q9', value: 3 },
    ]);
    expect(doc).toEqual({ a: 1 });
    expect(error).toMatchObject({ kind: 'failed', index: 2, op: 'replace', path: '/answers/q9', field: '/patch/2/path' });
    expect(error.message).toBe('patch operation 2 (replace /answers/q9) failed: path not found: /answers');
  });

  it('reports the contract example message for a missing member of an existing object', () => {
    const error = failure({ answers: {} }, [{ op: 'test', path: '/answers', value: {} }, { op: 'replace', path: '/answers/q9', value: 1 }]);
    expect(error.message).toBe('patch operation 1 (replace /answers/q9) failed: path not found');
  });

  it('checks every operation shape before applying any', () => {
    const error = failure({}, [{ op: 'remove', path: '/missing' }, { op: 'add', path: '/x' }]);
    expect(error).toMatchObject({ kind: 'invalid', index: 1, reason: 'value is required for add', field: '/patch/1/value' });
  });

  it('handles documents nested deeper than the call stack', () => {
    let deep: JsonValue = 0;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const result = applyPatch({ deep }, [{ op: 'test', path: '/deep', value: deep }, { op: 'add', path: '/x', value: 1 }]);
    expect(result.ok).toBe(true);
  });
});

describe('applyPatch: RFC traps', () => {
  it('refuses leading-zero array indexes for every operation, test included', () => {
    for (const op of [
      { op: 'test', path: '/01', value: 'b' },
      { op: 'remove', path: '/01' },
      { op: 'replace', path: '/01', value: 'x' },
      { op: 'add', path: '/01', value: 'x' },
      { op: 'copy', from: '/01', path: '/-' },
      { op: 'move', from: '/00', path: '/-' },
    ]) {
      expect(failure(['a', 'b'], [op]).reason).toMatch(/is not an array index/);
    }
  });

  it('accepts a leading-zero token as an ordinary key of an object', () => {
    expect(applied({ '01': 'x' }, [{ op: 'test', path: '/01', value: 'x' }, { op: 'replace', path: '/01', value: 'y' }])).toEqual({ '01': 'y' });
  });

  it('treats numeric-looking tokens on objects as member names', () => {
    expect(applied({}, [{ op: 'add', path: '/0', value: 'a' }, { op: 'add', path: '/1e0', value: 'b' }])).toEqual({ '0': 'a', '1e0': 'b' });
  });

  it('allows "-" only where a value is added', () => {
    expect(applied([1], [{ op: 'add', path: '/-', value: 2 }])).toEqual([1, 2]);
    expect(applied({ a: [1], b: 3 }, [{ op: 'move', from: '/b', path: '/a/-' }])).toEqual({ a: [1, 3] });
    expect(applied({ a: [1] }, [{ op: 'copy', from: '/a/0', path: '/a/-' }])).toEqual({ a: [1, 1] });
    for (const op of [
      { op: 'remove', path: '/-' },
      { op: 'replace', path: '/-', value: 0 },
      { op: 'test', path: '/-', value: 1 },
      { op: 'copy', from: '/-', path: '/0' },
    ]) {
      expect(failure([1], [op]).reason).toMatch(/"-" names the end of the array/);
    }
  });

  it('compares with test by JSON value: key order ignored, types strict', () => {
    const doc: JsonValue = { o: { a: 1, b: [1, { c: null }] }, n: 10, s: '10', z: 0 };
    expect(applyPatch(doc, [{ op: 'test', path: '/o', value: { b: [1, { c: null }], a: 1 } }]).ok).toBe(true);
    expect(applyPatch(doc, [{ op: 'test', path: '/n', value: '10' }]).ok).toBe(false);
    expect(applyPatch(doc, [{ op: 'test', path: '/s', value: 10 }]).ok).toBe(false);
    expect(applyPatch(doc, [{ op: 'test', path: '/n', value: 10.0 }]).ok).toBe(true);
    expect(applyPatch(doc, [{ op: 'test', path: '/z', value: false }]).ok).toBe(false);
    expect(applyPatch(doc, [{ op: 'test', path: '/z', value: null }]).ok).toBe(false);
    expect(applyPatch(doc, [{ op: 'test', path: '/o', value: { a: 1 } }]).ok).toBe(false);
    expect(applyPatch(doc, [{ op: 'test', path: '/o', value: { a: 1, b: [1, { c: null }], d: 1 } }]).ok).toBe(false);
    expect(applyPatch({ a: [] }, [{ op: 'test', path: '/a', value: {} }]).ok).toBe(false);
    expect(applyPatch(doc, [{ op: 'test', path: '', value: doc }]).ok).toBe(true);
  });

  it('refuses to move a value into its own child, and moving to itself changes nothing', () => {
    expect(failure({ a: { b: 1 } }, [{ op: 'move', from: '/a', path: '/a/c' }]).reason).toBe(
      'a value cannot be moved into one of its own children',
    );
    expect(applied({ a: { b: 1 } }, [{ op: 'move', from: '/a', path: '/a' }])).toEqual({ a: { b: 1 } });
    expect(applyPatch({}, [{ op: 'move', from: '/a', path: '/a' }]).ok).toBe(false);
  });

  it('moves array elements by removing first, as RFC 6902 4.4 specifies', () => {
    expect(applied(['a', 'b', 'c', 'd'], [{ op: 'move', from: '/0', path: '/3' }])).toEqual(['b', 'c', 'd', 'a']);
  });

  it('keeps a replaced member in its place in key order', () => {
    const result = applied({ a: 1, b: 2, c: 3 }, [{ op: 'replace', path: '/a', value: 9 }, { op: 'add', path: '/b', value: 8 }]);
    expect(Object.keys(result as JsonObject)).toEqual(['a', 'b', 'c']);
  });

  it('refuses to remove the whole document but lets add and replace swap it', () => {
    expect(failure({ a: 1 }, [{ op: 'remove', path: '' }]).reason).toBe('the whole document cannot be removed');
    expect(applied({ a: 1 }, [{ op: 'replace', path: '', value: { b: 2 } }])).toEqual({ b: 2 });
  });

  it('refuses to descend into a scalar', () => {
    expect(failure({ a: 1 }, [{ op: 'add', path: '/a/b', value: 1 }]).reason).toBe('path not found: /a is a number');
  });

  it('ignores unknown members of an operation but refuses unknown ops and bad members', () => {
    expect(applied({}, [{ op: 'add', path: '/a', value: 1, from: 7, extra: true }])).toEqual({ a: 1 });
    expect(failure({}, [{ op: 'merge', path: '/a', value: 1 }]).reason).toBe('op must be one of add, remove, replace, move, copy, test');
    expect(failure({}, [{ op: 'add', path: 5, value: 1 }]).field).toBe('/patch/0/path');
    expect(failure({}, [{ op: 'copy', from: 'a', path: '/b' }]).field).toBe('/patch/0/from');
    expect(failure({}, ['add']).reason).toBe('an operation must be an object');
    expect(applied({ a: 0 }, [{ op: 'replace', path: '/a', value: null }])).toEqual({ a: null });
  });

  it('names an empty path visibly in messages', () => {
    expect(failure({}, [{ op: 'move', path: '' }]).message).toBe(
      'patch operation 0 (move "") is invalid: from must be a string holding a JSON Pointer for move',
    );
  });
});

describe('applyPatch: prototype safety', () => {
  const hostile: Array<[string, unknown[]]> = [
    ['add below __proto__', [{ op: 'add', path: '/__proto__/polluted', value: 1 }]],
    ['add __proto__ as an object', [{ op: 'add', path: '/__proto__', value: { polluted: 1 } }]],
    ['replace __proto__', [{ op: 'add', path: '/__proto__', value: {} }, { op: 'replace', path: '/__proto__', value: { polluted: 1 } }]],
    ['constructor.prototype', [{ op: 'add', path: '/constructor/prototype/polluted', value: 1 }]],
    ['copy into __proto__', [{ op: 'add', path: '/x', value: { polluted: 1 } }, { op: 'copy', from: '/x', path: '/__proto__' }]],
    ['move into __proto__', [{ op: 'add', path: '/x', value: { polluted: 1 } }, { op: 'move', from: '/x', path: '/__proto__' }]],
  ];

  it.each(hostile)('%s: pollutes no prototype, with or without intermediates', (_name, ops) => {
    for (const createIntermediates of [false, true]) {
      const result = applyPatch({}, ops, { createIntermediates });
      expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
      expect((Object.prototype as Record<string, unknown>)['polluted']).toBeUndefined();
      if (result.ok) {
        expect(Object.getPrototypeOf(result.doc)).toBe(Object.prototype);
        expect((result.doc as Record<string, unknown>)['polluted']).toBeUndefined();
      }
    }
  });

  it('compares a __proto__ member as data in test, not as the inherited prototype', () => {
    const value = JSON.parse('{"__proto__":{}}') as JsonValue;
    expect(applyPatch({ x: { b: {} } }, [{ op: 'test', path: '/x', value }]).ok).toBe(false);
    expect(applyPatch({ x: value }, [{ op: 'test', path: '/x', value: { b: {} } }]).ok).toBe(false);
    expect(applyPatch({ x: JSON.parse('{"__proto__":{}}') as JsonValue }, [{ op: 'test', path: '/x', value }]).ok).toBe(true);
  });

  it('does not read inherited members as data', () => {
    expect(failure({}, [{ op: 'add', path: '/constructor/prototype/polluted', value: 1 }]).reason).toBe('path not found: /constructor');
    expect(applyPatch({}, [{ op: 'test', path: '/toString', value: null }]).ok).toBe(false);
    expect(applyPatch({}, [{ op: 'remove', path: '/hasOwnProperty' }]).ok).toBe(false);
  });

  it('stores __proto__, constructor and prototype as own data members that round-trip through JSON', () => {
    const result = applied({}, [
      { op: 'add', path: '/__proto__', value: { polluted: 1 } },
      { op: 'add', path: '/__proto__/more', value: 2 },
      { op: 'add', path: '/constructor', value: { prototype: { polluted: 1 } } },
      { op: 'add', path: '/prototype', value: 3 },
    ]) as JsonObject;
    expect(Object.keys(result)).toEqual(['__proto__', 'constructor', 'prototype']);
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    const text = JSON.stringify(result);
    expect(text).toBe('{"__proto__":{"polluted":1,"more":2},"constructor":{"prototype":{"polluted":1}},"prototype":3}');
    const reparsed = JSON.parse(text) as JsonObject;
    expect(Object.keys(reparsed)).toEqual(['__proto__', 'constructor', 'prototype']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('keeps a __proto__ member that came from JSON.parse through a patch and can remove it', () => {
    const doc = JSON.parse('{"__proto__":{"a":1},"b":2}') as JsonObject;
    const patched = applied(doc, [{ op: 'add', path: '/__proto__/c', value: 3 }]);
    expect(JSON.stringify(patched)).toBe('{"__proto__":{"a":1,"c":3},"b":2}');
    const removed = applied(doc, [{ op: 'remove', path: '/__proto__' }]);
    expect(JSON.stringify(removed)).toBe('{"b":2}');
    expect(Object.getPrototypeOf(removed)).toBe(Object.prototype);
  });

  it('creates a missing __proto__ intermediate as an own member', () => {
    const result = applied({}, [{ op: 'add', path: '/__proto__/polluted', value: 1 }], true);
    expect(JSON.stringify(result)).toBe('{"__proto__":{"polluted":1}}');
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});

describe('applyPatch: createIntermediates (the contract rule)', () => {
  it('creates missing object members along an add path', () => {
    expect(applied({ q: 1 }, [{ op: 'add', path: '/a/b/c', value: 1 }], true)).toEqual({ q: 1, a: { b: { c: 1 } } });
    expect(applied({ a: { x: 1 } }, [{ op: 'add', path: '/a/b/c', value: 1 }], true)).toEqual({ a: { x: 1, b: { c: 1 } } });
  });

  it('is off by default, as RFC 6902 requires', () => {
    expect(applyPatch({}, [{ op: 'add', path: '/a/b', value: 1 }]).ok).toBe(false);
  });

  it('never creates array elements or replaces an existing scalar', () => {
    expect(failure({ list: [] }, [{ op: 'add', path: '/list/0/x', value: 1 }], true).reason).toBe('path not found: /list/0');
    expect(failure({ list: [] }, [{ op: 'add', path: '/list/-/x', value: 1 }], true).reason).toBe('"-" is not an array index at /list');
    expect(failure({ a: 'text' }, [{ op: 'add', path: '/a/b', value: 1 }], true).reason).toBe('path not found: /a is a string');
    expect(failure({ a: null }, [{ op: 'add', path: '/a/b', value: 1 }], true).reason).toBe('path not found: /a is null');
  });

  it('applies to add only, not to replace, copy or move', () => {
    expect(applyPatch({ v: 1 }, [{ op: 'replace', path: '/a/b', value: 1 }], { createIntermediates: true }).ok).toBe(false);
    expect(applyPatch({ v: 1 }, [{ op: 'copy', from: '/v', path: '/a/b' }], { createIntermediates: true }).ok).toBe(false);
    expect(applyPatch({ v: 1 }, [{ op: 'move', from: '/v', path: '/a/b' }], { createIntermediates: true }).ok).toBe(false);
  });

  it('leaves no created intermediate behind when the patch fails later', () => {
    const doc: JsonValue = {};
    const result = applyPatch(doc, [{ op: 'add', path: '/a/b', value: 1 }, { op: 'test', path: '/a/b', value: 2 }], { createIntermediates: true });
    expect(result.ok).toBe(false);
    expect(doc).toEqual({});
  });
});

describe('validatePatchShape', () => {
  it('accepts the single-key wrapper with well-formed operations', () => {
    const body = { patch: [{ op: 'add', path: '/a', value: 1 }, { op: 'remove', path: '/b' }, { op: 'move', from: '/c', path: '/d' }] };
    expect(validatePatchShape(body)).toEqual({ ok: true, patch: body.patch });
  });

  it('accepts an empty patch', () => {
    expect(validatePatchShape({ patch: [] })).toEqual({ ok: true, patch: [] });
  });

  it.each([
    ['a bare array', [{ op: 'add', path: '/a', value: 1 }]],
    ['a key beside patch (decision GAP-13)', { patch: [], extra: 1 }],
    ['no patch key', { ops: [] }],
    ['null', null],
    ['a string', 'patch'],
  ])('refuses %s with the contract message', (_name, body) => {
    const result = validatePatchShape(body);
    expect(result).toEqual({ ok: false, message: PATCH_WRAPPER_MESSAGE, errors: [{ path: '', message: PATCH_WRAPPER_MESSAGE }] });
    expect(PATCH_WRAPPER_MESSAGE).toBe('PATCH body must be an object with the single key "patch"');
  });

  it('refuses a patch that is not an array', () => {
    expect(validatePatchShape({ patch: { op: 'add' } })).toMatchObject({ ok: false, message: 'patch must be an array of JSON Patch operations' });
  });

  it('lists every malformed operation, the first one as the message', () => {
    const result = validatePatchShape({
      patch: [
        { op: 'add', path: '/ok', value: 1 },
        { op: 'add', path: 'no-slash', value: 1 },
        { op: 'copy', path: '/x' },
        { op: 'replace', path: '/y' },
      ],
    });
    expect(result).toEqual({
      ok: false,
      message: 'patch operation 1 (add no-slash) is invalid: path is not a JSON Pointer: a JSON Pointer must be empty or start with "/"',
      errors: [
        { path: '/patch/1/path', message: 'patch operation 1 (add no-slash) is invalid: path is not a JSON Pointer: a JSON Pointer must be empty or start with "/"' },
        { path: '/patch/2/from', message: 'patch operation 2 (copy /x) is invalid: from must be a string holding a JSON Pointer for copy' },
        { path: '/patch/3/value', message: 'patch operation 3 (replace /y) is invalid: value is required for replace' },
      ],
    });
  });

  it('checks pointer escapes in path and from', () => {
    expect(validatePatchShape({ patch: [{ op: 'remove', path: '/a~2' }] }).ok).toBe(false);
    expect(validatePatchShape({ patch: [{ op: 'move', from: '/a~', path: '/b' }] }).ok).toBe(false);
  });

  it('accepts a JSON-parsed body whose wrapper carries a __proto__ operation path', () => {
    const body = JSON.parse('{"patch":[{"op":"add","path":"/__proto__/x","value":1}]}') as unknown;
    expect(validatePatchShape(body).ok).toBe(true);
  });
});
