/**
 * Every `tis` command against a real service on loopback, through the CLI's own `run` (the process entry is
 * covered by tis.test.ts): the first builder made with the bootstrap token, then everything the web dashboard
 * does (tools, settings with the three URLs, picker, placement, signed launch, grade history, key rotation,
 * team), named operators and the audit log. Help lists every option of every command.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Io } from '../../bin/tis.ts';
import { COMMANDS, invokedAs, run } from '../../bin/tis.ts';
import type { TestServer } from '../server/harness.ts';
import { startServer } from '../server/harness.ts';
import type { ToolServer } from '../server/outbound/fixtures.ts';
import { answer, startToolServer, verifyToken } from '../server/outbound/fixtures.ts';

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
