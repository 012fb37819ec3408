// `npm run bench --rounds` (PERF-223): the targets take turns, each cell pools its runs, and issue 30's goal
// lines judge the pooled ratio while showing each round's beside it.
import { describe, expect, it } from 'vitest';
import { goalLines } from '../../scripts/bench/goals.js';
import type { BenchRun, Cell } from '../../scripts/bench/report.js';
import { cellOf, inTurn, type Slice } from '../../scripts/bench/rounds.js';
import { SCORE_OPERATION } from '../../scripts/bench/scores.js';
import { STORAGE_OPERATIONS } from '../../scripts/bench/storage.js';

const slice = (over: Partial<Slice>): Slice => ({
  served: 0,
  seconds: 1,
  cpuMs: 0,
  databaseMs: 0,
  reachedMs: 0,
  generatorMs: 0,
  answered: 0,
  non2xx: 0,
  statusCodes: {},
  errors: 0,
  timeouts: 0,
  failed: new Map(),
  p50: 0,
  p99: 0,
  ...over,
});

describe('bench rounds', () => {
  it('rotates the order by one each round, so every target takes every place', () => {
    expect([0, 1, 2, 3].map((round) => inTurn(['a', 'b', 'c'], round).join(''))).toEqual(['abc', 'bca', 'cab', 'abc']);
  });

  it('pools a cell over its runs: requests over seconds, CPU over served requests, the worst p99', () => {
    const cell = cellOf(
      [
        slice({ served: 3000, seconds: 3, cpuMs: 900, databaseMs: 150, answered: 3000, p50: 2, p99: 10 }),
        slice({ served: 1500, seconds: 3, cpuMs: 600, databaseMs: 150, answered: 1500, p50: 4, p99: 30 }),
        slice({ served: 1500, seconds: 3, cpuMs: 600, databaseMs: 60, answered: 1502, non2xx: 2, statusCodes: { 503: { count: 2 } }, p50: 3, p99: 20 }),
      ],
      { duration: 3, database: true },
    );
    expect(cell.rps).toBeCloseTo(6000 / 9);
    expect(cell.cpuMsPerRequest).toBeCloseTo(2100 / 6000);
    expect(cell.databaseCpuMsPerRequest).toBeCloseTo(360 / 6000);
    expect(cell.roundRps).toEqual([1000, 500, 500]);
    expect(cell).toMatchObject({ p50: 3, p99: 30, failures: 2 });
    expect(cell.bad).toMatch(/^2 non-2xx/);
  });

  it('keeps a one-run cell as it always was: no rounds recorded, and a silent run named', () => {
    const cell = cellOf([slice({ seconds: 3 })], { duration: 3, database: false, reached: 'LMS' });
    expect(cell.roundRps).toBeUndefined();
    expect(cell.databaseCpuMsPerRequest).toBeUndefined();
    expect(cell.reached?.name).toBe('LMS');
    expect(cell.bad).toBe('no answer within the 3 s run');
  });

  it("judges issue 30's goals on the pooled ratio and prints each round's beside it", () => {
    const names = { sqlite: 'SQLite', bare: 'bare', pgOne: 'PG 1', pgTwo: 'PG 2' };
    const at = (rounds: number[]): Cell => ({
      rps: rounds.reduce((a, b) => a + b, 0) / rounds.length,
      roundRps: rounds,
      p50: 1,
      p99: 2,
      failures: 0,
      cpuMsPerRequest: 0.4,
      bad: null,
    });
    const run = {
      cells: {
        [STORAGE_OPERATIONS.get]: { 10: { SQLite: at([900, 700, 800]), bare: at([1000, 1000, 1000]) } },
        [SCORE_OPERATION]: {
          10: {
            'PG 1': { ...at([300, 400, 500]), cpuMsPerRequest: 1.6, databaseCpuMsPerRequest: 1.2, reached: { name: 'LMS', cpuMsPerRequest: 0.5 }, generatorCpuMsPerRequest: 0.2 },
          },
        },
      },
    } as unknown as BenchRun;
    const lines = goalLines(run, names, 10, [], {}, true, 2);
    expect(lines).toContain('  GET, SQLite / bare Express: 0.80×, rounds 0.70–0.90× (goal ≥ 0.8×) met');
    expect(lines).toContain('  scores/s, 1 PostgreSQL instance (LMS in its own process, 100 members): 400, rounds 300–500, 0 failed (goal ≥ 1000, none failed) NOT met');
    // What the machine can give at this run's costs: 2 cores over every process's CPU per score.
    expect(lines).toContain(
      "    every process's CPU per score: instances 1.60 + PostgreSQL 1.20 + LMS 0.50 + load generator 0.20 = 3.50 ms; at that cost 2 cores serve at most 571 scores/s (1000/s needs at most 2.00 ms)",
    );
    expect(lines).toContain('  PUT, 2 instances on separate cores / 1 instance: n/a (goal ≥ 1.7×) not measured');
  });

  it('says what two cores allow two instances at the cost each request had in their cell', () => {
    const names = { sqlite: 'SQLite', bare: 'bare', pgOne: 'PG 1', pgTwo: 'PG 2' };
    const cellAt = (rps: number, cpu: number, db: number, generator: number): Cell => ({
      rps,
      p50: 1,
      p99: 2,
      failures: 0,
      cpuMsPerRequest: cpu,
      databaseCpuMsPerRequest: db,
      generatorCpuMsPerRequest: generator,
      bad: null,
    });
    const run = {
      cells: { [STORAGE_OPERATIONS.get]: { 10: { 'PG 1': cellAt(2000, 0.4, 0.05, 0.1), 'PG 2': cellAt(2600, 0.5, 0.1, 0.1) } } },
    } as unknown as BenchRun;
    const lines = goalLines(run, names, 10, [], {}, true, 2);
    expect(lines).toContain('  GET, 2 instances on separate cores / 1 instance: 1.30× (goal ≥ 1.7×) NOT met');
    expect(lines).toContain(
      "    every process's CPU per GET of the 2 instances: instances 0.50 + PostgreSQL 0.10 + load generator 0.10 = 0.70 ms; at that cost 2 cores serve at most 2857/s, 1.43× the 1 instance's 2000/s (1.7× needs at most 0.59 ms)",
    );
  });
});
