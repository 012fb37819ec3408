/**
 * Starts the quiz tool:
 *
 *   TIS_APP_ID=app_... ALLOW_LOOPBACK_SERVICE=1 npm run example:quiz
 *
 * Configuration by environment (examples/quiz/README.md): QUIZ_PORT (4100; 0 picks a free port),
 * QUIZ_HOST (127.0.0.1), QUIZ_PUBLIC_URL, TIS_ORIGIN (http://127.0.0.1:3000), TIS_APP_ID (required),
 * ALLOW_LOOPBACK_SERVICE. Once it accepts connections it prints `quiz tool listening on <url>` (the line
 * scripts wait for), then the three endpoint URLs to register. SIGINT or SIGTERM stops it.
 *
 *   npm run example:quiz -- try-mock [<mock-url>]
 *
 * runs one student attempt against the Prism mock instead (try-mock.ts).
 */
import type { AddressInfo } from 'node:net';
import { createQuizApp } from './app.js';
import { QuizConfigError, quizConfigFrom } from './config.js';

async function serve(): Promise<void> {
  let config;
  try {
    config = quizConfigFrom(process.env);
  } catch (err) {
    if (err instanceof QuizConfigError) {
      console.error(`quiz: cannot start:\n${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const app = createQuizApp({ config });
  const server = app.listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  const base = config.publicUrl ?? url;
  console.log(`quiz tool listening on ${url}`);
  console.log(`  callback_url  ${base}/launch`);
  console.log(`  provision_url ${base}/provision`);
  console.log(`  locations_url ${base}/locations`);
  console.log(`  tokens: issuer ${config.serviceOrigin}, tool ${config.appId}`);

  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    server.close(() => process.exit(0));
    server.closeIdleConnections();
    setTimeout(() => {
      server.closeAllConnections();
      process.exit(0);
    }, 5_000).unref();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

const [command, ...args] = process.argv.slice(2);
if (command === undefined || command === 'serve') {
  serve().catch((err: unknown) => {
    console.error(`quiz: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
} else if (command === 'try-mock') {
  const { tryAgainstMock } = await import('./try-mock.js');
  process.exit(await tryAgainstMock(args[0] ?? 'http://127.0.0.1:4010'));
} else {
  console.error('usage: main.ts [serve] | try-mock [<mock-url>]');
  process.exit(2);
}
