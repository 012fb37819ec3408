/**
 * Reads a bundled spec written by `npm run generate`. The validator cannot follow the multi-file
 * sources (it answers 500 on them), so the service always runs on the bundle.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export function loadBundledSpec(api: string): Record<string, unknown> {
  const file = fileURLToPath(new URL(`../../generated/${api}/openapi.json`, import.meta.url));
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}
