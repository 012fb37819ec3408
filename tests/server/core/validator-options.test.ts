/**
 * The request validator is express-openapi-validator's, driven without its entry module and without its
 * preprocessor's Ajv compile of every `$ref` (PERF-34). These cases hold that shortcut to the library: the
 * options are the ones its constructor makes, and the preprocessed documents are the ones its own
 * preprocessor makes, object for object (a `$ref` resolved to the same object wherever it was), for every
 * bundled spec, with response validation on and off.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OpenApiValidator } from 'express-openapi-validator/dist/openapi.validator.js';
import { SchemaPreprocessor } from 'express-openapi-validator/dist/middlewares/parsers/schema.preprocessor.js';
import { defaultSerDes } from 'express-openapi-validator/dist/framework/base.serdes.js';
import { dashboardServedSpec } from '../../../server/dashboard/mount.js';
import { loadBundledSpec } from '../../../server/http/spec.js';
import { compileRoot, preprocessedDocuments, validatorOptions, validatorsOf } from '../../../server/http/validator.js';

const SPECS: Array<[string, () => Record<string, unknown>]> = [
  ['2026-09-21', () => loadBundledSpec('2026-09-21')],
  ['2026-08-25', () => loadBundledSpec('2026-08-25')],
  ['2026-08-19', () => loadBundledSpec('2026-08-19')],
  ['dashboard (served)', () => dashboardServedSpec()],
  ['dashboard (whole)', () => loadBundledSpec('dashboard')],
];

function libraryValidator(responseValidation: boolean): OpenApiValidator {
  return new OpenApiValidator({
    apiSpec: {} as never,
    validateApiSpec: false,
    validateRequests: { allErrors: true, allowUnknownQueryParameters: true },
    validateResponses: responseValidation ? { allErrors: true } : false,
    validateSecurity: false,
    fileUploader: false,
    validateFormats: true,
  });
}

/** Equal values and the same sharing: an object reached twice in one is the same object twice in the other. */
function sameGraph(a: unknown, b: unknown): string | null {
  const aToB = new Map<object, object>();
  const bToA = new Map<object, object>();
  const walk = (x: unknown, y: unknown, at: string): string | null => {
    if (typeof x !== 'object' || x === null || typeof y !== 'object' || y === null) return Object.is(x, y) ? null : `${at}: ${String(x)} ≠ ${String(y)}`;
    const seen = aToB.get(x);
    if (seen !== undefined || bToA.has(y)) return seen === y && bToA.get(y) === x ? null : `${at}: shared differently`;
    aToB.set(x, y);
    bToA.set(y, x);
    if (Array.isArray(x) !== Array.isArray(y)) return `${at}: array against object`;
    const keys = Object.keys(x);
    if (keys.join('\0') !== Object.keys(y).join('\0')) return `${at}: keys ${keys.join(',')} ≠ ${Object.keys(y).join(',')}`;
    for (const key of keys) {
      const found = walk((x as Record<string, unknown>)[key], (y as Record<string, unknown>)[key], `${at}/${key}`);
      if (found) return found;
    }
    return null;
  };
  return walk(a, b, '#');
}

describe('the validator as the library would build it (PERF-34)', () => {
  it.each([true, false])('options: what the library makes of ours (response validation %s)', (responseValidation) => {
    const library = libraryValidator(responseValidation);
    const { apiSpec: _spec, ...libraryOptions } = library.options as unknown as Record<string, unknown>;
    const ours = validatorOptions(defaultSerDes, responseValidation);
    expect(ours).toEqual(libraryOptions);
    expect(ours['serDes']).toBe(libraryOptions['serDes']);
  });

  for (const [name, load] of SPECS) {
    it.each([true, false])(`${name}: the preprocessed documents are the library's (response validation %s)`, async (responseValidation) => {
      const spec = load();
      const library = libraryValidator(responseValidation);
      const expected = new SchemaPreprocessor(structuredClone(spec) as never, library.ajvOpts.preprocessor, library.options.validateResponses as never).preProcess();
      const ours = await preprocessedDocuments(spec, responseValidation);
      expect(sameGraph(ours.apiDoc, expected.apiDoc)).toBeNull();
      expect(sameGraph(ours.apiDocRes, expected.apiDocRes)).toBeNull();
      // The bundle as written by `npm run generate` is left as it was (the service shares one parse of it).
      const file = (api: string) => JSON.parse(readFileSync(new URL(`../../../generated/${api}/openapi.json`, import.meta.url), 'utf8')) as Record<string, unknown>;
      for (const api of ['2026-09-21', '2026-08-25', '2026-08-19', 'dashboard']) expect(loadBundledSpec(api)).toEqual(file(api));
    });
  }

  for (const [name, load] of SPECS) {
    it(`${name}: every $ref of the preprocessed documents resolves in the root the validators compile in (PERF-200)`, async () => {
      const { apiDoc, apiDocRes } = await preprocessedDocuments(load(), true);
      for (const doc of [apiDoc, apiDocRes] as Array<Record<string, unknown>>) {
        const root = compileRoot(doc as never) as Record<string, unknown>;
        const refs = new Set<string>();
        const seen = new Set<object>();
        const collect = (node: unknown): void => {
          if (typeof node !== 'object' || node === null || seen.has(node)) return;
          seen.add(node);
          for (const [key, value] of Object.entries(node)) {
            if (key === '$ref' && typeof value === 'string') refs.add(value);
            // A media type's examples are documentation: no validator compiles or resolves them.
            else if (key !== 'examples') collect(value);
          }
        };
        collect(doc);
        expect(refs.size).toBeGreaterThan(0);
        const unresolved = [...refs].filter((ref) => {
          if (!ref.startsWith('#/')) return true;
          let at: unknown = root;
          for (const part of ref.slice(2).split('/')) {
            const key = decodeURIComponent(part).replaceAll('~1', '/').replaceAll('~0', '~');
            at = typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[key] : undefined;
          }
          return at === undefined;
        });
        expect(unresolved).toEqual([]);
      }
    });
  }
});

describe('validators shared in a process (CI-39)', () => {
  it('are built once per spec and setting: every app of the same bundle gets the same ones', () => {
    const current = loadBundledSpec('2026-09-21');
    expect(validatorsOf(current, true)).toBe(validatorsOf(loadBundledSpec('2026-09-21'), true));
    expect(validatorsOf(current, false)).not.toBe(validatorsOf(current, true));
    expect(validatorsOf(loadBundledSpec('2026-08-25'), true)).not.toBe(validatorsOf(current, true));
    // The dashboard mounts its served part of the bundle: the same object at every mount.
    expect(dashboardServedSpec()).toBe(dashboardServedSpec());
    expect(validatorsOf(dashboardServedSpec(), true)).toBe(validatorsOf(dashboardServedSpec(), true));
  });
});
