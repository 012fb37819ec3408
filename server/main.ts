/**
 * `npm start`: opens the store (SQLite under `DATA_DIR`, or PostgreSQL at `DATABASE_URL`), serves the
 * API, and shuts down gracefully on SIGTERM or SIGINT (stop accepting, finish the requests in flight,
 * close the store). Configuration: see server/config.ts and README.md.
 */
import { startService } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './http/log.js';
import { nextSteps } from './next-steps.js';
import { checkEnvironment, listenProblem } from './startup/preflight.js';

/** A refused start (OPS-30): one line per problem on stderr, exit code 2, nothing written. */
function refuse(lines: readonly string[]): never {
  process.stderr.write(`${lines.join('\n')}\n`);
  process.exit(2);
}

/** The listen itself failed: the port was taken, or the name stopped resolving, after the check passed. */
function isListenError(err: unknown): boolean {
  const syscall = (err as NodeJS.ErrnoException | null)?.syscall;
  return syscall === 'listen' || syscall === 'getaddrinfo';
}

/** What the build's loader (scripts/build/bundle-loader.mjs) left: `used`, `rejected`, `missing` or `off`. */
const codeCache = (globalThis as Record<symbol, unknown>)[Symbol.for('tis.codeCache')];

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) refuse(err.message.split('\n'));
    throw err;
  }
  const problems = await checkEnvironment(config);
  if (problems.length > 0) refuse(problems.map((problem) => `cannot start: ${problem}`));
  const log = createLogger({ level: config.logLevel });
  if (config.allowLoopbackTools) {
    const banner = '!'.repeat(78);
    process.stderr.write(
      `${banner}\n!! ALLOW_LOOPBACK_TOOLS is ON: tool URLs may point at loopback addresses.\n` +
        `!! This is a development switch. Never run a shared or production service with it.\n${banner}\n`,
    );
    log.warn('ALLOW_LOOPBACK_TOOLS is on: tool endpoint URLs may resolve to loopback addresses (development only)');
  }
  let running;
  try {
    running = await startService(config, { log });
  } catch (err) {
    if (isListenError(err)) refuse([`cannot start: ${listenProblem(err, config.host, config.port)}`]);
    throw err;
  }
  // Before the `listening` line: a supervisor (or the build's training start) that signals as soon as it
  // reads that line must get a graceful stop, not the signal's default, which ends the process at once.
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (signals > 1) {
      log.warn('second signal: exiting without waiting', { signal });
      process.exit(1);
    }
    log.info('signal received; shutting down', { signal });
    running.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error('shutdown failed', { err });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  log.info('listening', {
    url: running.url,
    public_url: config.publicUrl,
    data_dir: config.dataDir,
    // Never the URL itself: it usually carries the database password.
    store: config.databaseUrl === null ? 'sqlite' : 'postgres',
    ...(config.databaseSchema === null ? {} : { database_schema: config.databaseSchema }),
    blob_store: config.blobStore,
    // How the build's loader compiled the service (decision PERF-220); absent when it runs from sources.
    ...(codeCache === undefined ? {} : { code_cache: codeCache }),
  });
  process.stdout.write(`Tool Integration Service listening on ${running.url} (public URL ${config.publicUrl})\n`);
  process.stdout.write(nextSteps(config, running.url));
}

main().catch((err: unknown) => {
  process.stderr.write(`failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
