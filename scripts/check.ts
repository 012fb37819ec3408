/**
 * `npm run check`: the gate before a commit.
 *   lint       `redocly lint` of every API in redocly.yaml and of every generated tool-side spec, with the
 *              project rules; any error or warning fails.
 *   generated  regenerates into a temporary folder and compares with generated/: names every stale, missing
 *              or extra file.
 *   typecheck  `tsc --noEmit -p tsconfig.json` over the whole project, generated code included; incremental,
 *              with its state in .tmp/typecheck.tsbuildinfo (CI-33).
 *   breaking   each published contract's bundle (generated/<version>/openapi.json) against the same file at
 *              the previous commit (the merge base with main on a branch, the parent commit on main, or
 *              TIS_BREAKING_BASE): any breaking change fails (scripts/lib/breaking.ts, decision KIT-06).
 *   workflows  every file in .github/workflows/ through @action-validator/cli (decision KIT-08).
 *   imports    no import circle among the sources, and no import from a lower layer to a higher one
 *              (scripts/lib/layers.ts, decision KIT-60).
 *   decisions  every decision ID cited in code, specs and docs is defined in docs/decisions/ (KIT-61).
 * They run concurrently; each prints a one-line verdict, then its details when it failed.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadApis, repoRoot } from './lib/apis.ts';
import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { breakingChanges } from './lib/breaking.ts';
import { runNode, redoclyBin, tscBin, withoutBanner } from './lib/proc.ts';
import { generateFiles, listFiles, writeFiles } from './generate.ts';
import { importCircles, importGraph, unplaced, upwardImports } from './lib/import-graph.ts';
import { LAYERS } from './lib/layers.ts';
import { definedDecisions, unresolvedCitations } from './lib/decision-ids.ts';

export interface StepResult {
  ok: boolean;
  verdict: string;
  details?: string;
}

export interface GeneratedDrift {
  stale: string[];
  missing: string[];
  extra: string[];
  tempDir: string;
}

/** Regenerates into a fresh temporary folder and compares it, file by file, with `generatedDir`. */
export async function compareGenerated(root: string, generatedDir: string): Promise<GeneratedDrift> {
  const tempDir = await mkdtemp(path.join(os.tmpdir(), 'tis-generated-'));
  await writeFiles(tempDir, await generateFiles(root));
  const fresh = await listFiles(tempDir);
  const onDisk = (await listFiles(generatedDir)).filter((f) => f !== '.gitkeep');
  const stale: string[] = [];
  const missing: string[] = [];
  for (const rel of fresh) {
    const target = path.join(generatedDir, rel);
    if (!existsSync(target)) missing.push(rel);
    else if ((await readFile(target, 'utf8')) !== (await readFile(path.join(tempDir, rel), 'utf8'))) stale.push(rel);
  }
  const extra = onDisk.filter((rel) => !fresh.includes(rel));
  return { stale, missing, extra, tempDir };
}

async function lintStep(root: string): Promise<StepResult> {
  const apis = loadApis(root);
  const toolSpecs = apis
    .filter((a) => a.contract)
    .map((a) => path.join('generated', a.name, 'tool-openapi.json'))
    .filter((rel) => existsSync(path.join(root, rel)));
  const targets = [...apis.map((a) => a.key), ...toolSpecs];
  const result = await runNode(redoclyBin, ['lint', ...targets, '--format=stylish', '--max-problems=1000'], root);
  const output = withoutBanner(`${result.stdout}\n${result.stderr}`);
  const errors = (output.match(/^\s+\d+:\d+\s+error\s/gm) ?? []).length;
  const warnings = (output.match(/^\s+\d+:\d+\s+warn(ing)?\s/gm) ?? []).length;
  const ok = result.code === 0 && errors === 0 && warnings === 0;
  const what = `${apis.length} APIs and ${toolSpecs.length} tool-side specs`;
  return ok
    ? { ok, verdict: `lint: ok (${what}, 0 errors, 0 warnings)` }
    : {
        ok,
        verdict: `lint: FAILED (${what}: ${errors} errors, ${warnings} warnings${result.code !== 0 && errors === 0 ? `, exit code ${result.code}` : ''})`,
        details: output,
      };
}

async function generatedStep(root: string): Promise<StepResult> {
  let drift: GeneratedDrift;
  try {
    drift = await compareGenerated(root, path.join(root, 'generated'));
  } catch (error) {
    return { ok: false, verdict: 'generated: FAILED (cannot generate)', details: String(error instanceof Error ? error.message : error) };
  }
  const problems = [
    ...drift.stale.map((f) => `stale    generated/${f}`),
    ...drift.missing.map((f) => `missing  generated/${f}`),
    ...drift.extra.map((f) => `extra    generated/${f}`),
  ];
  if (problems.length === 0) {
    await rm(drift.tempDir, { recursive: true, force: true });
    return { ok: true, verdict: 'generated: ok (generated/ matches the specs)' };
  }
  return {
    ok: false,
    verdict: `generated: FAILED (${drift.stale.length} stale, ${drift.missing.length} missing, ${drift.extra.length} extra; run \`npm run generate\`)`,
    details: `${problems.join('\n')}\nfresh output for comparison: ${drift.tempDir}`,
  };
}

/** Where the typecheck keeps its incremental state, relative to the root (git-ignored; .ci/run caches it). */
export const TYPECHECK_STATE = '.tmp/typecheck.tsbuildinfo';

async function typecheckStep(root: string): Promise<StepResult> {
  // Incremental (CI-33): tsc keeps each file's hash and what it found in .tmp/, and checks again only what a
  // change can reach, so a second check, or CI with the state of its last run, takes a third of the time.
  // A stale or foreign state file costs nothing but the time: tsc compares the hashes and checks the rest.
  const result = await runNode(
    tscBin,
    ['--noEmit', '-p', 'tsconfig.json', '--pretty', 'false', '--incremental', '--tsBuildInfoFile', TYPECHECK_STATE],
    root,
  );
  const output = `${result.stdout}${result.stderr}`.trim();
  if (result.code === 0) return { ok: true, verdict: 'typecheck: ok (tsc --noEmit)' };
  const count = (output.match(/error TS\d+/g) ?? []).length;
  return { ok: false, verdict: `typecheck: FAILED (${count} errors)`, details: output };
}

const git = async (root: string, args: string[]): Promise<string | undefined> =>
  promisify(execFile)('git', args, { cwd: root, maxBuffer: 256 * 1024 * 1024 }).then(
    (r) => r.stdout,
    () => undefined,
  );

/** The commit whose contracts count as published: see the header. */
async function previousCommit(root: string): Promise<string | undefined> {
  const given = process.env.TIS_BREAKING_BASE;
  if (given) return (await git(root, ['rev-parse', '--verify', `${given}^{commit}`]))?.trim();
  const head = (await git(root, ['rev-parse', 'HEAD']))?.trim();
  if (!head) return undefined;
  for (const main of ['origin/main', 'main']) {
    const base = (await git(root, ['merge-base', 'HEAD', main]))?.trim();
    if (base && base !== head) return base;
  }
  return (await git(root, ['rev-parse', '--verify', 'HEAD^']))?.trim();
}

async function breakingStep(root: string): Promise<StepResult> {
  const base = await previousCommit(root);
  if (!base) return { ok: true, verdict: 'breaking: ok (no previous commit to compare with)' };
  const short = base.slice(0, 10);
  const contracts = loadApis(root).filter((a) => a.contract);
  const found: string[] = [];
  let compared = 0;
  for (const api of contracts) {
    const rel = `generated/${api.name}/openapi.json`;
    const previous = await git(root, ['show', `${base}:${rel}`]);
    // A contract the previous commit did not have is new: nothing was published to break.
    if (previous === undefined) continue;
    compared += 1;
    const current = JSON.parse(await readFile(path.join(root, rel), 'utf8')) as unknown;
    for (const line of breakingChanges(JSON.parse(previous) as unknown, current)) found.push(`${api.name}  ${line}`);
  }
  const what = `${compared} contracts against ${short}`;
  return found.length === 0
    ? { ok: true, verdict: `breaking: ok (${what}, no breaking change)` }
    : {
        ok: false,
        verdict: `breaking: FAILED (${what}: ${found.length} breaking changes; publish them as a new contract version instead)`,
        details: found.join('\n'),
      };
}

async function workflowsStep(root: string): Promise<StepResult> {
  const dir = path.join(root, '.github', 'workflows');
  const files = existsSync(dir) ? (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f)).sort() : [];
  if (files.length === 0) return { ok: false, verdict: 'workflows: FAILED (no workflow in .github/workflows/)' };
  const validator = createRequire(import.meta.url).resolve('@action-validator/cli/cli.mjs');
  const failed: string[] = [];
  for (const file of files) {
    const result = await runNode(validator, [path.join(dir, file)], root);
    if (result.code !== 0) failed.push(`${file}:\n${`${result.stdout}${result.stderr}`.trim()}`);
  }
  return failed.length === 0
    ? { ok: true, verdict: `workflows: ok (${files.length} files valid)` }
    : { ok: false, verdict: `workflows: FAILED (${failed.length} of ${files.length} files)`, details: failed.join('\n\n') };
}

async function trackedFiles(root: string): Promise<string[]> {
  const out = await git(root, ['ls-files', '-z', '--cached', '--others', '--exclude-standard']);
  if (out === undefined) throw new Error('git ls-files failed');
  return out.split('\0').filter((f) => f !== '' && existsSync(path.join(root, f)));
}

/** The service's, the kit's, the reference LMS's and the tools' own sources; tests and generated code aside. */
const isLayeredSource = (f: string): boolean =>
  f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.startsWith('tests/') && !f.startsWith('generated/') && !f.includes('/node_modules/');

export async function importsStep(root: string): Promise<StepResult> {
  const graph = importGraph(root, (await trackedFiles(root)).filter(isLayeredSource));
  const circles = importCircles(graph);
  const upward = upwardImports(graph, LAYERS);
  const homeless = unplaced(graph, LAYERS);
  const edges = [...graph.values()].reduce((n, targets) => n + targets.length, 0);
  if (circles.length === 0 && upward.length === 0 && homeless.length === 0) {
    return { ok: true, verdict: `imports: ok (${graph.size} files, ${edges} imports, no circle, none upward)` };
  }
  const details = [
    ...circles.map((c) => `circle    ${c.join(' → ')}`),
    ...upward.map((u) => `upward    ${u.from} (${u.fromLayer}) imports ${u.to} (${u.toLayer})`),
    ...homeless.map((f) => `unplaced  ${f}: give its folder a layer in scripts/lib/layers.ts`),
  ];
  return {
    ok: false,
    verdict: `imports: FAILED (${circles.length} circles, ${upward.length} upward imports, ${homeless.length} unplaced files)`,
    details: details.join('\n'),
  };
}

/** Text files that may cite a decision: everything tracked but generated output, lock files and binaries. */
const mayCite = (f: string): boolean =>
  /\.(ts|mts|mjs|js|json|ya?ml|md|html|css|sh)$|(^|\/)run$|Dockerfile$/.test(f) &&
  !f.startsWith('generated/') &&
  !f.endsWith('package-lock.json') &&
  !f.startsWith('bench/results/');

export async function decisionsStep(root: string): Promise<StepResult> {
  const defined = definedDecisions(path.join(root, 'docs', 'decisions'));
  const files = (await trackedFiles(root)).filter(mayCite);
  const unresolved = [];
  for (const file of files) unresolved.push(...unresolvedCitations(file, await readFile(path.join(root, file), 'utf8'), defined));
  if (unresolved.length === 0) return { ok: true, verdict: `decisions: ok (${defined.size} decisions, every citation in ${files.length} files resolves)` };
  return {
    ok: false,
    verdict: `decisions: FAILED (${unresolved.length} citations of decisions docs/decisions/ does not define)`,
    details: unresolved.map((c) => `${c.file}:${c.line}  ${c.id}`).join('\n'),
  };
}

export async function runChecks(root: string = repoRoot): Promise<boolean> {
  const started = performance.now();
  const timed = async (step: () => Promise<StepResult>): Promise<StepResult & { seconds: number }> => {
    const t0 = performance.now();
    const r = await step().catch((error: unknown): StepResult => ({ ok: false, verdict: 'FAILED', details: String(error) }));
    return { ...r, seconds: (performance.now() - t0) / 1000 };
  };
  const results = await Promise.all([
    timed(() => lintStep(root)),
    timed(() => generatedStep(root)),
    timed(() => typecheckStep(root)),
    timed(() => breakingStep(root)),
    timed(() => workflowsStep(root)),
    timed(() => importsStep(root)),
    timed(() => decisionsStep(root)),
  ]);
  for (const r of results) {
    console.log(`${r.ok ? '✔' : '✘'} ${r.verdict} [${r.seconds.toFixed(1)} s]`);
    if (!r.ok && r.details) console.log(`${r.details.replace(/^/gm, '    ')}\n`);
  }
  const ok = results.every((r) => r.ok);
  console.log(`check: ${ok ? 'passed' : 'FAILED'} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return ok;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runChecks().then(
    (ok) => {
      process.exitCode = ok ? 0 : 1;
    },
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
