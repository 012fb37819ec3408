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
 *      place that must change, the store's declaration of the values its CHECK constraints admit;
 *   4. limits and messages the spec states with `x-limits` / `x-messages` (decision KIT-20) changed and
 *      regenerated: a member row's size limit and its message, a row's file quota and its message, the default
 *      HTTP body limit and its message; the service started from the copy follows all three, with no handler
 *      edit (no tsc run: the service runs through tsx, as `npm run start:dev` does).
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const COPIED = ['openapi', 'scripts', 'server', 'client', 'rules', 'lms', 'generated', 'tsconfig.json', 'redocly.yaml', 'package.json'];
const SCORE_BODY = path.join('openapi', '2026-09-21', 'schemas', 'ScoreSubmission.yaml');
const ACTIVITY = path.join('openapi', 'common', 'schemas', 'ActivityProgress.yaml');
const STORE_PLACE = 'server/store/repos/attempts.ts';
const ROW = path.join('openapi', 'common', 'schemas', 'Row.yaml');
const FILE_LIST = path.join('openapi', '2026-09-21', 'schemas', 'FileList.yaml');
const BODY_TOO_LARGE = path.join('openapi', 'common', 'responses', 'BodyTooLarge.yaml');

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

// The limits probe: a member_location row of 2011 bytes, three files asked for in one row, and one JSON body
// of 1.5 MB; prints the three answers.
const LIMITS_PROBE = `
import { createTool, launch, placeLocation, startServer } from './tests/server/harness.js';
const server = await startServer();
try {
  const tool = await createTool(server);
  const placed = await placeLocation(server, { app: tool.app.id, type: 'assessment' });
  const student = await launch(server, { placed });
  const call = async (url: string, method: string, body: string) => {
    const response = await fetch(url, { method, headers: { Authorization: student.auth, 'Content-Type': 'application/json' }, body });
    const text = await response.text();
    return { status: response.status, detail: text === '' ? null : ((JSON.parse(text) as { detail?: string }).detail ?? null) };
  };
  const row = await call(student.claims.storage.member_location as string, 'PUT', JSON.stringify({ text: 'x'.repeat(2000) }));
  const files = [];
  for (const key of ['a.txt', 'b.txt', 'c.txt']) files.push(await call(\`\${student.claims.files.member_location}/\${key}\`, 'PUT', JSON.stringify({ size: 1 })));
  const body = await call(student.claims.storage.member_location as string, 'PUT', JSON.stringify({ text: 'x'.repeat(1_500_000) }));
  console.log(JSON.stringify({ row, files, body }));
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
    // Not client/dist: tests/client/package.test.ts may be rebuilding it in another worker meanwhile, and the
    // copy compiles the sources only.
    const skipped = path.join(repoRoot, 'client', 'dist');
    for (const entry of COPIED) {
      cpSync(path.join(repoRoot, entry), path.join(copy, entry), { recursive: true, filter: (source) => source !== skipped });
    }
    mkdirSync(path.join(copy, 'tests', 'server'), { recursive: true });
    cpSync(path.join(repoRoot, 'tests', 'server', 'harness.ts'), path.join(copy, 'tests', 'server', 'harness.ts'));
    symlinkSync(path.join(repoRoot, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
    writeFileSync(path.join(copy, 'probe.ts'), PROBE);
    writeFileSync(path.join(copy, 'probe-limits.ts'), LIMITS_PROBE);
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

  it('limits and messages stated with x-limits and x-messages follow the spec once generated, with no handler edit', async () => {
    type Answer = { status: number; detail: string | null };
    const probe = async (): Promise<{ row: Answer; files: Answer[]; body: Answer }> => {
      const ran = await run(copy, ['--import', 'tsx', 'probe-limits.ts']);
      expect(ran.code, ran.output).toBe(0);
      return JSON.parse(ran.stdout.trim().split('\n').pop() as string) as { row: Answer; files: Answer[]; body: Answer };
    };
    // Unchanged, the same calls are a 2011-byte row written, three files signed and a 422 `row too large`
    // for the 1.5 MB body: tests/server/rows and tests/server/files hold the spec's own values; one service
    // start here keeps the test's time down.
    edit(ROW, /^    member_location: 524288$/m, '    member_location: 1024');
    edit(ROW, /^  too_large: 'row too large: /m, "  too_large: 'row over its limit: ");
    edit(FILE_LIST, /^  files_per_row: 100$/m, '  files_per_row: 2');
    edit(FILE_LIST, /^  too_many_files: 'file quota exceeded: a row keeps at most \{files_per_row\} files'$/m, "  too_many_files: 'a row keeps {files_per_row} files at most'");
    edit(BODY_TOO_LARGE, /^  default_bytes: 2097152$/m, '  default_bytes: 1200000');
    edit(BODY_TOO_LARGE, /^  too_large: 'request body exceeds the HTTP limit of \{limit\} bytes'$/m, "  too_large: 'the body is over {limit} bytes'");
    const regenerated = await generate();
    expect(regenerated.code, regenerated.output).toBe(0);

    const after = await probe();
    expect(after.row).toEqual({ status: 422, detail: 'row over its limit: 2011 bytes of compact JSON, at most 1024 (1 KB) for a member_location row' });
    expect(after.files.map((f) => f.status)).toEqual([200, 200, 422]);
    expect(after.files[2]?.detail).toBe('a row keeps 2 files at most');
    expect(after.body).toEqual({ status: 413, detail: 'the body is over 1200000 bytes' });
  }, 300_000);
});
