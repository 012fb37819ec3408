/**
 * Bundles one API root into a single document with `@redocly/openapi-core`: external files become
 * components (named by file name), `$ref`s to components are kept, nothing is dereferenced.
 */
import { bundle, createConfig } from '@redocly/openapi-core';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

let configPromise: ReturnType<typeof createConfig> | undefined;

export async function bundleApi(rootFile: string): Promise<JsonObject> {
  // An empty config on purpose: bundling must not depend on lint rules or decorators; redocly.yaml's rules are
  // applied by `redocly lint` in `npm run check`.
  configPromise ??= createConfig({});
  const config = await configPromise;
  const result = await bundle({ ref: rootFile, config, dereference: false });
  const errors = result.problems.filter((p) => p.severity === 'error');
  if (errors.length > 0) {
    const lines = errors.map((p) => {
      const where = p.location[0];
      return `  ${where ? `${where.source.absoluteRef}#${where.pointer ?? ''}` : rootFile}: ${p.message}`;
    });
    throw new Error(`cannot bundle ${rootFile}:\n${lines.join('\n')}`);
  }
  const parsed = result.bundle.parsed as unknown;
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new Error(`cannot bundle ${rootFile}: the root is not an object`);
  }
  // A JSON round trip drops anything YAML can hold that JSON cannot (undefined, Date) and detaches the
  // result from the bundler's internal objects.
  return JSON.parse(JSON.stringify(parsed)) as JsonObject;
}

export function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The stable serialization of every JSON file under generated/. */
export function serializeJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
