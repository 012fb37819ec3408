// How `npm start` runs the service: the node options between `node` and `dist/server/main.js` in a
// checkout's `start` script (decision PERF-122), and the environment it sets for node (PERF-222). The
// Dockerfile's CMD and ENV are the same (`tests/ops/dockerfile.test.ts`). The build trains its code cache
// under them (V8 refuses a cache made under other heap flags, PERF-220) and a bench of a build passes them
// too, so both see what production runs; a checkout without any gets none.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const startScript = (root) => JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts?.['start'] ?? '';

/** @param {string} root a checkout (the folder of its package.json) */
export function startNodeFlags(root) {
  const found = /\bnode((?:\s+--\S+)*)\s+dist\/server\/main\.js\b/.exec(startScript(root));
  return (found?.[1] ?? '').split(/\s+/).filter((flag) => flag !== '');
}

/**
 * The environment the start script gives node (`NAME=value exec node ...`; glibc's malloc settings, decision
 * PERF-222), for whatever starts the build as production does.
 * @param {string} root
 * @returns {Record<string, string>}
 */
export function startNodeEnv(root) {
  const found = /(?:^|&&\s*)((?:[A-Z_][A-Z0-9_]*=\S+\s+)*)exec\s+node\b/.exec(startScript(root));
  return Object.fromEntries((found?.[1] ?? '').trim().split(/\s+/).filter(Boolean).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
}
