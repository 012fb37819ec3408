/**
 * Lockstep in behaviour (decision KIT-04): the handlers read what the spec states from generated/, so a spec
 * edit followed by `npm run generate` changes what the service does, with no handler edit; and where a value
 * cannot flow by itself (a store column admits a fixed set), the compiler names the one place to change.
 *
 * On a copy of the repository in a temporary folder (the checkout is never touched):
 *   1. the unchanged copy refuses a score body with a field `note` (422 `unknown field: note`);
 *   2. `note` added to the ScoreSubmission schema and regenerated: the copy compiles and the service, started
 *      from the copy, accepts that very body (200, the attempt published) without any handler edit;
 *   3. `Started` added to the ActivityProgress enum and regenerated: tsc fails, and every error is in the one
 *      place that must change, the store's declaration of the values its CHECK constraints admit.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const COPIED = ['openapi', 'scripts', 'server', 'client', 'rules', 'generated', 'tsconfig.json', 'redocly.yaml', 'package.json'];
const SCORE_BODY = path.join('openapi', '2026-09-21', 'schemas', 'ScoreSubmission.yaml');
const ACTIVITY = path.join('openapi', 'common', 'schemas', 'ActivityProgress.yaml');
const STORE_PLACE = 'server/store/repos/attempts.ts';

interface Run {
  code: number | null;
  output: string;
  stdout: string;
}

function run(cwd: string, args: string[], timeoutMs = 420_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString();
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`node ${args.join(' ')} took more than ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output, stdout });
    });
  });
}

// Started from the copy: the copy's service, the copy's generated/, a real launch and a real score POST.
const PROBE = `
import { createTool, launch, placeLocation, startServer } from './tests/server/harness.js';
const server = await startServer();
try {
  const tool = await createTool(server);
  const placed = await placeLocation(server, { app: tool.app.id, type: 'assessment' });
  const student = await launch(server, { placed });
  const response = await fetch(student.claims.grade.submit as string, {
    method: 'POST',
    headers: { Authorization: student.auth, 'Content-Type': 'application/json' },
    body: process.argv[2] as string,
  });
  console.log(JSON.stringify({ status: response.status, body: await response.json() }));
} finally {
  await server.stop();
}
`;

describe('a spec edit changes what the service accepts, or the compiler names the one place to change', () => {
  let copy: string;
  const generate = (): Promise<Run> => run(copy, ['--import', 'tsx', 'scripts/generate.ts']);
  const compile = (): Promise<Run> =>
    run(copy, [path.join(copy, 'node_modules', 'typescript', 'bin', 'tsc'), '--noEmit', '--pretty', 'false', '-p', 'tsconfig.lockstep.json']);
  const submit = async (body: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const probe = await run(copy, ['--import', 'tsx', 'probe.ts', JSON.stringify(body)]);
    expect(probe.code, probe.output).toBe(0);
    return JSON.parse(probe.stdout.trim().split('\n').pop() as string) as { status: number; body: Record<string, unknown> };
  };
  const edit = (rel: string, from: RegExp, to: string): void => {
    const file = path.join(copy, rel);
    const text = readFileSync(file, 'utf8');
    expect(text, `${rel} no longer has the line this test edits`).toMatch(from);
    writeFileSync(file, text.replace(from, to));
  };

  beforeAll(() => {
    copy = mkdtempSync(path.join(os.tmpdir(), 'tis-spec-change-'));
    for (const entry of COPIED) cpSync(path.join(repoRoot, entry), path.join(copy, entry), { recursive: true });
    rmSync(path.join(copy, 'client', 'dist'), { recursive: true, force: true });
    mkdirSync(path.join(copy, 'tests', 'server'), { recursive: true });
    cpSync(path.join(repoRoot, 'tests', 'server', 'harness.ts'), path.join(copy, 'tests', 'server', 'harness.ts'));
    symlinkSync(path.join(repoRoot, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
    writeFileSync(path.join(copy, 'probe.ts'), PROBE);
    writeFileSync(
      path.join(copy, 'tsconfig.lockstep.json'),
      `${JSON.stringify({ extends: './tsconfig.json', include: ['server/**/*.ts', 'client/**/*.ts', 'generated/**/*.ts'] }, null, 2)}\n`,
    );
  });

  afterAll(() => {
    if (copy !== undefined) rmSync(copy, { recursive: true, force: true });
  });

  it('a field added to the score body is accepted once generated, with no handler edit', async () => {
    const body = { score: 0.5, note: 'handed in late' };
    const before = await submit(body);
    expect(before).toMatchObject({ status: 422, body: { code: 'unknown_field', detail: 'unknown field: note' } });

    edit(SCORE_BODY, /^additionalProperties: false$/m, '  note:\n    type: string\n    description: A note kept with the attempt.\nadditionalProperties: false');
    const regenerated = await generate();
    expect(regenerated.code, regenerated.output).toBe(0);
    expect(readFileSync(path.join(copy, 'generated', '2026-09-21', 'schemas.ts'), 'utf8')).toMatch(/"note":\{"type":"string"\}/);
    const compiled = await compile();
    expect(compiled.code, compiled.output).toBe(0);

    const after = await submit(body);
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    expect(after.body).toMatchObject({ status: 'success', score: 0.5 });
  }, 900_000);

  it('a value added to activity_progress makes tsc name the store declaration, and nothing else', async () => {
    edit(ACTIVITY, /^enum: \[Completed, Submitted\]$/m, 'enum: [Completed, Submitted, Started]');
    const regenerated = await generate();
    expect(regenerated.code, regenerated.output).toBe(0);
    expect(readFileSync(path.join(copy, 'generated', '2026-09-21', 'schemas.ts'), 'utf8')).toContain('"enum":["Completed","Submitted","Started"]');

    const compiled = await compile();
    expect(compiled.code, 'tsc must fail: the store columns do not admit the new value').not.toBe(0);
    const files = [...compiled.output.matchAll(/^(\S[^(]*)\(\d+,\d+\): error TS\d+/gm)].map((m) => (m[1] as string).replace(/\\/g, '/'));
    expect(files.length, compiled.output).toBeGreaterThan(0);
    expect([...new Set(files)], compiled.output).toEqual([STORE_PLACE]);
  }, 900_000);
});
