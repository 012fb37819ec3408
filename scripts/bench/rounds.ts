/**
 * A cell measured in rounds (decision PERF-223): each target's runs of one operation, taken in turn with
 * the other targets', pooled into the one cell the tables and goals read. On this shared host the speed
 * of a core moves by half within a minute; a ratio of two cells measured twenty seconds apart carries that
 * drift, the same ratio pooled from runs taken in turn does not.
 */
import type { Cell } from './report.js';

/** What one measured run of load on one target counted. */
export interface Slice {
  served: number;
  seconds: number;
  /** CPU milliseconds of the target's own processes, of its database backends, of the process it reached. */
  cpuMs: number;
  databaseMs: number;
  reachedMs: number;
  /** CPU milliseconds of the load generator (the bench's own process, autocannon in it). */
  generatorMs: number;
  /** Answers of any status (0: the target never answered in this run). */
  answered: number;
  non2xx: number;
  statusCodes: Record<string, unknown>;
  errors: number;
  timeouts: number;
  /** Answers the operation judged failed (a score the LMS did not take), by reason. */
  failed: ReadonlyMap<string, number>;
  p50: number;
  p99: number;
}

export interface CellParts {
  /** Seconds of each run, for the message of a run that got no answer. */
  duration: number;
  /** The target has database backends whose CPU is counted. */
  database: boolean;
  /** The name of the process a served request also reaches (the score's LMS). */
  reached?: string;
}

/** The round's order of the targets: the list rotated by one per round, so each takes every place in turn. */
export function inTurn<T>(items: readonly T[], round: number): T[] {
  const at = items.length === 0 ? 0 : round % items.length;
  return [...items.slice(at), ...items.slice(0, at)];
}

/**
 * A cell from its runs: requests/s and CPU per request pooled over all of them (served requests over
 * seconds, CPU over served requests), p50 the median run's, p99 the worst run's (autocannon keeps no
 * histogram to merge), and, with more than one run, each run's requests/s in round order.
 */
export function cellOf(slices: readonly Slice[], parts: CellParts): Cell {
  const sum = (f: (s: Slice) => number): number => slices.reduce((total, s) => total + f(s), 0);
  const served = sum((s) => s.served);
  const failed = new Map<string, number>();
  for (const s of slices) for (const [why, n] of s.failed) failed.set(why, (failed.get(why) ?? 0) + n);
  const failedCount = [...failed.values()].reduce((a, b) => a + b, 0);
  const non2xx = sum((s) => s.non2xx);
  const errors = sum((s) => s.errors);
  const problems: string[] = [];
  const silent = slices.filter((s) => s.answered === 0).length;
  if (silent > 0) problems.push(`no answer within ${silent === 1 ? 'the' : `${silent} of the`} ${parts.duration} s run${silent === 1 ? '' : 's'}`);
  if (non2xx > 0) problems.push(`${non2xx} non-2xx (${slices.map((s) => JSON.stringify(s.statusCodes)).join(', ')})`);
  if (errors > 0) problems.push(`${errors} errors (${sum((s) => s.timeouts)} of them timeouts)`);
  if (failedCount > 0) problems.push(`${failedCount} failed attempts (${[...failed].map(([why, n]) => `${n}× ${why}`).join('; ')})`);
  const p50s = slices.map((s) => s.p50).sort((a, b) => a - b);
  const perServed = (total: number): number => (served ? total / served : Number.NaN);
  return {
    rps: served / sum((s) => s.seconds),
    cpuMsPerRequest: perServed(sum((s) => s.cpuMs)),
    generatorCpuMsPerRequest: perServed(sum((s) => s.generatorMs)),
    ...(parts.database ? { databaseCpuMsPerRequest: perServed(sum((s) => s.databaseMs)) } : {}),
    ...(parts.reached ? { reached: { name: parts.reached, cpuMsPerRequest: perServed(sum((s) => s.reachedMs)) } } : {}),
    p50: p50s[Math.floor((p50s.length - 1) / 2)] ?? Number.NaN,
    p99: slices.length ? Math.max(...slices.map((s) => s.p99)) : Number.NaN,
    failures: non2xx + errors + failedCount,
    bad: problems.length ? problems.join(', ') : null,
    ...(slices.length > 1 ? { roundRps: slices.map((s) => s.served / s.seconds) } : {}),
  };
}
