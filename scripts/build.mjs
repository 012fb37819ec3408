// `npm run build`: compiles the service, the kit and `tis` into dist/ (tsconfig.build.json) and copies what
// they read at run time: the bundled specs of generated/ and the web dashboard's static files. Plain
// JavaScript, so the build needs only TypeScript; what it writes runs on `npm ci --omit=dev` (`npm start`).
//
//   node scripts/build.mjs [--out-dir <dir>]     (default dist/)
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { 'out-dir': { type: 'string' } } });
const out = resolve(root, values['out-dir'] ?? 'dist');

rmSync(out, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', out], { stdio: 'inherit', cwd: root });
cpSync(join(root, 'generated'), join(out, 'generated'), {
  recursive: true,
  filter: (file) => statSync(file).isDirectory() || file.endsWith('.json'),
});
cpSync(join(root, 'server/web-dashboard/static'), join(out, 'server/web-dashboard/static'), { recursive: true });
