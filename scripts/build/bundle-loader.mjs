// dist/server/main.js of a build, the file `npm start` runs (written by scripts/build.mjs from
// scripts/build/bundle-loader.mjs, decision PERF-220). It runs the service's bundle, main.bundle.cjs, from the
// V8 code cache the build trained for it: the functions a start runs are deserialized, not parsed and
// compiled from 2 MB of JavaScript. Node 20 takes a code cache only through vm.Script (its module loaders
// have none; Node 22 has module.enableCompileCache). Plain JavaScript on Node's built-ins.
import { closeSync, openSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const filename = fileURLToPath(new URL('./main.bundle.cjs', import.meta.url));
const cacheFile = `${filename}.v8-cache`;
const require = createRequire(filename);

/**
 * What became of the cache, for the service's `listening` log line (server/main.ts): `used`; `rejected` (V8
 * refused it: another node, or other heap flags than `npm start`'s); `missing`; `off` (see below).
 */
const report = (outcome) => {
  globalThis[Symbol.for('tis.codeCache')] = outcome;
};

if (process.sourceMapsEnabled) {
  // --enable-source-maps does not map code compiled by vm.Script (Node 20): Node's own loader, uncached.
  report('off');
  require(filename);
} else {
  run();
}

/** In a function, so that nothing keeps the cache's 1.4 MB buffer once the script is compiled. */
function run() {
  let cachedData;
  try {
    cachedData = readFileSync(cacheFile);
  } catch (err) {
    if (err?.code !== 'ENOENT') throw err;
  }
  // The wrapper Node's CommonJS loader puts around a file, on the first line so that lines keep their numbers.
  const source = `(function (exports, require, module, __filename, __dirname) {${readInPieces(filename)}\n})`;
  // No `import()` in it (the build checks): Node 20 loses a script's dynamic import callback when the script
  // comes from a code cache.
  const script = new vm.Script(source, { filename, cachedData });
  report(cachedData === undefined ? 'missing' : script.cachedDataRejected ? 'rejected' : 'used');
  // The build's training start (scripts/build/code-cache.mjs): at exit the cache holds every function the
  // start and its requests compiled.
  const out = process.env['TIS_CODE_CACHE_OUT'];
  if (out) process.once('exit', () => writeFileSync(out, script.createCachedData()));
  const module = { exports: {} };
  script.runInThisContext()(module.exports, require, module, filename, dirname(filename));
}

/**
 * The file's text, read 64 KB at a time: read whole, its 2.2 MB would be one malloc'd buffer, and glibc, once
 * such a buffer is freed, raises its mmap threshold to that size and keeps the process's later allocations
 * below it in a heap it does not give back (2 to 3 MB more resident after a load, PERF-220).
 */
function readInPieces(file) {
  const fd = openSync(file, 'r');
  try {
    const piece = Buffer.allocUnsafe(64 * 1024);
    const decoder = new StringDecoder('utf8');
    let text = '';
    for (let n; (n = readSync(fd, piece, 0, piece.length, null)) > 0; ) text += decoder.write(piece.subarray(0, n));
    return text + decoder.end();
  } finally {
    closeSync(fd);
  }
}
