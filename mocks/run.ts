/**
 * The mock launcher behind `npm run mock`, `npm run mock:proxy` and `npm run mock:tool`:
 *
 *   node --import tsx mocks/run.ts mock  [<version>] [--port <n>] [--host <h>]
 *   node --import tsx mocks/run.ts proxy [<version>] [<upstream-url>] [--port <n>] [--host <h>]
 *   node --import tsx mocks/run.ts tool  [<version>] [--port <n>] [--host <h>]
 *
 * Prism runs as this process's only child, on the bundled spec in generated/ (so what it serves is exactly
 * what `npm run generate` produced from openapi/). The launcher refuses a busy port or an unknown version
 * before starting anything, prints one line once Prism accepts connections, and on SIGINT, SIGTERM or SIGHUP
 * stops Prism and exits 0. If Prism stops by itself, the launcher exits with Prism's code.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { planFrom, repoRoot, rewriteOrigins, servedApis, USAGE, UsageError, type MockMode, type Plan } from './targets.js';

const MODES: readonly MockMode[] = ['mock', 'proxy', 'tool'];
/**
 * Prism loads and validates the whole bundle before listening; a cold machine can take a few seconds, a loaded
 * one much longer (TIS_MOCK_START_TIMEOUT_MS raises the bound; the tests start several mocks at once).
 */
const START_TIMEOUT_MS = Number(process.env['TIS_MOCK_START_TIMEOUT_MS'] ?? '') || 60_000;
/** Prism stops in milliseconds on SIGTERM; a child that ignores it is killed after this. */
const STOP_GRACE_MS = 5_000;

function prismCli(): { script: string; version: string } {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve('@stoplight/prism-cli/package.json');
  const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string; bin: string | Record<string, string> };
  const bin = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin['prism'];
  if (bin === undefined) throw new Error('@stoplight/prism-cli has no `prism` binary');
  return { script: path.resolve(path.dirname(manifest), bin), version: pkg.version };
}

/** Fails early with a message a person can act on, instead of Prism's stack trace for EADDRINUSE. */
function checkPortFree(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        new UsageError(
          err.code === 'EADDRINUSE'
            ? `port ${port} on ${host} is already in use (another mock, or the service?); pass --port <n> or set TIS_MOCK_PORT`
            : `cannot listen on ${host}:${port}: ${err.message}`,
        ),
      );
    });
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A proxy whose upstream is down still starts (the service may come up later), but says so. */
async function warnIfUpstreamDown(upstream: string): Promise<void> {
  try {
    await fetch(`${upstream}/healthz`, { signal: AbortSignal.timeout(2_000) });
  } catch {
    console.warn(`warning: nothing answers at ${upstream} yet; start the service (npm start) or pass its URL`);
  }
}

function hints(plan: Plan): string[] {
  if (plan.mode === 'proxy') {
    return [
      '  Each request and response is checked against the spec: a violation is answered with Prism\'s problem',
      '  (422 for the request, 500 for the response) and listed in the sl-violations header.',
      `  Send Contract-Version: ${plan.api} (the kit's client does), or the service answers with the tool's pinned contract.`,
    ];
  }
  const lines = [
    '  Prefer: example=<name> picks a named example; Prefer: code=<status> an error case (both combine).',
    '  A request that breaks the spec gets the spec\'s own example for 422/400 (not tailored to the request):',
    '  read the sl-violations response header for what was wrong.',
  ];
  if (plan.mode === 'tool') lines.unshift('  POST /launch, /provision, /locations with an application/x-www-form-urlencoded body.');
  return lines;
}

async function main(argv: readonly string[]): Promise<number> {
  const [modeArg, ...rest] = argv;
  if (modeArg === undefined || !(MODES as readonly string[]).includes(modeArg) || rest.includes('--help')) {
    const stream = rest.includes('--help') ? process.stdout : process.stderr;
    stream.write(`${USAGE}\n\nMock (and proxy) ports:\n${servedApis('mock').map((s) => `  ${s}`).join('\n')}\n`);
    stream.write(`Tool mock ports:\n${servedApis('tool').map((s) => `  ${s}`).join('\n')}\n`);
    return rest.includes('--help') ? 0 : 2;
  }
  const mode = modeArg as MockMode;

  let plan: Plan;
  try {
    plan = planFrom(mode, rest);
    await checkPortFree(plan.host, plan.port);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`mock: ${err.message}`);
      return 2;
    }
    throw err;
  }
  if (plan.upstream !== undefined) await warnIfUpstreamDown(plan.upstream);

  let served: string | undefined;
  if (plan.rewrite !== undefined) {
    served = mkdtempSync(path.join(os.tmpdir(), 'tis-mock-'));
    const copy = path.join(served, path.basename(plan.document));
    writeFileSync(copy, rewriteOrigins(readFileSync(plan.document, 'utf8'), plan.rewrite));
    plan = { ...plan, prismArgs: plan.prismArgs.map((arg) => (arg === plan.document ? copy : arg)) };
  }
  const servedDir = served;
  const cleanUp = (): void => {
    if (servedDir !== undefined) rmSync(servedDir, { recursive: true, force: true });
  };

  const cli = prismCli();
  const child = spawn(process.execPath, [cli.script, ...plan.prismArgs], {
    cwd: repoRoot,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      cleanUp();
      resolve({ code, signal });
    });
    child.once('error', (err) => {
      console.error(`mock: cannot start Prism: ${err.message}`);
      resolve({ code: 1, signal: null });
    });
  });

  let stopping = false;
  const stop = (): void => {
    if (stopping) {
      // A second Ctrl-C means now.
      child.kill('SIGKILL');
      return;
    }
    stopping = true;
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS).unref();
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, stop);

  let exited = false;
  void exit.then(() => {
    exited = true;
  });
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!exited && !stopping) {
    if (await accepts(plan.host, plan.port)) {
      console.log(`Prism ${cli.version} (pid ${child.pid}) ${plan.describe}`);
      for (const line of hints(plan)) console.log(line);
      break;
    }
    if (Date.now() > deadline) {
      console.error(`mock: Prism did not listen on ${plan.host}:${plan.port} within ${START_TIMEOUT_MS / 1000} s; stopping it`);
      stop();
      await exit;
      return 1;
    }
    await sleep(100);
  }

  const { code, signal } = await exit;
  if (stopping) return 0;
  console.error(`mock: Prism exited ${signal !== null ? `on ${signal}` : `with code ${code}`}`);
  return code === null || code === 0 ? 1 : code;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  },
);
