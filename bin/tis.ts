#!/usr/bin/env node
/**
 * `tis`: the operators' command line for the dashboard API (openapi/dashboard/, decisions L-08, S-36), over HTTP
 * with the kit's typed dashboard client. It does nothing the API does not: every refusal is the service's,
 * printed with its `detail`, and the exit status is non-zero.
 *
 *   node --import tsx bin/tis.ts --help      (or `npm run tis -- --help` in this checkout; `tis` once the package is installed)
 */
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createDashboardClient } from '../client/index.js';
import { LMS_USAGE, runLms } from './commands/lms.js';
import type { DashboardClient, DashboardComponents } from '../client/index.js';

type Schemas = DashboardComponents['schemas'];
type Role = Schemas['SandboxRole'];

/** Exit statuses: the API refused or could not be reached (1), the command line is wrong (2). */
export const EXIT_API = 1;
export const EXIT_USAGE = 2;

const ROLES: readonly Role[] = ['instructor', 'assistant', 'manager', 'student_1', 'student_2'];
const HOSTING: readonly Schemas['Hosting'][] = ['self_hosted', 'hosted'];

const USAGE = `Usage: tis <command> [options]

Operator commands for the Tool Integration Service's dashboard API.

Commands:
  register --name <name> [--hosting self_hosted|hosted] [--description <text>]
           [--contract-version <version>]
      Register a tool (a builder's token). Prints the tool's ID and, for a
      self-hosted tool, its API key: the only time the key is shown.
  activate <app_id>
      Activate a tool (the platform team's token).
  suspend <app_id>
      Suspend a tool (the platform team's token).
  rotate-key <app_id>
      Issue a new API key; the old one stops working at once. Prints the key.
  sandbox-launch-url <app_id> <placement_id> [--as <role>]
      Print a Sandbox launch URL for a placement, as a trial user: instructor,
      assistant, manager, student_1 (default) or student_2. Open it in a
      browser within 120 seconds; it works once.
${LMS_USAGE}

Options:
  --url <origin>        The service's origin (default: $TIS_URL).
  --token <token>       The dashboard credential (default: $TIS_TOKEN).
  --token-file <path>   Read the credential from a file, e.g. DATA_DIR/platform-token.
  --json                Print the API's JSON answer instead of text.
  -h, --help            Show this help.

A refused call prints the service's message and exits 1; a wrong command line exits 2.
`;

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

class UsageError extends Error {}

const OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  'token-file': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  name: { type: 'string' },
  hosting: { type: 'string' },
  description: { type: 'string' },
  'contract-version': { type: 'string' },
  as: { type: 'string' },
} as const;

/** Which options each command takes, besides the connection ones. */
const COMMAND_OPTIONS: Readonly<Record<string, readonly string[]>> = {
  register: ['name', 'hosting', 'description', 'contract-version'],
  activate: [],
  suspend: [],
  'rotate-key': [],
  'sandbox-launch-url': ['as'],
};
const COMMAND_ARGS: Readonly<Record<string, readonly string[]>> = {
  register: [],
  activate: ['app_id'],
  suspend: ['app_id'],
  'rotate-key': ['app_id'],
  'sandbox-launch-url': ['app_id', 'placement_id'],
};

type Values = { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]['type'] extends 'boolean' ? boolean : string };

function connection(values: Values, env: NodeJS.ProcessEnv): { url: string; token: string } {
  const url = values.url ?? env['TIS_URL'];
  if (!url) throw new UsageError('the service URL is missing: pass --url or set TIS_URL');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url must be an absolute http(s) URL, got ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new UsageError(`--url must be an http(s) URL, got ${JSON.stringify(url)}`);
  let token = values.token ?? env['TIS_TOKEN'];
  if (values['token-file'] !== undefined) {
    try {
      token = readFileSync(values['token-file'], 'utf8').trim();
    } catch (err) {
      throw new UsageError(`cannot read --token-file ${values['token-file']}: ${(err as Error).message}`);
    }
  }
  if (!token) throw new UsageError('the token is missing: pass --token or --token-file, or set TIS_TOKEN');
  return { url: parsed.origin, token };
}

/** The service's refusal, as the API worded it. */
class ApiRefusal extends Error {
  constructor(readonly status: number, readonly detail: string) {
    super(detail);
  }
}

function check<T>(result: { data?: T; error?: { status: number; detail: string } }): T {
  if (result.error) throw new ApiRefusal(result.error.status, result.error.detail);
  return result.data as T;
}

async function runCommand(command: string, args: string[], values: Values, client: DashboardClient, io: Io): Promise<void> {
  const json = values.json === true;
  const app_id = args[0] ?? '';
  switch (command) {
    case 'register': {
      if (values.name === undefined) throw new UsageError('register needs --name');
      const hosting = (values.hosting ?? 'self_hosted') as Schemas['Hosting'];
      if (!HOSTING.includes(hosting)) throw new UsageError(`--hosting must be one of ${HOSTING.join(', ')}`);
      const body: Schemas['AppRegistration'] = { name: values.name, hosting };
      if (values.description !== undefined) body.description = values.description;
      if (values['contract-version'] !== undefined) body.contract_version = values['contract-version'] as Schemas['ContractVersion'];
      const registered = check(await client.POST('/dashboard/v1/apps', { body }));
      if (json) return io.out(JSON.stringify(registered, null, 2));
      io.out(`registered ${registered.app.id} (${registered.app.status}, ${registered.app.hosting})`);
      if (registered.api_key !== null) {
        io.out(`api_key: ${registered.api_key}`);
        io.err('The API key is shown only this once; store it on the tool\'s server.');
      }
      return;
    }
    case 'activate':
    case 'suspend': {
      const path = command === 'activate' ? '/dashboard/v1/apps/{app_id}/activate' : '/dashboard/v1/apps/{app_id}/suspend';
      const app = check(await client.POST(path, { params: { path: { app_id } } }));
      if (json) return io.out(JSON.stringify(app, null, 2));
      io.out(`${app.id} is ${app.status}`);
      return;
    }
    case 'rotate-key': {
      const rotated = check(await client.POST('/dashboard/v1/apps/{app_id}/rotate-key', { params: { path: { app_id } } }));
      if (json) return io.out(JSON.stringify(rotated, null, 2));
      io.out(`api_key: ${rotated.api_key}`);
      io.err(`The old key stopped working; the new one (${rotated.api_key_hint}) is shown only this once.`);
      return;
    }
    case 'sandbox-launch-url': {
      const as = (values.as ?? 'student_1') as Role;
      if (!ROLES.includes(as)) throw new UsageError(`--as must be one of ${ROLES.join(', ')}`);
      const ticket = check(
        await client.POST('/dashboard/v1/apps/{app_id}/sandbox/placements/{placement_id}/launches', {
          params: { path: { app_id, placement_id: args[1] ?? '' } },
          body: { as },
        }),
      );
      if (json) return io.out(JSON.stringify(ticket, null, 2));
      io.out(ticket.launch_url);
      io.err(`Open it in a browser before ${ticket.expires}; it works once.`);
      return;
    }
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

/** Runs one command line; answers the exit status. */
export async function run(argv: readonly string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  if (argv[0] === 'lms') return runLms(argv.slice(1), env, io);
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const values = parsed.values as Values;
    const [command, ...args] = parsed.positionals;
    if (values.help || command === undefined || command === 'help') {
      if (command === undefined && !values.help) {
        io.err(USAGE);
        return EXIT_USAGE;
      }
      io.out(USAGE);
      return 0;
    }
    const allowed = COMMAND_OPTIONS[command];
    const expected = COMMAND_ARGS[command];
    if (!allowed || !expected) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    for (const name of Object.keys(values)) {
      if (['url', 'token', 'token-file', 'json', 'help'].includes(name)) continue;
      if (!allowed.includes(name)) throw new UsageError(`${command} does not take --${name}`);
    }
    if (args.length !== expected.length) {
      throw new UsageError(`${command} takes ${expected.length === 0 ? 'no arguments' : expected.map((a) => `<${a}>`).join(' ')}`);
    }
    const { url, token } = connection(values, env);
    const client = createDashboardClient({ baseUrl: url, token });
    try {
      await runCommand(command, args, values, client, io);
    } catch (err) {
      if (err instanceof ApiRefusal || err instanceof UsageError) throw err;
      // fetch failed: nothing answered at the URL.
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      io.err(`error: cannot reach ${url}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
      return EXIT_API;
    }
    return 0;
  } catch (err) {
    if (err instanceof ApiRefusal) {
      io.err(`error: ${err.detail} (HTTP ${err.status})`);
      return EXIT_API;
    }
    if (err instanceof UsageError) {
      io.err(`error: ${err.message}\nRun "tis --help" for the commands.`);
      return EXIT_USAGE;
    }
    throw err;
  }
}

/** The process entry: `node --import tsx bin/tis.ts ...` (`npm run tis -- ...`), or the compiled `dist/bin/tis.js` (the package's `tis`). */
export async function main(): Promise<void> {
  const io: Io = { out: (line) => process.stdout.write(`${line}\n`), err: (line) => process.stderr.write(`${line}\n`) };
  process.exitCode = await run(process.argv.slice(2), process.env, io);
}

if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
