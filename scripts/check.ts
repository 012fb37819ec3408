/**
 * `npm run check`: the gate before a commit.
 *   lint       `redocly lint` of every API in redocly.yaml and of every generated tool-side spec, with the
 *              project rules; any error or warning fails.
 *   generated  regenerates into a temporary folder and compares with generated/: names every stale, missing
 *              or extra file.
 *   typecheck  `tsc --noEmit -p tsconfig.json` over the whole project, generated code included.
 * The three run concurrently; each prints a one-line verdict, then its details when it failed.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadApis, repoRoot } from './lib/apis.ts';
import { runNode, redoclyBin, tscBin, withoutBanner } from './lib/proc.ts';
import { generateFiles, listFiles, writeFiles } from './generate.ts';

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

async function typecheckStep(root: string): Promise<StepResult> {
  const result = await runNode(tscBin, ['--noEmit', '-p', 'tsconfig.json', '--pretty', 'false'], root);
  const output = `${result.stdout}${result.stderr}`.trim();
  if (result.code === 0) return { ok: true, verdict: 'typecheck: ok (tsc --noEmit)' };
  const count = (output.match(/error TS\d+/g) ?? []).length;
  return { ok: false, verdict: `typecheck: FAILED (${count} errors)`, details: output };
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
