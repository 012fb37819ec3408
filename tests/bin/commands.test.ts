/**
 * Every `tis` command against a real service on loopback, through the CLI's own `run` (the process entry,
 * its exit codes and its stdout/stderr, is covered by tis.test.ts; decision CI-45): the first builder made
 * with the bootstrap token, then everything the web dashboard does (tools, settings with the three URLs,
 * picker, placement, signed launch, grade history, key rotation, team), named operators and the audit log;
 * the operators' first commands (register, activate, suspend, rotate-key, sandbox-launch-url) with the
 * credential from the environment, a flag or DATA_DIR/platform-token, checked back through the dashboard
 * API; a refusal prints the API's `detail` (exit 1), a wrong command line says why (exit 2). Help lists every
 * option of every command.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Io } from '../../bin/tis.ts';
import { COMMANDS, invokedAs, run } from '../../bin/tis.ts';
import { createDashboardClient, type DashboardClient } from '../../client/index.ts';
import type { TestServer } from '../server/harness.ts';
import { startServer } from '../server/harness.ts';
import type { ToolServer } from '../server/outbound/fixtures.ts';
import { answer, startToolServer, verifyToken } from '../server/outbound/fixtures.ts';
import { launchPageOf } from '../server/sandbox/launch-chain.ts';

let server: TestServer;
let tool: ToolServer;
let tokenFile: string;

interface Ran {
  code: number;
  out: string;
  err: string;
}

async function tis(args: string[], token?: string): Promise<Ran> {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (l) => out.push(l), err: (l) => err.push(l) };
  const env = { TIS_URL: server.url, ...(token !== undefined ? { TIS_TOKEN: token } : {}) };
  const code = await run(args, env, io);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/**
 * `tis <args>` with only the environment given, as the process entry hands it to `run`: its exit code and
 * what it printed to stdout and stderr, each line ending in a newline as the process writes it.
 */
async function tisWith(args: readonly string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await run(args, env, { out: (l) => (stdout += `${l}\n`), err: (l) => (stderr += `${l}\n`) });
  return { code, stdout, stderr };
}

async function json<T = Record<string, unknown>>(args: string[], token?: string): Promise<T> {
  const ran = await tis([...args, '--json'], token);
  expect(ran.code, `${args.join(' ')}: ${ran.err}`).toBe(0);
  return JSON.parse(ran.out) as T;
}

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, logLevel: 'warn', locationsTimeoutMs: 2000, provisionTimeoutMs: 2000 } });
  tokenFile = join(server.dataDir, 'platform-token');
  tool = await startToolServer();
  tool.route('/locations', answer.json({ message: 'Pick one', locations: { 'quiz-1': { type: 'assessment', label: 'Week 1 quiz', points: 10 } } }));
  tool.route('/launch', answer.text('ok', 200, 'text/plain'));
  tool.route('/provision', answer.provisioning(() => true));
}, 60_000);
afterAll(async () => {
  await tool?.close();
  await server?.stop();
});

describe('tis help', () => {
  it('lists every command with every option, and each command lists every option in its own help', async () => {
    const help = await tis(['--help']);
    expect(help.code).toBe(0);
    for (const option of ['--url', '--token', '--token-file', '--json', '--help']) expect(help.out).toContain(option);
    const names = COMMANDS.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    for (const command of COMMANDS) {
      expect(help.out).toContain(command.name);
      const own = await tis([...command.name.split(' '), '--help']);
      expect(own.code, command.name).toBe(0);
      expect(own.out).toContain(`Usage: tis ${command.name}`);
      for (const option of Object.keys(command.options ?? {})) {
        expect(help.out, command.name).toContain(`--${option}`);
        expect(own.out, command.name).toContain(`--${option}`);
      }
      if (command.token === 'store') {
        expect(own.out, command.name).toContain('--help');
        for (const variable of command.environment) expect(own.out, command.name).toContain(variable);
      } else {
        for (const option of ['--url', '--token', '--token-file', '--json']) expect(own.out, command.name).toContain(option);
      }
    }
    for (const group of ['tools', 'sandbox', 'operators', 'builders', 'team', 'files']) expect(help.out).toContain(`${group} `);
  });

  it('"tis files --help" is the help of each files command with all its options; a store command takes no API options', async () => {
    const help = await tis(['files', '--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('Usage: tis files migrate [--from local|postgres] [--dry-run]');
    for (const option of ['--from', '--dry-run', '--help', 'S3_BUCKET', 'DATA_DIR']) expect(help.out).toContain(option);
    expect(help.out).not.toContain('--token-file');
    const wrong = await tis(['files', 'migrate', '--token', 'x']);
    expect(wrong.code).toBe(2);
    expect(wrong.err).toMatch(/^error: files migrate does not take --token/);
    const from = await tis(['files', 'migrate', '--from', 's3']);
    expect(from.code).toBe(2);
    expect(from.err).toMatch(/^error: --from must be one of local, postgres/);
  });

  it('lays help out in aligned columns within the terminal width, with the options of every command once per group', async () => {
    const help = await tis(['tools', '--help']);
    expect(help.code).toBe(0);
    const lines = help.out.split('\n');
    expect(lines.every((l) => l.length <= 100), lines.find((l) => l.length > 100)).toBe(true);
    // Global options once, after every command of the group.
    expect(help.out.match(/Options of every command/g)).toHaveLength(1);
    expect(help.out.match(/--token-file/g)).toHaveLength(1);
    // Each block of options: descriptions start in one column, never run into the option (issue 29).
    const block = lines.slice(lines.indexOf('Options:', lines.findIndex((l) => l.startsWith('Usage: tis tools list'))) + 1);
    const options = block.slice(0, block.indexOf(''));
    expect(options.join('\n')).toContain('Only tools in this status.');
    const starts = new Set(options.filter((l) => /^ {2}--\S+( \S+)? {2,}\S/.test(l)).map((l) => /^ {2}--\S+(?: \S+)? +/.exec(l)![0].length));
    expect(starts.size).toBe(1);
    expect(help.out).not.toMatch(/\S(Only tools|Entries per page)/);
    // A narrow terminal: help wraps to it.
    const narrow: string[] = [];
    expect(await run(['tools', 'settings', '--help'], {}, { out: (l) => narrow.push(l), err: () => {}, width: 60 })).toBe(0);
    expect(narrow.join('\n').split('\n').every((l) => l.length <= 60)).toBe(true);
  });

  it('names an unknown option with the closest known one, and the command to run as it was invoked', async () => {
    const typo = await tis(['tools', 'list', '--stauts', 'active'], 'x');
    expect(typo.code).toBe(2);
    expect(typo.err).toBe('error: tools list does not take --stauts; did you mean --status?\nRun "tis tools list --help" for its options.');
    expect((await tis(['--jsno', 'tools', 'list'], 'x')).err.split('\n')[0]).toBe('error: tools list does not take --jsno; did you mean --json?');
    expect((await tis(['tools', 'list', '--url'], 'x')).err.split('\n')[0]).toBe('error: --url needs a value (--url <origin>)');
    expect((await tis(['tools', 'list', '--zzzzzz'], 'x')).err.split('\n')[0]).toBe('error: tools list does not take --zzzzzz');
    const err: string[] = [];
    await run(['frobnicate'], {}, { out: () => {}, err: (l) => err.push(l) }, 'npm run -s tis --');
    expect(err.join('\n')).toBe('error: unknown command "frobnicate"\nRun "npm run -s tis -- --help" for the commands.');
    const cwd = '/work/checkout';
    expect(invokedAs({ npm_lifecycle_event: 'tis' }, `${cwd}/bin/tis.ts`, ['--import', 'tsx'], cwd)).toBe('npm run -s tis --');
    expect(invokedAs({}, `${cwd}/bin/tis.ts`, ['--import', 'tsx'], cwd)).toBe('node --import tsx bin/tis.ts');
    expect(invokedAs({}, '/usr/local/bin/tis', [], cwd)).toBe('tis');
    expect(invokedAs({ npm_command: 'exec' }, `${cwd}/node_modules/.bin/tis`, [], cwd)).toBe('npx tis');
  });

  it('says which commands a group has, and refuses unknown words with exit 2', async () => {
    const group = await tis(['sandbox'], 'x');
    expect(group.code).toBe(2);
    expect(group.err).toMatch(/^error: sandbox needs a command: "sandbox show", "sandbox picker"/);
    expect((await tis(['tools', 'frobnicate'], 'x')).err).toMatch(/^error: unknown command "tools frobnicate"/);
    expect((await tis(['tools', 'settings', 'app_x'], 'x')).err).toMatch(/^error: tools settings needs at least one of --name/);
    expect((await tis(['tools', 'list', '--status', 'gone'], 'x')).err).toMatch(/^error: --status must be one of draft, active, suspended/);
  });
});

describe('tis commands', () => {
  it('creates the first builder with the bootstrap token, then does what the web dashboard does', async () => {
    const bootstrap = readFileSync(tokenFile, 'utf8').trim();
    // The first builder of a fresh install, from the token file the service wrote.
    const created = await tis(['builders', 'create', '--name', 'Ana Ruiz', '--email', 'ana@northwind.example', '--token-file', tokenFile]);
    expect(created.code, created.err).toBe(0);
    const builderToken = /token: (tisb_\S+)/.exec(created.out)?.[1] ?? '';
    expect(builderToken).toMatch(/^tisb_[A-Za-z0-9_-]{43}$/);
    expect(created.err).toContain('shown only this once');
    expect((await tis(['whoami'], builderToken)).out).toMatch(/^builder bld_\w+ \(Ana Ruiz, ana@northwind.example\)$/);
    expect((await json<{ builders: Array<{ email: string }> }>(['builders', 'list'], bootstrap)).builders.map((b) => b.email)).toContain('ana@northwind.example');

    const registered = await json<{ app: { id: string } }>(['register', '--name', 'CLI Quiz'], builderToken);
    const appId = registered.app.id;
    const listed = await tis(['tools', 'list'], builderToken);
    expect(listed.out).toMatch(new RegExp(`^ID +STATUS +HOSTING +NAME\\n${appId} +draft +self_hosted +CLI Quiz$`));

    // The three URLs, all or nothing and under the URL rules.
    const refused = await tis(['tools', 'settings', appId, '--callback-url', 'http://example.com/launch'], builderToken);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/^error: callback_url must be an absolute https:\/\/ URL.* \(HTTP 422\)$/);
    const set = await tis(
      ['tools', 'settings', appId, '--callback-url', tool.url('/launch'), '--provision-url', tool.url('/provision'), '--locations-url', tool.url('/locations'), '--description', 'Weekly'],
      builderToken,
    );
    expect(set.code, set.err).toBe(0);
    expect(set.out).toContain(`callback_url:     ${tool.url('/launch')}`);
    const shown = await json<Record<string, unknown>>(['tools', 'show', appId], builderToken);
    expect(shown).toMatchObject({ locations_url: tool.url('/locations'), provision_url: tool.url('/provision'), description: 'Weekly' });
    expect((await json(['tools', 'settings', appId, '--description', ''], builderToken))['description']).toBeNull();

    // Picker, placement, the signed launch.
    const picker = await tis(['sandbox', 'picker', appId], builderToken);
    expect(picker.out).toContain('message: Pick one');
    expect(picker.out).toMatch(/ {2}quiz-1 {2}assessment {2}Week 1 quiz/);
    const placement = await json<{ id: string }>(['sandbox', 'place', appId, 'quiz-1'], builderToken);
    let signed: { url: string; fields: { launch_data: string } } | null = null;
    for (let i = 0; i < 100 && signed === null; i += 1) {
      const ran = await tis(['sandbox', 'signed-launch', appId, placement.id, '--as', 'student_2', '--json'], builderToken);
      if (ran.code === 0) signed = JSON.parse(ran.out) as { url: string; fields: { launch_data: string } };
      else await new Promise((resolve) => setTimeout(resolve, 30));
    }
    expect(signed?.url).toBe(tool.url('/launch'));
    const claims = await verifyToken(server, signed?.fields.launch_data ?? '', appId);
    expect(claims['aud']).toBeDefined();
    expect((await tis(['sandbox', 'placements', appId], builderToken)).out).toContain(placement.id);
    expect((await tis(['sandbox', 'show', appId], builderToken)).out).toContain('trial course: ctx_');
    expect((await tis(['grades', appId], builderToken)).out).toBe('(none)');
    // A score from the launch's own token: both grade commands show it as points and a percentage (issue 29).
    const launch = claims as { api: { token: string }; grade: { submit: string } };
    const scored = await fetch(launch.grade.submit, {
      method: 'POST',
      headers: { authorization: `Bearer ${launch.api.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ score: 1 / 3 }),
    });
    expect(scored.status).toBe(200);
    expect((await tis(['sandbox', 'grades', appId], builderToken)).out).toContain('student_2  3.33 / 10 (33%)');
    const grades = await tis(['grades', appId], builderToken);
    expect(grades.out.split('\n')[1]).toContain('success  3.33 / 10 (33%)');

    // Key rotation, team, activation by the platform team.
    const rotated = await tis(['rotate-key', appId], builderToken);
    expect(rotated.out).toMatch(/^api_key: ltiaas_/);
    expect((await tis(['team', 'list', appId], builderToken)).out).toContain('ana@northwind.example');
    expect((await tis(['activate', appId], builderToken)).err).toBe("error: this operation takes the platform team's credential (HTTP 403)");
    expect((await tis(['activate', appId], bootstrap)).out).toBe(`${appId} is active`);
    expect((await tis(['tools', 'list', '--status', 'active'], builderToken)).out).toContain(appId);

    // Named operators and the audit log.
    const operator = await tis(['operators', 'create', '--name', 'Kofi Mensah', '--email', 'kofi@northwind.example'], bootstrap);
    const operatorToken = /token: (tiso_\S+)/.exec(operator.out)?.[1] ?? '';
    const operatorId = /created (opr_\w+)/.exec(operator.out)?.[1] ?? '';
    expect((await tis(['suspend', appId], operatorToken)).out).toBe(`${appId} is suspended`);
    const audit = await tis(['audit', '--app', appId], operatorToken);
    const lines = audit.out.split('\n');
    expect(lines[0]).toMatch(/^AT +ACTOR +ACTION +TARGET +DETAIL$/);
    expect(lines[1]).toMatch(new RegExp(`Kofi Mensah \\(${operatorId}\\) +app\\.suspend +${appId} +\\{"previous":"active"\\}$`));
    expect(lines[2]).toMatch(/platform token +app\.activate/);
    expect(audit.out).toMatch(/Ana Ruiz \(bld_\w+\) +app\.rotate_key/);
    expect(audit.out).toMatch(/Ana Ruiz \(bld_\w+\) +app\.settings/);
    expect((await tis(['operators', 'revoke', operatorId], bootstrap)).out).toBe(`${operatorId} is revoked`);
    expect((await tis(['whoami'], operatorToken)).err).toBe('error: Invalid bearer token (HTTP 401)');
    expect((await tis(['operators', 'list'], bootstrap)).out).toMatch(new RegExp(`${operatorId} +kofi@northwind.example +tiso_\\.\\.\\.\\S{4} +\\d{4}-`));
  });
});

describe("the operators' first commands", () => {
  let platformToken: string;
  let builderToken: string;
  let builder: DashboardClient;

  beforeAll(async () => {
    platformToken = readFileSync(tokenFile, 'utf8').trim();
    const platform = createDashboardClient({ baseUrl: server.url, token: platformToken });
    const created = await platform.POST('/dashboard/v1/builders', { body: { name: 'Olu Operator', email: 'olu@northwind.example' } });
    if (created.error) throw new Error(created.error.detail);
    builderToken = created.data.token;
    builder = createDashboardClient({ baseUrl: server.url, token: builderToken });
  });

  async function statusOf(appId: string): Promise<string | undefined> {
    return (await builder.GET('/dashboard/v1/apps/{app_id}', { params: { path: { app_id: appId } } })).data?.status;
  }

  async function register(name: string): Promise<{ appId: string; apiKey: string }> {
    const ran = await tisWith(['register', '--name', name], { TIS_URL: server.url, TIS_TOKEN: builderToken });
    expect(ran.stderr).toBe("The API key is shown only this once; store it on the tool's server.\n");
    expect(ran.code).toBe(0);
    const match = /^registered (app_[a-z0-9]+) \(draft, self_hosted\)\napi_key: (ltiaas_\S+)\n$/.exec(ran.stdout);
    expect(match, ran.stdout).not.toBeNull();
    return { appId: match![1]!, apiKey: match![2]! };
  }

  it('refuses a wrong command line with exit 2 and says why', async () => {
    const env = { TIS_URL: server.url, TIS_TOKEN: builderToken };
    const cases: Array<[string[], Record<string, string>, string]> = [
      [['launch'], env, 'error: unknown command "launch"'],
      [['activate'], env, 'error: activate takes <app_id>'],
      [['register'], env, 'error: register needs --name'],
      [['register', '--name', 'X', '--hosting', 'cloud'], env, 'error: --hosting must be one of self_hosted, hosted'],
      [['activate', 'app_x', '--as', 'manager'], env, 'error: activate does not take --as'],
      [['sandbox-launch-url', 'app_x', 'plc_x', '--as', 'teacher'], env, 'error: --as must be one of instructor, assistant, manager, student_1, student_2'],
      [['activate', 'app_x'], { TIS_TOKEN: platformToken }, 'error: the service URL is missing: pass --url or set TIS_URL'],
      [['activate', 'app_x'], { TIS_URL: server.url }, 'error: the token is missing: pass --token or --token-file, or set TIS_TOKEN'],
      [['activate', 'app_x', '--url', 'ftp://x'], { TIS_TOKEN: platformToken }, 'error: --url must be an http(s) URL, got "ftp://x"'],
    ];
    for (const [args, environment, message] of cases) {
      const ran = await tisWith(args, environment);
      expect(ran.code, args.join(' ')).toBe(2);
      expect(ran.stderr.split('\n')[0], args.join(' ')).toBe(message);
      expect(ran.stdout).toBe('');
    }
  });

  it('registers a tool with a builder token from the environment, and prints the API key once', async () => {
    const { appId, apiKey } = await register('First Quiz');
    const app = await builder.GET('/dashboard/v1/apps/{app_id}', { params: { path: { app_id: appId } } });
    expect(app.data).toMatchObject({ name: 'First Quiz', status: 'draft', hosting: 'self_hosted', api_key_hint: `ltiaas_...${apiKey.slice(-4)}` });

    const hosted = await tisWith(['register', '--name', 'Hosted one', '--hosting', 'hosted', '--json'], { TIS_URL: server.url, TIS_TOKEN: builderToken });
    expect(hosted.code).toBe(0);
    expect(JSON.parse(hosted.stdout)).toMatchObject({ app: { name: 'Hosted one', hosting: 'hosted', status: 'draft' }, api_key: null });
  });

  it("prints the API's detail and exits 1 when the API refuses", async () => {
    const { appId } = await register('Refused things');
    const asPlatform = await tisWith(['register', '--name', 'Nope'], { TIS_URL: server.url, TIS_TOKEN: platformToken });
    expect(asPlatform.code).toBe(1);
    expect(asPlatform.stderr).toBe('error: registering a tool takes a builder credential; the platform team adds builders to a tool afterwards (HTTP 403)\n');

    const byBuilder = await tisWith(['activate', appId], { TIS_URL: server.url, TIS_TOKEN: builderToken });
    expect(byBuilder.code).toBe(1);
    expect(byBuilder.stderr).toBe("error: this operation takes the platform team's credential (HTTP 403)\n");
    expect(await statusOf(appId)).toBe('draft');

    const unknown = await tisWith(['rotate-key', 'app_00000000000000000000'], { TIS_URL: server.url, TIS_TOKEN: builderToken });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('error: app app_00000000000000000000 not found (HTTP 404)\n');

    const badToken = await tisWith(['activate', appId], { TIS_URL: server.url, TIS_TOKEN: 'tisb_nobody' });
    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toBe('error: Invalid bearer token (HTTP 401)\n');
  });

  it('activates and suspends with the platform token read from DATA_DIR/platform-token', async () => {
    const { appId } = await register('Status changes');
    const flags = ['--url', server.url, '--token-file', tokenFile];
    expect(await tisWith(['activate', appId, ...flags], {})).toEqual({ code: 0, stdout: `${appId} is active\n`, stderr: '' });
    expect(await statusOf(appId)).toBe('active');
    expect(await tisWith(['suspend', appId, ...flags], {})).toMatchObject({ code: 0, stdout: `${appId} is suspended\n` });
    expect(await statusOf(appId)).toBe('suspended');
  });

  it('rotates the key: the new key is printed and the old one stops working', async () => {
    const { appId, apiKey } = await register('Rotation');
    const ran = await tisWith(['rotate-key', appId, '--url', server.url, '--token', builderToken], {});
    expect(ran.code).toBe(0);
    const newKey = /^api_key: (ltiaas_\S+)\n$/.exec(ran.stdout)?.[1];
    expect(newKey).toMatch(/^ltiaas_app_[a-z0-9]{20,}_[A-Za-z0-9_-]{43}$/);
    expect(newKey).not.toBe(apiKey);
    expect(ran.stderr).toBe(`The old key stopped working; the new one (ltiaas_...${newKey!.slice(-4)}) is shown only this once.\n`);
    const app = await builder.GET('/dashboard/v1/apps/{app_id}', { params: { path: { app_id: appId } } });
    expect(app.data?.api_key_hint).toBe(`ltiaas_...${newKey!.slice(-4)}`);
    // A score URL takes the API key; credentials are checked before anything else (GAP-23).
    const sandbox = await builder.GET('/dashboard/v1/apps/{app_id}/sandbox', { params: { path: { app_id: appId } } });
    const scores = `${server.url}/v1/contexts/${sandbox.data!.context}/apps/${appId}/locations/loc_00000000000000000000/members/mem_00000000000000000000/scores`;
    const submit = (key: string): Promise<Response> =>
      fetch(scores, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: '{"score":1}' });
    const old = await submit(apiKey);
    expect(old.status).toBe(401);
    expect(((await old.json()) as { detail: string }).detail).toBe('Invalid API key');
    expect((await submit(newKey!)).status).not.toBe(401);
  });

  it('prints a Sandbox launch URL that opens the launch page for the tool', async () => {
    const { appId } = await register('Launchable');
    const set = await builder.PATCH('/dashboard/v1/apps/{app_id}', {
      params: { path: { app_id: appId } },
      body: { callback_url: tool.url('/launch'), provision_url: tool.url('/provision'), locations_url: tool.url('/locations') },
    });
    expect(set.error).toBeUndefined();
    const picker = await builder.POST('/dashboard/v1/apps/{app_id}/sandbox/picker', { params: { path: { app_id: appId } } });
    expect(picker.error).toBeUndefined();
    const placed = await builder.POST('/dashboard/v1/apps/{app_id}/sandbox/placements', { params: { path: { app_id: appId } }, body: { extid: 'quiz-1' } });
    if (placed.error) throw new Error(placed.error.detail);
    const env = { TIS_URL: server.url, TIS_TOKEN: builderToken };

    const ran = await tisWith(['sandbox-launch-url', appId, placed.data.id, '--as', 'instructor'], env);
    expect(ran.code).toBe(0);
    // The Sandbox LMS's launch URL (decision LTI-45), followed like a browser to the launch page.
    expect(ran.stdout.trim()).toMatch(new RegExp(`^${server.url}/lms/launch/[A-Za-z0-9_-]+$`));
    const url = await launchPageOf(ran.stdout.trim());
    expect(ran.stderr).toMatch(/^Open it in a browser before \d{4}-\d{2}-\d{2}T.+; it works once\.\n$/);
    // The page a browser would get: the launch form for the tool's callback URL, or the Provisioning
    // page while the tool is still setting the placement up (it keeps the ticket and reloads).
    let page = await fetch(url);
    for (let i = 0; page.status === 202 && i < 20; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      page = await fetch(url);
    }
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`action="${tool.url('/launch')}"`);
    expect(html).toContain('name="launch_data"');

    const unknown = await tisWith(['sandbox-launch-url', appId, 'plc_00000000000000000000'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(`error: placement plc_00000000000000000000 is not in the Sandbox of app ${appId} (HTTP 404)\n`);

    expect((await tisWith(['suspend', appId, '--url', server.url, '--token-file', tokenFile], {})).code).toBe(0);
    const closed = await tisWith(['sandbox-launch-url', appId, placed.data.id], env);
    expect(closed.code).toBe(1);
    expect(closed.stderr).toBe(`error: tool ${appId} is suspended: its Sandbox is closed until the platform team activates it (HTTP 409)\n`);
  });
});
