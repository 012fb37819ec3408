// The build's training start (decision PERF-220): runs the bundle it just wrote the way `npm start` does and
// keeps V8's code cache of what that start compiled, for bundle-loader.mjs to start from. Two starts on a
// fresh SQLite store in a temporary folder: the first creates the store, the signing key and the platform
// token (a one-time path that production's later starts never take), the second is the one kept. It serves
// a few requests that need nothing set up: the health check, the dashboard API with the platform token (the
// validator library, Ajv and a compiled schema) and a contract storage request without a valid credential.
// A start or an answer that goes wrong fails the build: the bundle would not serve.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { startNodeEnv, startNodeFlags } from './start-flags.mjs';

/**
 * @param {{ main: string, cacheFile: string, root: string, nodePath: string | null }} options
 *   `main`: the build's dist/server/main.js; `cacheFile`: where the loader reads the cache; `root`: the
 *   checkout (its start flags); `nodePath`: a node_modules folder for a build written outside the checkout,
 *   which gets its own install only afterwards.
 */
export async function trainCodeCache({ main, cacheFile, root, nodePath }) {
  rmSync(cacheFile, { force: true });
  const dataDir = mkdtempSync(join(tmpdir(), 'tis-build-cache-'));
  try {
    // Only what the start needs: a developer's DATABASE_URL or S3 settings must not reach the training.
    const env = {
      ...startNodeEnv(root),
      PATH: process.env['PATH'] ?? '',
      ...(nodePath === null ? {} : { NODE_PATH: [nodePath, process.env['NODE_PATH']].filter(Boolean).join(delimiter) }),
      NODE_ENV: 'production',
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'silent',
    };
    await stop(await start(main, root, env));
    const server = await start(main, root, { ...env, TIS_CODE_CACHE_OUT: cacheFile });
    try {
      const token = readFileSync(join(dataDir, 'platform-token'), 'utf8').trim();
      const dashboard = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
      const storage = `${server.url}/v1/contexts/c/apps/a/members/m/storage`;
      await expectStatus(server.url, '/dashboard/v1/me', { headers: dashboard }, 200);
      await expectStatus(server.url, '/dashboard/v1/builders', { method: 'POST', headers: dashboard, body: '{"name":"Training"}' }, 422);
      await expectStatus(storage, '', { headers: { Authorization: 'Bearer not.a.token' } }, 401);
      await expectStatus(storage, '', { method: 'PUT', headers: { Authorization: 'Bearer not.a.token', 'Content-Type': 'application/json' }, body: '{}' }, 401);
    } finally {
      await stop(server);
    }
    if (!existsSync(cacheFile)) throw new Error(`the training start wrote no code cache at ${cacheFile}`);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Starts the build as `npm start` does and resolves with its URL once it listens. */
function start(main, root, env) {
  const child = spawn(process.execPath, [...startNodeFlags(root), main], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error('no `listening on` line within 30 s')), 30_000);
    const fail = (err) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`the build's training start failed: ${err.message}\n${output}`));
    };
    child.stderr.on('data', (chunk) => (output += chunk));
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const url = /listening on (http:\/\/\S+) \(/.exec(output)?.[1];
      if (url === undefined) return;
      child.stdout.removeAllListeners('data');
      child.stdout.resume();
      // Answered once the start's synchronous rest (its signal handlers among it) has run.
      fetch(`${url}/healthz`).then(
        async (res) => {
          await res.arrayBuffer();
          if (res.status !== 200) return fail(new Error(`/healthz answered ${res.status}`));
          clearTimeout(timer);
          resolve({ child, url, output: () => output });
        },
        (err) => fail(err),
      );
    });
    child.once('error', fail);
    child.once('exit', (code) => fail(new Error(`it exited with ${code}`)));
  });
}

/** SIGTERM, as at a deploy; the service shuts down and exits 0 (the loader writes the cache at exit). */
async function stop({ child, output }) {
  child.removeAllListeners('exit');
  const exited = child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const code = await exited;
  if (code !== 0) throw new Error(`the build's training start exited with ${code} at SIGTERM\n${output()}`);
}

async function expectStatus(base, path, init, status) {
  const res = await fetch(`${base}${path}`, init);
  const body = await res.text();
  if (res.status !== status) throw new Error(`the build's training start answered ${init.method ?? 'GET'} ${base}${path} with ${res.status}, not ${status}: ${body}`);
}
