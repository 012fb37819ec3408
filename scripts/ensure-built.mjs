// The first half of `npm start` (decisions OPS-40, OPS-45: the JavaScript only): in a checkout, builds dist/ when it is missing or older
// than the sources it is built from, so that a fresh clone runs with two commands (`npm ci`, `npm start`)
// and a `git pull` never starts yesterday's build. In an install without the sources (the Docker image, a
// `npm ci --omit=dev` install of the package) there is nothing to compare, and dist/ runs as it is.
//
// Plain JavaScript on Node's built-ins only, like build.mjs: it runs before anything is compiled and on
// installs without dev dependencies. The start script then `exec`s node on dist/server/main.js, so the
// service itself stays npm's direct child and gets its signals.
//
//   node scripts/ensure-built.mjs            exit 0 when dist/ is ready to run, 1 with the reason when not
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'dist', 'server', 'main.js');
// dist/.build-complete is written by build.mjs as its very last step (a build cut short leaves none, and
// counts as missing), with the node that built it.

/** What build.mjs reads: tsconfig.build.json's sources, the specs' bundles, the dashboard's files, itself. */
const SOURCES = ['client', 'rules', 'generated', 'server', 'bin', 'lms/main.ts', 'scripts/build.mjs', 'scripts/build', 'tsconfig.build.json', 'tsconfig.json', 'package.json'];
const SKIP = new Set(['node_modules', 'dist', '.tmp']);

/** The newest modification time under `path`, and the file that has it. */
function newest(path) {
  const info = statSync(path, { throwIfNoEntry: false });
  if (info === undefined) return { time: 0, file: null };
  if (!info.isDirectory()) return { time: info.mtimeMs, file: path };
  let best = { time: 0, file: null };
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    if (SKIP.has(entry.name) || entry.name.endsWith('.tgz')) continue;
    const found = newest(join(path, entry.name));
    if (found.time > best.time) best = found;
  }
  return best;
}

/**
 * Why the checkout at `root` needs a build before it starts, or null. Exported for
 * tests/ops/ensure-built.test.ts; `npm start` runs the file itself.
 */
export function reasonToBuild(root, nodeVersion = process.version) {
  const entry = join(root, 'dist', 'server', 'main.js');
  const stamp = join(root, 'dist', '.build-complete');
  if (!existsSync(entry) || !existsSync(stamp)) return 'dist/ has not been built yet';
  // The build's V8 code cache is refused by any other node (decision PERF-220): that start would compile
  // everything again, every time, until the next build.
  const builtBy = /^node (\S+)$/m.exec(readFileSync(stamp, 'utf8'))?.[1];
  if (builtBy !== nodeVersion) return `dist/ was built by ${builtBy === undefined ? 'an unknown node' : `node ${builtBy}`}, and this is node ${nodeVersion}`;
  const built = statSync(stamp).mtimeMs;
  // The bundle holds the installed packages too: a new `npm ci` makes the build stale.
  const sources = [...SOURCES.map((path) => join(root, path)), join(root, 'node_modules', '.package-lock.json')];
  for (const path of sources) {
    const found = newest(path);
    if (found.time > built) return `${found.file?.slice(root.length + 1)} changed since the last build`;
  }
  return null;
}

// Only a checkout has the sources and the build script; an install runs the dist/ it was given.
if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))) main();

function main() {
  const checkout = existsSync(join(root, 'scripts', 'build.mjs')) && existsSync(join(root, 'tsconfig.build.json'));
  if (checkout) {
    const reason = reasonToBuild(root);
    if (reason !== null) {
      let canBuild = true;
      try {
        createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
      } catch {
        canBuild = false;
      }
      if (!canBuild) {
        if (existsSync(entry)) {
          process.stderr.write(`npm start: ${reason}, but TypeScript is not installed (npm ci --omit=dev?): running the existing dist/.\n`);
          process.exit(0);
        }
        process.stderr.write(`npm start: ${reason}, and building it needs the dev dependencies: run \`npm ci\` (without --omit=dev), then \`npm start\` again.\n`);
        process.exit(1);
      }
      process.stderr.write(`npm start: ${reason}; building dist/ first (its JavaScript only; npm run build adds the type declarations)...\n`);
      const started = performance.now();
      try {
        execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs'), '--no-types'], { cwd: root, stdio: 'inherit' });
      } catch {
        process.stderr.write('npm start: the build failed (its output is above); nothing was started.\n');
        process.exit(1);
      }
      process.stderr.write(`npm start: built in ${((performance.now() - started) / 1000).toFixed(1)} s.\n`);
    }
  } else if (!existsSync(entry)) {
    process.stderr.write('npm start: dist/server/main.js is missing from this install; build the package with `npm run build` in a checkout.\n');
    process.exit(1);
  }
}
