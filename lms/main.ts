/**
 * `npm run lms`: the reference LMS alone, for contributors and tool teams (README, "Reference LMS").
 * Environment: `LMS_PORT` (default 3100), `LMS_HOST` (127.0.0.1), `LMS_ISSUER` (default its own URL),
 * `LMS_DB_FILE` (default `./data/lms.sqlite`; `:memory:` keeps nothing), or `LMS_DATABASE_URL` (PostgreSQL,
 * with `LMS_DATABASE_SCHEMA`: every LMS on that schema is one LMS, decision LTI-80), `LMS_PROFILE` (reference,
 * canvas, moodle), `LMS_CONTROL_TOKEN` (default: made at first start and kept in `{LMS_DB_FILE}.control-token`;
 * on PostgreSQL made at each start and printed, since each process has its own).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { startReferenceLms } from './app.js';
import { isProfileName, PROFILE_NAMES } from './profiles.js';
import { randomBytes } from 'node:crypto';

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

const port = Number(process.env['LMS_PORT'] ?? '3100');
if (!Number.isInteger(port) || port < 0 || port > 65535) fail('LMS_PORT must be a port number');
const profile = process.env['LMS_PROFILE'] ?? 'reference';
if (!isProfileName(profile)) fail(`LMS_PROFILE must be one of ${PROFILE_NAMES.join(', ')}`);
const databaseUrl = process.env['LMS_DATABASE_URL']?.trim() || null;
const schema = process.env['LMS_DATABASE_SCHEMA']?.trim() || null;
if (schema !== null && databaseUrl === null) fail('LMS_DATABASE_SCHEMA needs LMS_DATABASE_URL');
// With PostgreSQL no file is kept: the control token is the process's own.
const dbFile = databaseUrl === null ? (process.env['LMS_DB_FILE'] ?? './data/lms.sqlite') : ':memory:';
let controlToken = process.env['LMS_CONTROL_TOKEN'];
if (!controlToken) {
  const file = `${dbFile}.control-token`;
  if (dbFile !== ':memory:' && existsSync(file)) controlToken = readFileSync(file, 'utf8').trim();
  else {
    controlToken = `lmsc_${randomBytes(24).toString('base64url')}`;
    if (dbFile !== ':memory:') writeFileSync(file, `${controlToken}\n`, { mode: 0o600 });
  }
}
const issuer = process.env['LMS_ISSUER'];
// Installed before the start: the LMS listens before its store is open, and a SIGTERM in between (a
// supervisor, `npm run lms` stopped at once) must still stop it gracefully, not kill it mid-start (OPS-31).
let stopRequested = false;
let started: Awaited<ReturnType<typeof startReferenceLms>> | null = null;
const stop = (): void => {
  if (started) void started.stop().then(() => process.exit(0));
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    stopRequested = true;
    stop();
  });
}
const lms = await startReferenceLms({
  host: process.env['LMS_HOST'] ?? '127.0.0.1',
  port,
  ...(databaseUrl === null ? { dbFile } : { store: { databaseUrl, ...(schema === null ? {} : { schema }) } }),
  profile,
  controlToken,
  ...(issuer ? { issuer } : {}),
});
process.stdout.write(
  `reference LMS (${profile}) at ${lms.url}\n` +
    `  issuer:               ${lms.issuer}\n` +
    `  OpenID configuration: ${lms.issuer}/.well-known/openid-configuration\n` +
    `  control token:        ${dbFile === ':memory:' || process.env['LMS_CONTROL_TOKEN'] ? controlToken : `in ${dbFile}.control-token`}\n`,
);
started = lms;
if (stopRequested) stop();
process.stdout.write(nextSteps(lms.url));

/** What to do with it (issue 29): the first calls of README's "Reference LMS" section, with this LMS's URL. */
function nextSteps(url: string): string {
  return [
    'Next steps (README.md, "Reference LMS", has each call):',
    `  1. Register a tool:  POST ${url}/controls/registrations/initiate {"tool_url": "http://127.0.0.1:3000/lti/register"}`,
    '                       with the control token as "Authorization: Bearer"; open the "url" it answers in a browser.',
    `  2. A person, a course, an enrolment: POST ${url}/controls/users, POST ${url}/controls/courses, PUT .../enrolments/<sub>.`,
    `  3. Place content (POST ${url}/controls/deep-links) and launch it (POST ${url}/controls/launches); open each "url".`,
    `  Open ${url}/ in a browser for this summary.`,
    '',
  ].join('\n');
}
