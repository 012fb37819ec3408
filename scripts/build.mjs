// `npm run build`: compiles the service, the kit and `tis` into dist/ (tsconfig.build.json) and copies what
// they read at run time: the bundled specs of generated/ and the web dashboard's and the LTI picker's static files. Then it
// bundles what `npm start` runs, dist/server/main.js, into one file with esbuild (decision PERF-90): loading
// a few hundred modules one by one was the largest share of a cold start. Last, main.js becomes a loader that
// runs that bundle from a V8 code cache, made by a training start of the build (PERF-220,
// scripts/build/code-cache.mjs). Plain JavaScript, so the build needs only TypeScript and esbuild (dev
// dependencies); what it writes runs on `npm ci --omit=dev`.
//
//   node scripts/build.mjs [--out-dir <dir>] [--bundle all|own|none] [--no-types]     (default dist/, all)
//
// `--no-types` (what `npm start` builds on need, decision OPS-45): the JavaScript only, each source file
// transpiled by esbuild into the same layout, with no declarations and no type check: seconds instead of
// tsc's half a minute of CPU. It is the transform tsx applies to every source in development and in the
// tests, so the code it gives is the code they run; `npm run check` type-checks, `npm run build` (the
// Dockerfile, the published package) keeps tsc's JavaScript and declarations.
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { trainCodeCache } from './build/code-cache.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { 'out-dir': { type: 'string' }, bundle: { type: 'string' }, 'no-types': { type: 'boolean', default: false } } });
const out = resolve(root, values['out-dir'] ?? 'dist');
const bundle = values.bundle ?? 'all';
if (!['all', 'own', 'none'].includes(bundle)) throw new Error(`--bundle: all, own or none, not ${bundle}`);

rmSync(out, { recursive: true, force: true });
if (values['no-types']) {
  // tsconfig.build.json's own file list, read by TypeScript, so both ways compile the same files.
  const ts = createRequire(import.meta.url)('typescript');
  const parsed = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.build.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); } });
  if (parsed.errors.length > 0) throw new Error(parsed.errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')).join('\n'));
  const esbuild = await import('esbuild');
  // tsc also compiles what those files import from outside the list (lms/ from lms/main.ts): esbuild's
  // graph of the same entries, packages left out, names them.
  const graph = await esbuild.build({
    entryPoints: parsed.fileNames.filter((file) => !file.endsWith('.d.ts')),
    bundle: true,
    write: false,
    metafile: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    outdir: out,
    logLevel: 'silent',
  });
  await esbuild.build({
    entryPoints: Object.keys(graph.metafile.inputs).filter((file) => /\.ts$/.test(file) && !file.endsWith('.d.ts')).map((file) => resolve(root, file)),
    outdir: out,
    outbase: root,
    bundle: false,
    platform: 'node',
    format: 'esm',
    target: 'es2022',
    logLevel: 'warning',
  });
} else {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', out], { stdio: 'inherit', cwd: root });
}
cpSync(join(root, 'generated'), join(out, 'generated'), {
  recursive: true,
  filter: (file) => statSync(file).isDirectory() || file.endsWith('.json'),
});
cpSync(join(root, 'server/web-dashboard/static'), join(out, 'server/web-dashboard/static'), { recursive: true });
cpSync(join(root, 'server/lti/static'), join(out, 'server/lti/static'), { recursive: true });

if (bundle !== 'none') {
  const esbuild = await import('esbuild');
  // Native code (better-sqlite3's binding) and the packages of features a SQLite service does not use
  // (pg for a PostgreSQL store, the AWS SDK for S3 files) stay in node_modules. prom-client too (decision
  // OPS-10): in the bundle its `Registry` class would share the top level with another module's `Registry`
  // and be renamed (the class-name check below); from node_modules it keeps its own scope.
  const external = ['better-sqlite3', 'pg', '@aws-sdk/*', 'prom-client'];
  const entry = join(out, 'server', 'main.js');
  // One CommonJS file beside the entry (decision PERF-220): the loader that replaces main.js runs it from a V8
  // code cache, which Node 20 takes only for a script. What a module loads with `import()` (the validator
  // library with Ajv, the Sandbox's LMS, the S3 blob store) is in the file but runs on first use, as before.
  const bundleFile = join(dirname(entry), 'main.bundle.cjs');
  // Our modules find files beside themselves (`generated/<api>/openapi.json`, the dashboard's static folder)
  // and resolve packages from where they sit, through `import.meta.url`. In the bundle every module's
  // `import.meta.url` becomes its own compiled file's URL again, computed from the bundle's (which sits in
  // the entry's folder): the files stay where tsc wrote them, and the lookups hold unchanged.
  const ownUrls = {
    name: 'own-import-meta-url',
    setup(build) {
      build.onLoad({ filter: /\.js$/ }, (args) => {
        if (!args.path.startsWith(out + sep)) return undefined;
        const source = readFileSync(args.path, 'utf8');
        if (!source.includes('import.meta.url')) return undefined;
        const own = relative(dirname(entry), args.path).split(sep).join('/');
        return {
          contents: source.replaceAll('import.meta.url', `new URL(${JSON.stringify(`./${own}`)}, __bundleUrl).href`),
          loader: 'js',
        };
      });
    },
  };
  // Packages resolve from dist/ as they will at run time; a build written outside the checkout (tests,
  // check:prod-install) gets its node_modules only afterwards, from the same lock, so it resolves from here.
  const resolvesFromOut = (() => {
    try {
      createRequire(entry).resolve('express');
      return true;
    } catch {
      return false;
    }
  })();
  const requireFromOut = createRequire(resolvesFromOut ? entry : join(root, 'package.json'));
  // Data-heavy packages that other packages load: as JavaScript in the bundle, V8 parses them at start
  // (iconv-lite's code pages, half a megabyte, of which a UTF-8 body needs none; mime-db's table, which Node
  // reads as JSON far faster than V8 parses it as a literal). They stay in node_modules, loaded by name from
  // the bundle; the build fails unless that name finds, from dist/, the very file the importer would get
  // (an install that nests another version under the importer would otherwise be bypassed).
  const requiredByName = ['iconv-lite', 'mime-db'];
  const sameFileFromDist = {
    name: 'required-by-name',
    setup(build) {
      build.onResolve({ filter: new RegExp(`^(${requiredByName.join('|')})$`) }, (args) => {
        const wanted = createRequire(args.importer).resolve(args.path);
        const found = requireFromOut.resolve(args.path);
        if (wanted !== found) throw new Error(`${args.path}: ${args.importer} loads ${wanted}, but dist/ would load ${found}`);
        return { path: args.path, external: true };
      });
    },
  };
  // An `import()` of a package left in node_modules (prom-client's, on the first scrape) would stay an
  // `import()` in the bundle, and Node 20 cannot run one from a script compiled from a code cache (the
  // dynamic import callback is lost: ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING). So it becomes a `require` on first
  // use, through a one-line module; every such package is CommonJS, or an ES module Node 20 requires.
  const requiredOnFirstUse = {
    name: 'required-on-first-use',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, (args) => {
        if (args.kind !== 'dynamic-import') return undefined;
        const left = build.initialOptions.packages === 'external' || external.some((name) => args.path === name || args.path.startsWith(name.replace(/\*$/, '')));
        return left ? { path: args.path, namespace: 'required-on-first-use' } : undefined;
      });
      build.onLoad({ filter: /.*/, namespace: 'required-on-first-use' }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)});`, resolveDir: root, loader: 'js' }));
    },
  };
  const built = await esbuild.build({
    entryPoints: [entry],
    outfile: bundleFile,
    bundle: true,
    platform: 'node',
    nodePaths: [join(root, 'node_modules')],
    format: 'cjs',
    target: 'node20',
    // No `keepNames`: it wraps every function made at run time in a call that sets its name, closures made
    // per request included. What reads a name at run time reads a class's (`new.target.name`, jose's
    // `constructor.name`), and the check below fails the build if the bundle renamed a class.
    metafile: true,
    sourcemap: 'linked',
    sourcesContent: false,
    legalComments: 'none',
    logLevel: 'warning',
    plugins: [ownUrls, requiredOnFirstUse, ...(bundle === 'all' ? [sameFileFromDist] : [])],
    ...(bundle === 'own' ? { packages: 'external' } : { external }),
    // Strict, as the ES modules it is made of were; and the URL `import.meta.url` stood for.
    banner: { js: "'use strict';\nconst __bundleUrl = require('node:url').pathToFileURL(__filename).href;" },
  });
  // Two modules declaring one top-level name make esbuild rename one of them (`Problem2`); for a class,
  // that would change an error's `name`. Every class of the bundle must carry a name declared in its inputs.
  const declared = new Set();
  for (const input of Object.keys(built.metafile.inputs)) {
    if (input.startsWith('required-on-first-use:')) continue;
    const file = resolve(root, input);
    for (const match of readFileSync(file, 'utf8').matchAll(/\bclass\s+([\w$]+)/g)) declared.add(match[1]);
  }
  for (const output of Object.keys(built.metafile.outputs).filter((file) => file.endsWith('.js'))) {
    const code = readFileSync(resolve(root, output), 'utf8');
    for (const match of code.matchAll(/\bclass\s+([\w$]+?\d+)\s*(?:extends\b|\{)|\b([\w$]+?\d+)\s*=\s*class\b/g)) {
      const name = match[1] ?? match[2];
      if (!declared.has(name)) throw new Error(`${output}: the bundle renamed a class to ${name}`);
    }
  }

  const dynamic = Object.values(built.metafile.outputs).flatMap((output) => output.imports.filter((i) => i.kind === 'dynamic-import').map((i) => i.path));
  if (dynamic.length > 0) throw new Error(`the bundle keeps import() of ${dynamic.join(', ')}, which fails from a code cache`);

  // main.js becomes the loader (tsc's main.js is in the bundle), and the bundle gets its code cache.
  rmSync(entry);
  cpSync(join(root, 'scripts', 'build', 'bundle-loader.mjs'), entry);
  await trainCodeCache({ main: entry, cacheFile: `${bundleFile}.v8-cache`, root, nodePath: resolvesFromOut ? null : join(root, 'node_modules') });
}

// Last, so that a build cut short leaves no stamp: `npm start` (scripts/ensure-built.mjs) compares the
// sources with this file's time and rebuilds when they are newer or it is missing (decision OPS-40).
// With the node that built it: the code cache is that node's alone (PERF-220), so ensure-built rebuilds for another.
writeFileSync(join(out, '.build-complete'), `${new Date().toISOString()}\nnode ${process.version}\n`);
