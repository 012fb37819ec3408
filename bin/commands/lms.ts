/**
 * `tis lms list|show|activate|deactivate|add`: the platform team's LMS registrations (decisions LTI-06,
 * LTI-07), over the dashboard API like every `tis` command. Exit statuses as `tis`: 1 when the API refuses
 * or cannot be reached, 2 on a wrong command line.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createDashboardClient } from '../../client/index.js';
import type { DashboardComponents } from '../../client/index.js';

type Registration = DashboardComponents['schemas']['LmsRegistration'];

export interface LmsIo {
  out(line: string): void;
  err(line: string): void;
}

export const LMS_USAGE = `  lms list
      List the LMS registrations (the platform team's token).
  lms show <registration_id>
  lms activate <registration_id>
  lms deactivate <registration_id>
  lms add --issuer <url> --client-id <id> --deployment <id> [--deployment <id> ...]
          --auth-url <url> --token-url <url> --jwks-url <url>
          [--token-audience <aud>] [--title <text>]
      Register an LMS by hand (no Dynamic Registration). It arrives pending.`;

const OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  'token-file': { type: 'string' },
  json: { type: 'boolean' },
  issuer: { type: 'string' },
  'client-id': { type: 'string' },
  deployment: { type: 'string', multiple: true },
  'auth-url': { type: 'string' },
  'token-url': { type: 'string' },
  'jwks-url': { type: 'string' },
  'token-audience': { type: 'string' },
  title: { type: 'string' },
} as const;

const ADD_OPTIONS = ['issuer', 'client-id', 'deployment', 'auth-url', 'token-url', 'jwks-url', 'token-audience', 'title'];
const ARGS: Readonly<Record<string, number>> = { list: 0, show: 1, activate: 1, deactivate: 1, add: 0 };

class UsageError extends Error {}
class Refused extends Error {
  constructor(readonly status: number, readonly detail: string) {
    super(detail);
  }
}

function check<T>(result: { data?: T; error?: { status: number; detail: string } }): T {
  if (result.error) throw new Refused(result.error.status, result.error.detail);
  return result.data as T;
}

function describe(r: Registration): string[] {
  return [
    `${r.id} ${r.status} (${r.method}) ${r.title}`,
    `  issuer: ${r.issuer}`,
    `  client_id: ${r.client_id}`,
    `  deployments: ${r.deployments.length === 0 ? '(none yet)' : r.deployments.join(', ')}`,
    `  auth_url: ${r.auth_url}`,
    `  token_url: ${r.token_url}${r.token_audience !== null ? ` (audience ${r.token_audience})` : ''}`,
    `  jwks_url: ${r.jwks_url}`,
  ];
}

export async function runLms(argv: readonly string[], env: NodeJS.ProcessEnv, io: LmsIo): Promise<number> {
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const values = parsed.values;
    const [command, ...args] = parsed.positionals;
    if (command === undefined || !(command in ARGS)) throw new UsageError(`lms takes list, show, activate, deactivate or add`);
    if (args.length !== ARGS[command]) throw new UsageError(`lms ${command} takes ${ARGS[command] === 0 ? 'no arguments' : '<registration_id>'}`);
    for (const name of Object.keys(values)) {
      if (ADD_OPTIONS.includes(name) && command !== 'add') throw new UsageError(`lms ${command} does not take --${name}`);
    }
    const url = values.url ?? env['TIS_URL'];
    if (!url || !/^https?:\/\//.test(url)) throw new UsageError('the service URL is missing: pass --url or set TIS_URL');
    let token = values.token ?? env['TIS_TOKEN'];
    if (values['token-file'] !== undefined) {
      try {
        token = readFileSync(values['token-file'], 'utf8').trim();
      } catch (err) {
        throw new UsageError(`cannot read --token-file ${values['token-file']}: ${(err as Error).message}`);
      }
    }
    if (!token) throw new UsageError('the token is missing: pass --token or --token-file, or set TIS_TOKEN');
    const client = createDashboardClient({ baseUrl: new URL(url).origin, token });
    const print = (r: Registration): void => (values.json ? io.out(JSON.stringify(r, null, 2)) : describe(r).forEach((l) => io.out(l)));
    const registration_id = args[0] ?? '';
    try {
      switch (command) {
        case 'list': {
          const list = check(await client.GET('/dashboard/v1/lms'));
          if (values.json) io.out(JSON.stringify(list, null, 2));
          else if (list.registrations.length === 0) io.out('no LMS registrations yet');
          else for (const r of list.registrations) io.out(`${r.id} ${r.status} ${r.issuer} client ${r.client_id} (${r.deployments.length} deployments)`);
          return 0;
        }
        case 'show':
          print(check(await client.GET('/dashboard/v1/lms/{registration_id}', { params: { path: { registration_id } } })));
          return 0;
        case 'activate':
        case 'deactivate': {
          const path = command === 'activate' ? '/dashboard/v1/lms/{registration_id}/activate' : '/dashboard/v1/lms/{registration_id}/deactivate';
          const r = check(await client.POST(path, { params: { path: { registration_id } } }));
          if (values.json) io.out(JSON.stringify(r, null, 2));
          else io.out(`${r.id} is ${r.status}`);
          return 0;
        }
        default: {
          const required = ['issuer', 'client-id', 'deployment', 'auth-url', 'token-url', 'jwks-url'] as const;
          const missing = required.filter((name) => values[name] === undefined);
          if (missing.length > 0) throw new UsageError(`lms add needs ${missing.map((m) => `--${m}`).join(', ')}`);
          print(
            check(
              await client.POST('/dashboard/v1/lms', {
                body: {
                  issuer: values.issuer ?? '',
                  client_id: values['client-id'] ?? '',
                  deployments: values.deployment ?? [],
                  auth_url: values['auth-url'] ?? '',
                  token_url: values['token-url'] ?? '',
                  jwks_url: values['jwks-url'] ?? '',
                  ...(values['token-audience'] !== undefined ? { token_audience: values['token-audience'] } : {}),
                  ...(values.title !== undefined ? { title: values.title } : {}),
                },
              }),
            ),
          );
          return 0;
        }
      }
    } catch (err) {
      if (err instanceof Refused || err instanceof UsageError) throw err;
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      io.err(`error: cannot reach ${url}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
      return 1;
    }
  } catch (err) {
    if (err instanceof Refused) {
      io.err(`error: ${err.detail} (HTTP ${err.status})`);
      return 1;
    }
    if (err instanceof UsageError) {
      io.err(`error: ${err.message}\nRun "tis --help" for the commands.`);
      return 2;
    }
    throw err;
  }
}
