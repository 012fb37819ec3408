// The package as a tool team gets it: built, packed with `npm pack`, installed into an empty
// project, and used by a small TypeScript program compiled with this repository's tsc against a
// real local server.

import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleClaims, recordingServer, repoRoot, sendJson, sign, signingKey, type RecordingServer, type SigningKey } from './support.js';

const run = promisify(execFile);
const appId = 'app_3f9c2a7d1e5b8h4j6k0m';
const row = { answers: { q1: 'b' } };
const attempt = { id: 'att_1', status: 'success' };

let workdir: string;
let project: string;
let service: RecordingServer;
let key: SigningKey;

async function npm(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run('npm', args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: 'false' } });
  return stdout;
}

const program = `
import express from 'express';
import { createContractClient, CURRENT_CONTRACT_VERSION, type Problem } from 'tool-integration-service';
import {
  createTokenVerifier,
  files,
  locationsResponse,
  rows,
  submitScore,
  toolEndpoints,
  type LaunchClaims,
} from 'tool-integration-service/tool';
import type { Contract20260921, Schema } from 'tool-integration-service/types';
import type { paths } from 'tool-integration-service/types/2026-09-21';

const [origin, appId, token] = process.argv.slice(2) as [string, string, string];

const verifier = createTokenVerifier({ issuer: origin, appId });
const verified = await verifier.verifyLaunch(token);
if (verified.error) throw verified.error;
const claims: LaunchClaims = verified.claims;

const memberLocation = rows<{ answers: Record<string, string> }>(claims.storage.member_location, claims.api.token);
const read = await memberLocation.get();
const answers: Record<string, string> | undefined = read.data?.answers;

const tis = createContractClient({ version: CURRENT_CONTRACT_VERSION, baseUrl: origin, credential: claims.api.token });
const context = await tis.GET('/v1/contexts/{context_id}/apps/{app_id}/storage', {
  params: { path: { context_id: claims.context, app_id: claims.app } },
});
const problem: Problem | undefined = context.error;

const score = await submitScore(claims.grade.submit, claims.api.token, { score: 0.5 });
const skipped = await submitScore(null, claims.api.token, { score: 0.5 });
const attempt: Schema<'2026-09-21', 'GradeAttempt'> | undefined = score.skipped ? undefined : score.data;

const filesUrl: string = files(claims.files.member_location, claims.api.token).url;
const picker = locationsResponse().location('week-3-quiz', { type: 'assessment', label: 'Week 3 quiz' }).toJSONText();
const router = toolEndpoints({ verifier, onLaunch: () => undefined });
const app = express();
app.use(router);

type RowPath = keyof paths & '/v1/contexts/{context_id}/apps/{app_id}/storage';
const rowPath: RowPath = '/v1/contexts/{context_id}/apps/{app_id}/storage';
const schemaTitle: Contract20260921.components['schemas']['LocationType'] = 'assessment';

console.log(JSON.stringify({
  user: claims.user.member,
  answers,
  contextStatus: context.response.status,
  problemCode: problem?.code,
  attemptId: attempt?.id,
  skipped: skipped.skipped,
  filesUrl,
  picker: JSON.parse(picker),
  rowPath,
  schemaTitle,
  server: import.meta.resolve('tool-integration-service/server'),
}));
`;

beforeAll(async () => {
  key = await signingKey();
  service = await recordingServer((req, res) => {
    if (req.path === '/.well-known/jwks.json') sendJson(res, 200, { keys: [key.publicJwk] });
    else if (req.method === 'GET' && req.path.includes('/members/')) sendJson(res, 200, row);
    else if (req.method === 'GET' && req.path.endsWith('/storage')) {
      sendJson(res, 404, { type: 'about:blank', title: 'Not Found', status: 404, detail: 'no such row', code: 'row_not_found' }, 'application/problem+json');
    } else if (req.method === 'POST' && req.path.endsWith('/scores')) sendJson(res, 200, attempt);
    else void res.writeHead(404).end();
  });
  workdir = await mkdtemp(join(tmpdir(), 'tis-package-'));
  project = join(workdir, 'project');
});

afterAll(async () => {
  await service?.close();
  if (workdir) await rm(workdir, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('builds, packs, installs offline into an empty project, compiles and runs a program', { timeout: 120_000 }, async () => {
    await npm(['run', 'build'], repoRoot);
    const packed = JSON.parse(await npm(['pack', '--json', '--pack-destination', workdir], repoRoot)) as { filename: string; files: { path: string }[] }[];
    const paths = packed[0]!.files.map((file) => file.path);
    expect(paths).toEqual(expect.arrayContaining(['dist/client/index.js', 'dist/client/tool/index.d.ts', 'dist/rules/locations.js', 'dist/generated/2026-09-21/types.d.ts', 'dist/generated/2026-09-21/openapi.json', 'dist/bin/tis.js', 'dist/server/web-dashboard/static/index.html']));
    expect(paths.filter((path) => !path.startsWith('dist/') && path !== 'package.json' && path !== 'README.md')).toEqual([]);

    await run('mkdir', ['-p', project]);
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    const tarball = join(workdir, packed[0]!.filename);
    const install = ['install', tarball, '@types/node@20.19.43', '@types/express@5.0.6', '--no-audit', '--no-fund', '--ignore-scripts'];
    try {
      await npm([...install, '--offline'], project);
    } catch {
      await npm([...install, '--prefer-offline'], project);
    }

    await writeFile(join(project, 'main.ts'), program);
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2022', 'DOM'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          exactOptionalPropertyTypes: true,
          skipLibCheck: false,
          types: ['node'],
          outDir: 'out',
        },
        files: ['main.ts'],
      }),
    );
    const tsc = join(repoRoot, 'node_modules', '.bin', 'tsc');
    await run(tsc, ['-p', 'tsconfig.json'], { cwd: project }).catch((error: { stdout?: string }) => {
      throw new Error(`the program does not compile against the package:\n${error.stdout ?? String(error)}`);
    });

    const claims = exampleClaims('LaunchClaims', { issuer: service.url, appId });
    const aimed = JSON.parse(JSON.stringify(claims).replaceAll('https://tis.example.edu', service.url)) as typeof claims;
    const token = await sign(aimed, key);
    const { stdout } = await run(process.execPath, [join(project, 'out', 'main.js'), service.url, appId, token], { cwd: project });
    const output = JSON.parse(stdout) as Record<string, unknown>;
    expect(output).toMatchObject({
      user: (aimed.user as { member: string }).member,
      answers: row.answers,
      contextStatus: 404,
      problemCode: 'row_not_found',
      attemptId: attempt.id,
      skipped: true,
      filesUrl: (aimed.files as { member_location: string }).member_location,
      picker: { locations: { 'week-3-quiz': { type: 'assessment', label: 'Week 3 quiz' } } },
      rowPath: '/v1/contexts/{context_id}/apps/{app_id}/storage',
      schemaTitle: 'assessment',
    });
    expect(String(output.server)).toMatch(/node_modules\/tool-integration-service\/dist\/server\/app\.js$/);
    const installed = JSON.parse(await readFile(join(project, 'node_modules', 'tool-integration-service', 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
    expect(Object.keys(installed.exports)).toEqual(expect.arrayContaining(['.', './tool', './server', './types']));
    // The operators' command, compiled into dist/bin, runs where the package is installed.
    const help = await run(join(project, 'node_modules', '.bin', 'tis'), ['--help'], { cwd: project });
    expect(help.stdout).toContain('Usage: tis <command>');
  });
});
