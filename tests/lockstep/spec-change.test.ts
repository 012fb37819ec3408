/**
 * Lockstep (decision KIT-04): the handlers read what the spec states from generated/, so a spec edit followed
 * by `npm run generate` changes what the service does, with no handler edit; and where a value cannot flow by
 * itself, the compiler names the place to change, in the server and in the client alike.
 *
 * On ONE copy of the repository in a temporary folder (the checkout is never touched), two rounds, each one
 * `generate` of the copy's own script, several spec edits at once, every edit asserted on its own (CI-50):
 *
 *   behaviour: one service started from the copy (through tsx, as `npm run start:dev` does, so no tsc)
 *     1. `note` added to the ScoreSubmission schema: the service accepts a score with it (200, the attempt
 *        published) while an unknown field is still refused (422 `unknown field: points`);
 *     2. limits and messages the spec states with `x-limits` / `x-messages` (decision KIT-20) changed: a member
 *        row's size limit and its message, a row's file quota and its message, the default HTTP body limit
 *        and its message; the service follows all three;
 *   compile: one tsc run over server/, client/ and generated/ of the copy, which must fail
 *     3. `Started` added to the ActivityProgress enum: tsc names the one place that must change, the store's
 *        declaration of the values its CHECK constraints admit;
 *     4. `fields` renamed `form_fields` in the UploadForm schema (the signed upload form the service hands out
 *        and the client's upload helper posts): both server/ and client/ stop compiling, the errors naming
 *        the field;
 *     and every error is one of those two, so the round-1 edits broke nothing at compile time either.
 *
 * The rename comes after the service's round: its response validation would refuse the renamed upload form.
 * That the unchanged copy compiles is `npm run check`'s typecheck (CI-29); that restoring a spec restores
 * generated/ is its generated step (CI-24); the spec's own limits and the refusal of unknown fields are
 * tests/server's (rows, files, core/http, scores).
 * `scripts/generate.ts` finds the repository from its own location, so run from the copy it writes the copy.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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
const UPLOAD_FORM = path.join('openapi', '2026-09-21', 'schemas', 'UploadForm.yaml');
const OLD = 'fields';
const NEW = 'form_fields';
// Long enough for a generate or a tsc run on a machine loaded by a second vitest worker and more.
const ROUND_TIMEOUT = 900_000;

interface Run {
  code: number | null;
  output: string;
  stdout: string;
}

function run(cwd: string, args: string[], timeoutMs = 600_000): Promise<Run> {
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

interface Diagnostic {
  file: string;
  line: number;
  text: string;
}

/** tsc's `--pretty false` output: `file(line,col): error TSnnnn: message`, with indented continuation lines. */
function diagnostics(output: string): Diagnostic[] {
  const found: Diagnostic[] = [];
  for (const line of output.split('\n')) {
    const head = /^(\S[^(]*)\((\d+),\d+\): error TS\d+: (.*)$/.exec(line);
    if (head) found.push({ file: (head[1] as string).replace(/\\/g, '/'), line: Number(head[2]), text: head[3] as string });
    else if (/^\s/.test(line) && found.length > 0) (found[found.length - 1] as Diagnostic).text += `\n${line.trim()}`;
  }
  return found;
}

/** An error "names the field" when it speaks of the old name that no longer exists or the new one now required. */
const namesField = (d: Diagnostic): boolean => new RegExp(`'${OLD}'|\\b${NEW}\\b`).test(d.text);

// Started from the copy: the copy's service and generated/, a real launch, then every call of round 1 on one
// service: two score POSTs (with `note`, with an unknown field), a member_location row of 2011 bytes, three
// files asked for in one row, and one JSON body of 1.5 MB. Prints the answers as one JSON line.
const PROBE = `
import { createTool, launch, placeLocation, startServer } from './tests/server/harness.js';
const server = await startServer();
try {
  const tool = await createTool(server);
  const placed = await placeLocation(server, { app: tool.app.id, type: 'assessment' });
  const student = await launch(server, { placed });
  const call = async (url: string, method: string, body: string) => {
    const response = await fetch(url, { method, headers: { Authorization: student.auth, 'Content-Type': 'application/json' }, body });
    const text = await response.text();
    return { status: response.status, body: text === '' ? null : JSON.parse(text) };
  };
  const submit = student.claims.grade.submit as string;
  const note = await call(submit, 'POST', JSON.stringify({ score: 0.5, note: 'handed in late' }));
  const unknown = await call(submit, 'POST', JSON.stringify({ score: 0.5, points: 20 }));
  const row = await call(student.claims.storage.member_location as string, 'PUT', JSON.stringify({ text: 'x'.repeat(2000) }));
  const files = [];
  for (const key of ['a.txt', 'b.txt', 'c.txt']) files.push(await call(student.claims.files.member_location + '/' + key, 'PUT', JSON.stringify({ size: 1 })));
  const body = await call(student.claims.storage.member_location as string, 'PUT', JSON.stringify({ text: 'x'.repeat(1_500_000) }));
  console.log(JSON.stringify({ note, unknown, row, files, body }));
} finally {
  await server.stop();
}
`;

type Answer = { status: number; body: Record<string, unknown> | null };
interface ProbeAnswers {
  note: Answer;
  unknown: Answer;
  row: Answer;
  files: Answer[];
  body: Answer;
}

describe('a spec edit changes what the service does, or the compiler names the place to change', () => {
  let copy: string;
  const generate = async (): Promise<Run> => {
    const regenerated = await run(copy, ['--import', 'tsx', 'scripts/generate.ts']);
    expect(regenerated.code, regenerated.output).toBe(0);
    return regenerated;
  };
  const generatedSchemas = (): string => readFileSync(path.join(copy, 'generated', '2026-09-21', 'schemas.ts'), 'utf8');
  const edit = (rel: string, from: RegExp, to: string): void => {
    const file = path.join(copy, rel);
    const text = readFileSync(file, 'utf8');
    expect(text, `${rel} no longer has the line this test edits`).toMatch(from);
    writeFileSync(file, text.replace(from, to));
  };

  beforeAll(() => {
    copy = mkdtempSync(path.join(os.tmpdir(), 'tis-spec-change-'));
    // Not client/dist: tests/client/package.test.ts may be rebuilding it in another worker meanwhile, and the
    // copy compiles the sources only. node_modules is a link, not a copy.
    const skipped = path.join(repoRoot, 'client', 'dist');
    for (const entry of COPIED) {
      cpSync(path.join(repoRoot, entry), path.join(copy, entry), { recursive: true, filter: (source) => source !== skipped });
    }
    // The harness with every module beside it that it imports (the schema pool, the SQLite template), so a
    // new import of the harness needs no edit here.
    mkdirSync(path.join(copy, 'tests', 'server'), { recursive: true });
    for (const file of readdirSync(path.join(repoRoot, 'tests', 'server')).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))) {
      cpSync(path.join(repoRoot, 'tests', 'server', file), path.join(copy, 'tests', 'server', file));
    }
    symlinkSync(path.join(repoRoot, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
    writeFileSync(path.join(copy, 'probe.ts'), PROBE);
    // The compiler options are the project's; the files are the two sides of the wire (tsc follows their
    // imports into generated/, rules/ and lms/).
    writeFileSync(
      path.join(copy, 'tsconfig.lockstep.json'),
      `${JSON.stringify({ extends: './tsconfig.json', include: ['server/**/*.ts', 'client/**/*.ts', 'generated/**/*.ts'] }, null, 2)}\n`,
    );
  });

  afterAll(() => {
    if (copy !== undefined) rmSync(copy, { recursive: true, force: true });
  });

  describe('round 1: edits the service follows once generated, with no handler edit', () => {
    let answers: ProbeAnswers;

    beforeAll(async () => {
      // The unchanged score body refuses every field it does not list, `note` among them.
      expect(generatedSchemas()).not.toMatch(/"note":\{"type":"string"\}/);
      edit(SCORE_BODY, /^additionalProperties: false$/m, '  note:\n    type: string\n    description: A note kept with the attempt.\nadditionalProperties: false');
      // Unchanged, the probe's calls are a 2011-byte row written, three files signed and a 422 `row too
      // large` for the 1.5 MB body: tests/server/rows, files and core/http hold the spec's own values.
      edit(ROW, /^    member_location: 524288$/m, '    member_location: 1024');
      edit(ROW, /^  too_large: 'row too large: /m, "  too_large: 'row over its limit: ");
      edit(FILE_LIST, /^  files_per_row: 100$/m, '  files_per_row: 2');
      edit(FILE_LIST, /^  too_many_files: 'file quota exceeded: a row keeps at most \{files_per_row\} files'$/m, "  too_many_files: 'a row keeps {files_per_row} files at most'");
      edit(BODY_TOO_LARGE, /^  default_bytes: 2097152$/m, '  default_bytes: 1200000');
      edit(BODY_TOO_LARGE, /^  too_large: 'request body exceeds the HTTP limit of \{limit\} bytes'$/m, "  too_large: 'the body is over {limit} bytes'");
      await generate();
      expect(generatedSchemas()).toMatch(/"note":\{"type":"string"\}/);

      const probe = await run(copy, ['--import', 'tsx', 'probe.ts']);
      expect(probe.code, probe.output).toBe(0);
      answers = JSON.parse(probe.stdout.trim().split('\n').pop() as string) as ProbeAnswers;
    }, ROUND_TIMEOUT);

    it('a field added to the score body is accepted, and a field the spec does not list is still refused', () => {
      expect(answers.note.status, JSON.stringify(answers.note.body)).toBe(200);
      expect(answers.note.body).toMatchObject({ status: 'success', score: 0.5 });
      expect(answers.unknown).toMatchObject({ status: 422, body: { code: 'unknown_field', detail: 'unknown field: points' } });
    });

    it('limits and messages stated with x-limits and x-messages follow the spec', () => {
      expect(answers.row).toMatchObject({ status: 422, body: { detail: 'row over its limit: 2011 bytes of compact JSON, at most 1024 (1 KB) for a member_location row' } });
      expect(answers.files.map((f) => f.status)).toEqual([200, 200, 422]);
      expect(answers.files[2]?.body?.['detail']).toBe('a row keeps 2 files at most');
      expect(answers.body).toMatchObject({ status: 413, body: { detail: 'the body is over 1200000 bytes' } });
    });
  });

  describe('round 2: edits the compiler names the place of, in one tsc run', () => {
    let errors: Diagnostic[];
    let output: string;

    beforeAll(async () => {
      edit(ACTIVITY, /^enum: \[Completed, Submitted\]$/m, 'enum: [Completed, Submitted, Started]');
      // The rename edits these two lines; if the schema is reshaped, pick another field both sides use.
      edit(UPLOAD_FORM, new RegExp(`^required: \\[url, ${OLD}\\]$`, 'm'), `required: [url, ${NEW}]`);
      edit(UPLOAD_FORM, new RegExp(`^  ${OLD}:$`, 'm'), `  ${NEW}:`);
      const regenerated = await generate();
      expect(regenerated.output).toMatch(/written\s+generated\/2026-09-21\/types\.ts/);
      expect(generatedSchemas()).toContain('"enum":["Completed","Submitted","Started"]');
      expect(readFileSync(path.join(copy, 'generated', '2026-09-21', 'types.ts'), 'utf8')).toContain(`${NEW}: {`);

      const compiled = await run(copy, [path.join(copy, 'node_modules', 'typescript', 'bin', 'tsc'), '--noEmit', '--pretty', 'false', '-p', 'tsconfig.lockstep.json']);
      expect(compiled.code, 'tsc must fail after these edits').not.toBe(0);
      output = compiled.output;
      errors = diagnostics(output);
    }, ROUND_TIMEOUT);

    it('a value added to activity_progress makes tsc name the store declaration, and nothing else', () => {
      const enumErrors = errors.filter((d) => !namesField(d));
      expect(enumErrors.length, output).toBeGreaterThan(0);
      expect([...new Set(enumErrors.map((d) => d.file))], output).toEqual([STORE_PLACE]);
      // On the line that holds the stored activity_progress values to the spec's, not the score body's.
      const source = readFileSync(path.join(copy, STORE_PLACE), 'utf8').split('\n');
      for (const d of enumErrors) expect(source[d.line - 1], output).toMatch(/\bActivityProgress\b/);
    });

    it(`UploadForm.${OLD} renamed breaks server/ and client/, every error naming the field`, () => {
      const renameErrors = errors.filter(namesField);
      expect(renameErrors.filter((d) => d.file.startsWith('server/')).length, `no server/ error names the field:\n${output}`).toBeGreaterThan(0);
      expect(renameErrors.filter((d) => d.file.startsWith('client/')).length, `no client/ error names the field:\n${output}`).toBeGreaterThan(0);
      // None of them lands in the store declaration, whose errors are the enum's alone.
      expect(renameErrors.filter((d) => d.file === STORE_PLACE), output).toEqual([]);
    });
  });
});
