/**
 * Issue 30's goals, read from one `npm run bench -- --pg` run (decision PERF-161): each line names the goal,
 * the figure this run measured and whether it holds, so a closing note quotes one run, not a collage. Only
 * what the run measured is judged; a goal whose cell is missing (`--only`, `--cold-starts 0`, no `--pin`)
 * says so instead of passing.
 */
import type { BenchRun, Cell } from './report.js';
import type { ColdStart } from './cold-start.js';
import { SCORE_OPERATION as SCORE } from './scores.js';
import { STORAGE_OPERATIONS } from './storage.js';

export interface GoalNames {
  sqlite: string;
  bare: string;
  pgOne: string;
  pgTwo: string;
}

const { get: GET, put: PUT, patch: PATCH } = STORAGE_OPERATIONS;

function cell(run: BenchRun, op: string, conns: number, target: string): Cell | undefined {
  return run.cells[op]?.[String(conns)]?.[target];
}

function ratio(run: BenchRun, op: string, conns: number, of: string, to: string): number | null {
  const a = cell(run, op, conns, of);
  const b = cell(run, op, conns, to);
  return a && b && b.rps > 0 ? a.rps / b.rps : null;
}

const verdict = (holds: boolean | null): string => (holds === null ? 'not measured' : holds ? 'met' : 'NOT met');

/**
 * The goals at the run's first connection count (10 in the issue's figures). `pinned` says whether the two
 * instances ran on separate cores (`--pin`), which the scaling goal is stated for.
 */
export function goalLines(
  run: BenchRun,
  names: GoalNames,
  conns: number,
  coldStarts: readonly ColdStart[],
  rssMb: Readonly<Record<string, number>>,
  pinned: boolean,
): string[] {
  const lines: string[] = [];
  const atLeast = (label: string, value: number | null, goal: number, unit = '×'): void => {
    const shown = value === null ? 'n/a' : `${value.toFixed(2)}${unit}`;
    lines.push(`  ${label}: ${shown} (goal ≥ ${goal}${unit}) ${verdict(value === null ? null : value >= goal)}`);
  };
  atLeast(`GET, 1 PostgreSQL instance / bare Express`, ratio(run, GET, conns, names.pgOne, names.bare), 0.5);
  atLeast(`PUT, 1 PostgreSQL instance / bare Express`, ratio(run, PUT, conns, names.pgOne, names.bare), 0.4);
  atLeast(`PATCH, 1 PostgreSQL instance / bare Express`, ratio(run, PATCH, conns, names.pgOne, names.bare), 0.4);
  const score = cell(run, SCORE, conns, names.pgOne);
  const scoreRate = score ? Math.round(score.rps) : null;
  lines.push(
    `  scores/s, 1 PostgreSQL instance (LMS in its own process, 100 members): ${scoreRate ?? 'n/a'}` +
      `${score ? `, ${score.failures} failed` : ''} (goal ≥ 1000, none failed) ` +
      verdict(score ? score.rps >= 1000 && score.failures === 0 : null),
  );
  if (score) {
    const db = score.databaseCpuMsPerRequest;
    lines.push(
      `  CPU per score of the instance: ${score.cpuMsPerRequest.toFixed(2)} ms${db === undefined ? '' : ` (+ ${db.toFixed(2)} ms in its PostgreSQL backends)`} (goal ≤ 1 ms) ${verdict(score.cpuMsPerRequest <= 1)}`,
    );
  }
  const scaling = (op: string): number | null => (pinned ? ratio(run, op, conns, names.pgTwo, names.pgOne) : null);
  atLeast(`GET, 2 instances on separate cores / 1 instance${pinned ? '' : ' (needs --pin)'}`, scaling(GET), 1.7);
  atLeast(`PUT, 2 instances on separate cores / 1 instance${pinned ? '' : ' (needs --pin)'}`, scaling(PUT), 1.7);
  atLeast(`GET, SQLite / bare Express`, ratio(run, GET, conns, names.sqlite, names.bare), 0.8);
  if (coldStarts.length > 0) {
    const sorted = coldStarts.map((c) => c.operationMs).sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] as number;
    lines.push(`  cold start to the first validated operation, median of ${sorted.length}: ${(median / 1000).toFixed(2)} s (goal ≤ 0.5 s) ${verdict(median <= 500)}`);
  } else {
    lines.push('  cold start to the first validated operation: not measured (--cold-starts 0)');
  }
  const services = Object.entries(rssMb).filter(([name]) => name !== names.bare && !/Prism|LMS/.test(name));
  const largest = services.reduce<[string, number] | null>((max, entry) => (max === null || entry[1] > max[1] ? entry : max), null);
  lines.push(
    largest === null
      ? '  RSS after the bench: not measured'
      : `  RSS after the bench, largest service process (${largest[0]}): ${largest[1]} MB (goal < 100 MB) ${verdict(largest[1] < 100)}`,
  );
  return lines;
}
