/**
 * The operators' CLI (bin/tis.ts) as a child process against a real service on loopback: each command
 * does what the dashboard API says (checked back through the API), a refusal prints the API's `detail`
 * and exits 1, a wrong command line exits 2, and `sandbox-launch-url` prints a launch URL that a browser
 * could open to reach the example quiz tool.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboardClient, type DashboardClient } from '../../client/index.ts';
import { REPO_ROOT, startQuizTool, type QuizProcess } from '../e2e/support.ts';
import { startServer, type TestServer } from '../server/harness.ts';
import { launchPageOf } from '../server/sandbox/launch-chain.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `node --import tsx bin/tis.ts <args>` with only the environment given (plus PATH). */
function tis(args: readonly string[], env: Record<string, string> = {}, entry = 'bin/tis.ts'): Promise<Run> {
  const argv = entry.endsWith('.ts') ? ['--import', 'tsx', entry, ...args] : [entry, ...args];
  return new Promise((resolve) => {
    execFile(process.execPath, argv, { cwd: REPO_ROOT, env: { PATH: process.env['PATH'] ?? '', ...env }, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

let server: TestServer;
let platformToken: string;
let platformTokenFile: string;
let builderToken: string;
let platform: DashboardClient;
let builder: DashboardClient;
let quiz: QuizProcess | null = null;

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, logLevel: 'warn' } });
  platformTokenFile = join(server.dataDir, 'platform-token');
  platformToken = readFileSync(platformTokenFile, 'utf8').trim();
  platform = createDashboardClient({ baseUrl: server.url, token: platformToken });
  const created = await platform.POST('/dashboard/v1/builders', { body: { name: 'Olu Operator', email: 'olu@northwind.example' } });
  if (created.error) throw new Error(created.error.detail);
  builderToken = created.data.token;
  builder = createDashboardClient({ baseUrl: server.url, token: builderToken });
}, 60_000);

afterAll(async () => {
  await quiz?.stop();
  await server?.stop();
});

async function statusOf(appId: string): Promise<string | undefined> {
  return (await builder.GET('/dashboard/v1/apps/{app_id}', { params: { path: { app_id: appId } } })).data?.status;
}

async function register(name: string): Promise<{ appId: string; apiKey: string }> {
  const run = await tis(['register', '--name', name], { TIS_URL: server.url, TIS_TOKEN: builderToken });
  expect(run.stderr).toBe("The API key is shown only this once; store it on the tool's server.\n");
  expect(run.code).toBe(0);
  const match = /^registered (app_[a-z0-9]+) \(draft, self_hosted\)\napi_key: (ltiaas_\S+)\n$/.exec(run.stdout);
  expect(match, run.stdout).not.toBeNull();
  return { appId: match![1]!, apiKey: match![2]! };
}

describe('tis CLI', () => {
  it('prints its help with every command and exits 0; no command is a usage error', async () => {
    const help = await tis(['--help']);
    expect(help.code).toBe(0);
    for (const command of ['register', 'activate', 'suspend', 'rotate-key', 'sandbox-launch-url', 'TIS_URL', 'TIS_TOKEN']) expect(help.stdout).toContain(command);
    const none = await tis([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('Usage: tis <command>');
  });

  it('is the package\'s "bin" once built, and `npm run tis` in a checkout', async () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string>; scripts: Record<string, string> };
    // The packed command is the compiled one (tsconfig.build.json compiles bin/); a checkout runs the source.
    expect(pkg.bin).toEqual({ tis: 'dist/bin/tis.js' });
    expect(pkg.scripts['tis']).toBe('node --import tsx bin/tis.ts');
    const help = await new Promise<Run>((resolve) => {
      execFile('npm', ['run', '-s', 'tis', '--', '--help'], { cwd: REPO_ROOT, env: { PATH: process.env['PATH'] ?? '' }, timeout: 30_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      });
    });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: tis <command>');
  });

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
      const run = await tis(args, environment);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr.split('\n')[0], args.join(' ')).toBe(message);
      expect(run.stdout).toBe('');
    }
  });

  it('registers a tool with a builder token from the environment, and prints the API key once', async () => {
    const { appId, apiKey } = await register('CLI Quiz');
    const app = await builder.GET('/dashboard/v1/apps/{app_id}', { params: { path: { app_id: appId } } });
    expect(app.data).toMatchObject({ name: 'CLI Quiz', status: 'draft', hosting: 'self_hosted', api_key_hint: `ltiaas_...${apiKey.slice(-4)}` });

    const hosted = await tis(['register', '--name', 'Hosted one', '--hosting', 'hosted', '--json'], { TIS_URL: server.url, TIS_TOKEN: builderToken });
    expect(hosted.code).toBe(0);
    expect(JSON.parse(hosted.stdout)).toMatchObject({ app: { name: 'Hosted one', hosting: 'hosted', status: 'draft' }, api_key: null });
  });

  it("prints the API's detail and exits 1 when the API refuses", async () => {
    const { appId } = await register('Refused things');
    const asPlatform = await tis(['register', '--name', 'Nope'], { TIS_URL: server.url, TIS_TOKEN: platformToken });
    expect(asPlatform.code).toBe(1);
    expect(asPlatform.stderr).toBe('error: registering a tool takes a builder credential; the platform team adds builders to a tool afterwards (HTTP 403)\n');

    const byBuilder = await tis(['activate', appId], { TIS_URL: server.url, TIS_TOKEN: builderToken });
    expect(byBuilder.code).toBe(1);
    expect(byBuilder.stderr).toBe("error: this operation takes the platform team's credential (HTTP 403)\n");
    expect(await statusOf(appId)).toBe('draft');

    const unknown = await tis(['rotate-key', 'app_00000000000000000000'], { TIS_URL: server.url, TIS_TOKEN: builderToken });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('error: app app_00000000000000000000 not found (HTTP 404)\n');

    const badToken = await tis(['activate', appId], { TIS_URL: server.url, TIS_TOKEN: 'tisb_nobody' });
    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toBe('error: Invalid bearer token (HTTP 401)\n');
  });

  it('activates and suspends with the platform token read from DATA_DIR/platform-token', async () => {
    const { appId } = await register('Status changes');
    const flags = ['--url', server.url, '--token-file', platformTokenFile];
    const activated = await tis(['activate', appId, ...flags]);
    expect(activated).toMatchObject({ code: 0, stdout: `${appId} is active\n`, stderr: '' });
    expect(await statusOf(appId)).toBe('active');
    const suspended = await tis(['suspend', appId, ...flags]);
    expect(suspended).toMatchObject({ code: 0, stdout: `${appId} is suspended\n` });
    expect(await statusOf(appId)).toBe('suspended');
  });

  it('rotates the key: the new key is printed and the old one stops working', async () => {
    const { appId, apiKey } = await register('Rotation');
    const run = await tis(['rotate-key', appId, '--url', server.url, '--token', builderToken]);
    expect(run.code).toBe(0);
    const newKey = /^api_key: (ltiaas_\S+)\n$/.exec(run.stdout)?.[1];
    expect(newKey).toMatch(/^ltiaas_app_[a-z0-9]{20,}_[A-Za-z0-9_-]{43}$/);
    expect(newKey).not.toBe(apiKey);
    expect(run.stderr).toBe(`The old key stopped working; the new one (ltiaas_...${newKey!.slice(-4)}) is shown only this once.\n`);
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
    quiz = await startQuizTool(server.url, appId);
    const set = await builder.PATCH('/dashboard/v1/apps/{app_id}', {
      params: { path: { app_id: appId } },
      body: { callback_url: `${quiz.url}/launch`, provision_url: `${quiz.url}/provision`, locations_url: `${quiz.url}/locations` },
    });
    expect(set.error).toBeUndefined();
    const picker = await builder.POST('/dashboard/v1/apps/{app_id}/sandbox/picker', { params: { path: { app_id: appId } } });
    expect(picker.error).toBeUndefined();
    const placed = await builder.POST('/dashboard/v1/apps/{app_id}/sandbox/placements', { params: { path: { app_id: appId } }, body: { extid: 'final-quiz' } });
    if (placed.error) throw new Error(placed.error.detail);
    const env = { TIS_URL: server.url, TIS_TOKEN: builderToken };

    const run = await tis(['sandbox-launch-url', appId, placed.data.id, '--as', 'instructor'], env);
    expect(run.code).toBe(0);
    // The Sandbox LMS's launch URL (decision LTI-45), followed like a browser to the launch page.
    expect(run.stdout.trim()).toMatch(new RegExp(`^${server.url}/lms/launch/[A-Za-z0-9_-]+$`));
    const url = await launchPageOf(run.stdout.trim());
    expect(run.stderr).toMatch(/^Open it in a browser before \d{4}-\d{2}-\d{2}T.+; it works once\.\n$/);
    // The page a browser would get: the launch form for the tool's callback URL, or the Provisioning
    // page while the tool is still setting the placement up (it keeps the ticket and reloads).
    let page = await fetch(url);
    for (let i = 0; page.status === 202 && i < 20; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      page = await fetch(url);
    }
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`action="${quiz.url}/launch"`);
    expect(html).toContain('name="launch_data"');

    const unknown = await tis(['sandbox-launch-url', appId, 'plc_00000000000000000000'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(`error: placement plc_00000000000000000000 is not in the Sandbox of app ${appId} (HTTP 404)\n`);

    const suspended = await tis(['suspend', appId, '--url', server.url, '--token-file', platformTokenFile]);
    expect(suspended.code).toBe(0);
    const closed = await tis(['sandbox-launch-url', appId, placed.data.id], env);
    expect(closed.code).toBe(1);
    expect(closed.stderr).toBe(`error: tool ${appId} is suspended: its Sandbox is closed until the platform team activates it (HTTP 409)\n`);
  });

  it('says so and exits 1 when nothing answers at the URL', async () => {
    // A port that was just free: nothing listens there.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const run = await tis(['activate', 'app_x', '--url', `http://127.0.0.1:${port}`, '--token', platformToken]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`error: cannot reach http://127.0.0.1:${port}: ECONNREFUSED\n`);
  });
});
