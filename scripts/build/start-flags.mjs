// The node options `npm start` runs the service with (decision PERF-122): the flags between `node` and
// `dist/server/main.js` in a checkout's `start` script (the Dockerfile's CMD is the same command,
// `tests/ops/dockerfile.test.ts`). The build trains its code cache under them (V8 refuses a cache made under
// other heap flags, PERF-220) and a bench of a build passes them too, so both see what production runs; a
// checkout without any gets none.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** @param {string} root a checkout (the folder of its package.json) */
export function startNodeFlags(root) {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const found = /\bnode((?:\s+--\S+)*)\s+dist\/server\/main\.js\b/.exec(pkg.scripts?.['start'] ?? '');
  return (found?.[1] ?? '').split(/\s+/).filter((flag) => flag !== '');
}
