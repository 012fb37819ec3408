// `npm run check:prod-install`: shows that `npm start` works on a production install (decision KIT-22).
// In a temporary folder laid out as a package install (what the Dockerfile's final image holds): package.json,
// package-lock.json, the kit workspace's package.json (npm ci needs every workspace of the lock) and dist/ from
// `npm run build`; then `npm ci --omit=dev` from the local npm cache only (`--offline`: a package missing from
// the cache fails the install and is named, nothing is fetched), `npm start`, GET /healthz, and SIGTERM to the
// npm process, which must stop node gracefully; before the SIGTERM, the web dashboard's page and two validated
// dashboard API requests (the platform token the first start wrote), so the bundle's parts read on first use
// are shown to load from a production install too. Prints the figures: install size, package count, times.
//
//   node scripts/check-prod-install.mjs [--online] [--keep]
//
// Plain JavaScript, like build.mjs. Not part of CI's test run: the build and install take minutes (see KIT-22).
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { online: { type: 'boolean' }, keep: { type: 'boolean' } } });
const install = mkdtempSync(join(tmpdir(), 'tis-prod-install-'));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const figures = [];
const seconds = (since) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

function bytesIn(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += bytesIn(path);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function startAndStop() {
  const dataDir = join(install, 'data');
  const started = performance.now();
  const child = spawn(npm, ['start'], {
    cwd: install,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk.toString()));
  child.stderr.on('data', (chunk) => (output += chunk.toString()));
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  try {
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`npm start printed no listening line within 120 s:\n${output}`)), 120_000);
      const poll = setInterval(() => {
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          clearInterval(poll);
          resolve(match[1]);
        } else if (child.exitCode !== null) {
          clearTimeout(timer);
          clearInterval(poll);
          reject(new Error(`npm start exited with ${child.exitCode}:\n${output}`));
        }
      }, 100);
    });
    figures.push(['npm start to listening', seconds(started)]);
    const health = await fetch(`${url}/healthz`);
    if (health.status !== 200) throw new Error(`GET /healthz answered ${health.status}`);
    figures.push(['GET /healthz', `${health.status} ${(await health.text()).trim()}`]);
    // What the bundle loads after start (decision PERF-90): the web dashboard's files, and a request parsed,
    // authenticated and validated (the validator library and Ajv run on first use, PERF-220).
    const page = await fetch(`${url}/dashboard/`);
    if (page.status !== 200) throw new Error(`GET /dashboard/ answered ${page.status}`);
    await page.arrayBuffer();
    const auth = { Authorization: `Bearer ${readFileSync(join(dataDir, 'platform-token'), 'utf8').trim()}` };
    const me = await fetch(`${url}/dashboard/v1/me`, { headers: auth });
    if (me.status !== 200) throw new Error(`GET /dashboard/v1/me answered ${me.status}: ${await me.text()}`);
    await me.arrayBuffer();
    const refused = await fetch(`${url}/dashboard/v1/builders`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: '{"name":"Prod Install"}' });
    const problem = await refused.json();
    if (refused.status !== 422 || problem.code !== 'field_required') throw new Error(`POST /dashboard/v1/builders without an email answered ${refused.status}: ${JSON.stringify(problem)}`);
    figures.push(['GET /dashboard/, GET /dashboard/v1/me, POST without email', `${page.status}, ${me.status}, ${refused.status} ${problem.code}`]);
    // The node process npm started (`exec` in the start script makes it npm's direct child).
    const nodePid = Number(execFileSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' }).trim().split('\n')[0]);
    const stopping = performance.now();
    child.kill('SIGTERM');
    const { code, signal } = await exited;
    for (let i = 0; i < 50 && alive(nodePid); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
    if (alive(nodePid)) throw new Error(`node (pid ${nodePid}) outlived npm after SIGTERM`);
    const lines = output.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    if (!lines.some((l) => l.msg === 'signal received; shutting down' && l.signal === 'SIGTERM')) throw new Error(`the service did not log the SIGTERM:\n${output}`);
    figures.push(['SIGTERM to npm: exit', `${code ?? signal}, node gone, last log line "${lines.at(-1)?.msg}", in ${seconds(stopping)}`]);
    if (code !== 0) throw new Error(`npm start exited with ${code ?? signal} after SIGTERM`);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

try {
  let since = performance.now();
  execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs'), '--out-dir', join(install, 'dist')], { cwd: root, stdio: 'inherit' });
  figures.push(['npm run build', seconds(since)]);
  copyFileSync(join(root, 'package.json'), join(install, 'package.json'));
  copyFileSync(join(root, 'package-lock.json'), join(install, 'package-lock.json'));
  mkdirSync(join(install, 'client'));
  copyFileSync(join(root, 'client', 'package.json'), join(install, 'client', 'package.json'));
  // What package.json's `files` ships beside dist/: the start script's build check, a no-op here (OPS-40).
  mkdirSync(join(install, 'scripts'));
  copyFileSync(join(root, 'scripts', 'ensure-built.mjs'), join(install, 'scripts', 'ensure-built.mjs'));

  since = performance.now();
  const args = ['ci', '--omit=dev', '--no-audit', '--no-fund', ...(values.online ? [] : ['--offline'])];
  try {
    execFileSync(npm, args, { cwd: install, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  } catch (err) {
    const text = `${err.stdout ?? ''}${err.stderr ?? ''}`;
    const missing = /ENOTCACHED[^\n]*|request to (\S+) failed/.exec(text);
    throw new Error(
      `npm ${args.join(' ')} failed${missing ? `: the local cache lacks a package (${missing[0]}); run once with --online, or "npm cache add" it` : ''}\n${text}`,
    );
  }
  figures.push([`npm ${args.join(' ')}`, seconds(since)]);
  const lock = JSON.parse(readFileSync(join(install, 'node_modules', '.package-lock.json'), 'utf8'));
  const packages = Object.keys(lock.packages).filter((p) => p.startsWith('node_modules/') && !lock.packages[p].link);
  figures.push(['packages installed', String(packages.length)]);
  figures.push(['node_modules size', `${(bytesIn(join(install, 'node_modules')) / 1_048_576).toFixed(1)} MB`]);
  if (existsSync(join(install, 'node_modules', 'tsx')) || existsSync(join(install, 'node_modules', 'typescript'))) {
    throw new Error('a dev dependency (tsx or typescript) was installed with --omit=dev');
  }
  figures.push(['dev dependencies present', 'none (no tsx, no typescript)']);

  await startAndStop();
  for (const [what, figure] of figures) console.log(`${what.padEnd(60)}${figure}`);
  console.log('prod install: ok');
} catch (err) {
  for (const [what, figure] of figures) console.log(`${what.padEnd(60)}${figure}`);
  console.error(`prod install: FAILED\n${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
} finally {
  if (values.keep) console.log(`kept ${install}`);
  else rmSync(install, { recursive: true, force: true });
}
