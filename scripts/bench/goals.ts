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

/**
 * The ratio in each round (PERF-223), from the two cells' runs of that round, which ran within seconds of
 * each other; empty when the run had one round.
 */
function roundRatios(run: BenchRun, op: string, conns: number, of: string, to: string): number[] {
  const a = cell(run, op, conns, of)?.roundRps;
  const b = cell(run, op, conns, to)?.roundRps;
  if (!a || !b || a.length !== b.length) return [];
  return a.map((rps, i) => rps / (b[i] as number));
}

const spread = (values: readonly number[], unit: string, digits = 2): string =>
  values.length < 2 ? '' : `, rounds ${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}${unit}`;

/**
 * What every process on the machine spent per served request of a cell (PERF-224): the target's own
 * processes, its PostgreSQL backends, the process the request reached (the LMS) and the load generator;
 * null when the generator's share was not recorded.
 */
function machineMs(c: Cell): { total: number; parts: string } | null {
  if (c.generatorCpuMsPerRequest === undefined || Number.isNaN(c.generatorCpuMsPerRequest)) return null;
  const parts: Array<[string, number | undefined]> = [
    ['instances', c.cpuMsPerRequest],
    ['PostgreSQL', c.databaseCpuMsPerRequest],
    [c.reached?.name ?? '', c.reached?.cpuMsPerRequest],
    ['load generator', c.generatorCpuMsPerRequest],
  ];
  const shown = parts.filter((p): p is [string, number] => p[1] !== undefined && !Number.isNaN(p[1]));
  return {
    total: shown.reduce((sum, [, ms]) => sum + ms, 0),
    parts: shown.map(([name, ms]) => `${name} ${ms.toFixed(2)}`).join(' + '),
  };
}

/** Issue 30's rate of scores on one instance. */
const SCORES_PER_SECOND = 1000;

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
  /** The machine's cores: with them, each rate goal's line is followed by the most this run's costs allow. */
  cores?: number,
): string[] {
  const lines: string[] = [];
  // The verdict is the pooled ratio's; each round's is shown beside it as the run's own spread.
  const atLeast = (label: string, op: string, of: string, to: string, goal: number): void => {
    const value = ratio(run, op, conns, of, to);
    const shown = value === null ? 'n/a' : `${value.toFixed(2)}×${spread(roundRatios(run, op, conns, of, to), '×')}`;
    lines.push(`  ${label}: ${shown} (goal ≥ ${goal}×) ${verdict(value === null ? null : value >= goal)}`);
  };
  atLeast(`GET, 1 PostgreSQL instance / bare Express`, GET, names.pgOne, names.bare, 0.5);
  atLeast(`PUT, 1 PostgreSQL instance / bare Express`, PUT, names.pgOne, names.bare, 0.4);
  atLeast(`PATCH, 1 PostgreSQL instance / bare Express`, PATCH, names.pgOne, names.bare, 0.4);
  const score = cell(run, SCORE, conns, names.pgOne);
  const scoreRate = score ? Math.round(score.rps) : null;
  lines.push(
    `  scores/s, 1 PostgreSQL instance (LMS in its own process, 100 members): ${scoreRate ?? 'n/a'}` +
      `${score ? `${spread(score.roundRps ?? [], '', 0)}, ${score.failures} failed` : ''} (goal ≥ ${SCORES_PER_SECOND}, none failed) ` +
      verdict(score ? score.rps >= SCORES_PER_SECOND && score.failures === 0 : null),
  );
  if (score) {
    const db = score.databaseCpuMsPerRequest;
    lines.push(
      `  CPU per score of the instance: ${score.cpuMsPerRequest.toFixed(2)} ms${db === undefined ? '' : ` (+ ${db.toFixed(2)} ms in its PostgreSQL backends)`} (goal ≤ 1 ms) ${verdict(score.cpuMsPerRequest <= 1)}`,
    );
    const machine = cores ? machineMs(score) : null;
    if (cores && machine) {
      lines.push(
        `    every process's CPU per score: ${machine.parts} = ${machine.total.toFixed(2)} ms; at that cost ${cores} cores serve at most ` +
          `${Math.round((cores * 1000) / machine.total)} scores/s (${SCORES_PER_SECOND}/s needs at most ${((cores * 1000) / SCORES_PER_SECOND).toFixed(2)} ms)`,
      );
    }
  }
  if (pinned) {
    for (const [name, op] of [['GET', GET], ['PUT', PUT]] as const) {
      atLeast(`${name}, 2 instances on separate cores / 1 instance`, op, names.pgTwo, names.pgOne, 1.7);
      const two = cell(run, op, conns, names.pgTwo);
      const one = cell(run, op, conns, names.pgOne);
      const machine = cores && two ? machineMs(two) : null;
      if (cores && machine && one && one.rps > 0) {
        const most = (cores * 1000) / machine.total;
        lines.push(
          `    every process's CPU per ${name} of the 2 instances: ${machine.parts} = ${machine.total.toFixed(2)} ms; at that cost ${cores} cores ` +
            `serve at most ${Math.round(most)}/s, ${(most / one.rps).toFixed(2)}× the 1 instance's ${Math.round(one.rps)}/s ` +
            `(1.7× needs at most ${((cores * 1000) / (1.7 * one.rps)).toFixed(2)} ms)`,
        );
      }
    }
  } else {
    lines.push('  GET, 2 instances on separate cores / 1 instance (needs --pin): n/a (goal ≥ 1.7×) not measured');
    lines.push('  PUT, 2 instances on separate cores / 1 instance (needs --pin): n/a (goal ≥ 1.7×) not measured');
  }
  atLeast(`GET, SQLite / bare Express`, GET, names.sqlite, names.bare, 0.8);
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
