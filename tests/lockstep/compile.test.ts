/**
 * Lockstep at compile time: the server and the client both take their types from the same generated files,
 * so a field renamed in a spec and regenerated stops BOTH from compiling until they follow it.
 *
 * The experiment runs on a copy of the repository in a temporary folder (the checkout is never touched):
 * rename `fields` to `form_fields` in the current contract's UploadForm schema (the signed upload form the
 * service hands out and the client's upload helper posts), run the repository's own generate script in the
 * copy and compile, which must fail in both, every error naming the field, so the errors came from the rename
 * and nothing else. That the unchanged files compile is `npm run check`'s typecheck (CI-29), and restoring
 * the spec proves no more, since `generate` is a pure function of the specs, which `npm run check` shows by
 * regenerating and comparing (CI-24): each would be a tsc run of CI's time.
 * `scripts/generate.ts` finds the repository from its own location, so run from the copy it writes the copy.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const COPIED = ['openapi', 'scripts', 'server', 'client', 'rules', 'lms', 'generated', 'tsconfig.json', 'redocly.yaml', 'package.json'];
const SCHEMA = path.join('openapi', '2026-09-21', 'schemas', 'UploadForm.yaml');
const OLD = 'fields';
const NEW = 'form_fields';

interface Run {
  code: number | null;
  output: string;
}

function run(cwd: string, args: string[], timeoutMs = 420_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`node ${args.join(' ')} took more than ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

interface Diagnostic {
  file: string;
  text: string;
}

/** tsc's `--pretty false` output: `file(line,col): error TSnnnn: message`, with indented continuation lines. */
function diagnostics(output: string): Diagnostic[] {
  const found: Diagnostic[] = [];
  for (const line of output.split('\n')) {
    const head = /^(\S[^(]*)\(\d+,\d+\): error TS\d+: (.*)$/.exec(line);
    if (head) found.push({ file: (head[1] as string).replace(/\\/g, '/'), text: head[2] as string });
    else if (/^\s/.test(line) && found.length > 0) (found[found.length - 1] as Diagnostic).text += `\n${line.trim()}`;
  }
  return found;
}

/** An error "names the field" when it speaks of the old name that no longer exists or the new one now required. */
const namesField = (d: Diagnostic): boolean => new RegExp(`'${OLD}'|\\b${NEW}\\b`).test(d.text);

describe('a spec change breaks the compilation of both the server and the client until they follow it', () => {
  let copy: string;
  let original: string;
  const generate = (): Promise<Run> => run(copy, ['--import', 'tsx', 'scripts/generate.ts']);
  // The compiler options are the project's; the files are the two sides of the wire (tsc follows their imports
  // into generated/ and rules/).
  const compile = (): Promise<Run> =>
    run(copy, [path.join(copy, 'node_modules', 'typescript', 'bin', 'tsc'), '--noEmit', '--pretty', 'false', '-p', 'tsconfig.lockstep.json']);

  beforeAll(() => {
    copy = mkdtempSync(path.join(os.tmpdir(), 'tis-lockstep-'));
    // Not client/dist: tests/client/package.test.ts may be rebuilding it in another worker meanwhile, and the
    // copy compiles the sources only.
    const skipped = path.join(repoRoot, 'client', 'dist');
    for (const entry of COPIED) {
      cpSync(path.join(repoRoot, entry), path.join(copy, entry), { recursive: true, filter: (source) => source !== skipped });
    }
    symlinkSync(path.join(repoRoot, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
    writeFileSync(
      path.join(copy, 'tsconfig.lockstep.json'),
      `${JSON.stringify({ extends: './tsconfig.json', include: ['server/**/*.ts', 'client/**/*.ts', 'generated/**/*.ts'] }, null, 2)}\n`,
    );
    original = readFileSync(path.join(copy, SCHEMA), 'utf8');
  });

  afterAll(() => {
    if (copy !== undefined) rmSync(copy, { recursive: true, force: true });
  });

  it(`fails in server/ and client/ once UploadForm.${OLD} is renamed, every error naming the field`, async () => {
    // That the unchanged copy compiles is `npm run check`'s typecheck of the same files (and more); every error
    // below must name the field, so none of them can come from anything but the rename (decision CI-29).
    // The rename below edits these two lines; if the schema is reshaped, pick another field both sides use.
    expect(original).toMatch(new RegExp(`^required: \\[url, ${OLD}\\]$`, 'm'));
    expect(original).toMatch(new RegExp(`^  ${OLD}:$`, 'm'));
    const renamed = original
      .replace(new RegExp(`^required: \\[url, ${OLD}\\]$`, 'm'), `required: [url, ${NEW}]`)
      .replace(new RegExp(`^  ${OLD}:$`, 'm'), `  ${NEW}:`);
    writeFileSync(path.join(copy, SCHEMA), renamed);

    const regenerated = await generate();
    expect(regenerated.code, regenerated.output).toBe(0);
    expect(regenerated.output).toMatch(/written\s+generated\/2026-09-21\/types\.ts/);
    expect(readFileSync(path.join(copy, 'generated', '2026-09-21', 'types.ts'), 'utf8')).toContain(`${NEW}: {`);

    const broken = await compile();
    expect(broken.code, 'tsc must fail after the rename').not.toBe(0);
    const errors = diagnostics(broken.output);
    const serverErrors = errors.filter((d) => d.file.startsWith('server/') && namesField(d));
    const clientErrors = errors.filter((d) => d.file.startsWith('client/') && namesField(d));
    expect(serverErrors.length, `no server/ error names the field:\n${broken.output}`).toBeGreaterThan(0);
    expect(clientErrors.length, `no client/ error names the field:\n${broken.output}`).toBeGreaterThan(0);
    // Every error is a consequence of the rename.
    expect(errors.filter((d) => !namesField(d)), broken.output).toEqual([]);
  }, 1_200_000);
});
