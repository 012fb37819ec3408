/**
 * Reads a bundled spec written by `npm run generate`. The validator cannot follow the multi-file
 * sources (it answers 500 on them), so the service always runs on the bundle.
 *
 * Each file is parsed once per process and the same object handed to every reader (PERF-35): the
 * dashboard's was parsed twice at start (its own mount and the Sandbox LMS's) and the current contract's
 * twice (its pipeline and the Idempotency-Key header's name). Readers must not change it; the validator,
 * whose preprocessing rewrites its document, works on a copy.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const parsed = new Map<string, Record<string, unknown>>();

export function loadBundledSpec(api: string): Record<string, unknown> {
  let spec = parsed.get(api);
  if (!spec) {
    const file = fileURLToPath(new URL(`../../generated/${api}/openapi.json`, import.meta.url));
    spec = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    parsed.set(api, spec);
  }
  return spec;
}
