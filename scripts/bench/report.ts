/**
 * What `npm run bench` leaves behind: the Markdown table it prints, a JSON record of the run under
 * `bench/results/`, and an SVG bar chart of the ratios beside it (for docs/performance.md).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ColdStart } from './cold-start.js';

export interface Cell {
  rps: number;
  p50: number;
  p99: number;
  /** Answers that were not a served request: non-2xx, socket errors, failed attempts. */
  failures: number;
  /** CPU milliseconds the target's server processes spent per served request (NaN when unknown). */
  cpuMsPerRequest: number;
  /**
   * CPU milliseconds the load generator (the bench's process) spent per served request, so a run shows what
   * every process on the machine spent on a request (absent in runs written before it was recorded).
   */
  generatorCpuMsPerRequest?: number;
  /** CPU milliseconds the target's database backends spent per served request (PostgreSQL columns). */
  databaseCpuMsPerRequest?: number;
  /** CPU milliseconds per served request of another process the work reached (the LMS a score is published to). */
  reached?: { name: string; cpuMsPerRequest: number };
  bad: string | null;
  /**
   * RSS of the target's (first) process in MB right after this cell, so a run shows whether memory grows
   * with the requests served or settles (absent in runs written before it was recorded).
   */
  rssMbAfter?: number;
  /** With `--rounds` above 1: the requests/s of each round's run, in round order (PERF-223). */
  roundRps?: number[];
}

export interface RatioDef {
  label: string;
  /** Numerator and denominator target names. */
  of: string;
  to: string;
}

export interface BenchRun {
  started: string;
  machine: string;
  /** `rounds`: runs per cell, the targets in turn (absent in runs written before PERF-223: one). */
  options: { durationS: number; warmupS: number; connections: number[]; rounds?: number };
  targets: string[];
  operations: string[];
  /** operation → connections → target → cell */
  cells: Record<string, Record<string, Record<string, Cell>>>;
  ratios: RatioDef[];
  /** Spawn → first answered request of the full stack, one entry per cold start measured. */
  coldStart: ColdStart[] | null;
  /** The same, of the `--baseline` checkout, measured alternately with the full stack's. */
  baselineColdStart?: ColdStart[] | null;
  /** Resident set size of each server process after the load, in MB. */
  rssMb: Record<string, number>;
  notes: string[];
}

export const ratioOf = (run: BenchRun, op: string, conns: number, def: RatioDef): number | null => {
  const a = run.cells[op]?.[String(conns)]?.[def.of]?.rps;
  const b = run.cells[op]?.[String(conns)]?.[def.to]?.rps;
  return a !== undefined && b !== undefined && b > 0 ? a / b : null;
};

export const p99Ratio = (run: BenchRun, op: string, conns: number, of: string, to: string): number | null => {
  const a = run.cells[op]?.[String(conns)]?.[of]?.p99;
  const b = run.cells[op]?.[String(conns)]?.[to]?.p99;
  return a !== undefined && b !== undefined && b > 0 ? a / b : null;
};

const fmtRps = (n: number): string => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1));
const fmtMs = (n: number): string => `${Math.round(n * 10) / 10} ms`;
const fmtRatio = (r: number | null): string => (r === null ? 'n/a' : `${r.toFixed(2)}×`);

/** One Markdown table per connection count: req/s, p50, p99 per target, then the ratios. */
export function markdownTables(run: BenchRun, p99Of: string, p99To: string, cpuOf: readonly string[] = []): string {
  const out: string[] = [];
  for (const conns of run.options.connections) {
    const header = [
      'Operation',
      ...run.targets.flatMap((n) => [`${n} req/s`, 'p50', 'p99']),
      ...run.ratios.map((r) => r.label),
      'p99 full/bare',
      'CPU/req full',
      // Per further target: its processes' CPU per request, and its database backends' after a +.
      ...cpuOf.map((n) => `CPU/req ${n}`),
    ];
    out.push(`**${conns} connections**`, '', `| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`);
    for (const op of run.operations) {
      const row = run.cells[op]?.[String(conns)] ?? {};
      const cells = run.targets.flatMap((n) => {
        const m = row[n];
        if (!m) return ['–', '–', '–'];
        return [`${fmtRps(m.rps)}${m.bad ? ' (!)' : ''}`, fmtMs(m.p50), fmtMs(m.p99)];
      });
      const ratios = run.ratios.map((r) => fmtRatio(ratioOf(run, op, conns, r)));
      const cpu = row[p99Of]?.cpuMsPerRequest;
      const reached = row[p99Of]?.reached;
      const cpuCell =
        (cpu === undefined || Number.isNaN(cpu) ? 'n/a' : `${cpu.toFixed(2)} ms`) +
        (reached === undefined || Number.isNaN(reached.cpuMsPerRequest) ? '' : ` (+ ${reached.name} ${reached.cpuMsPerRequest.toFixed(2)} ms)`);
      const more = cpuOf.map((n) => {
        const m = row[n];
        if (!m || Number.isNaN(m.cpuMsPerRequest)) return 'n/a';
        const db = m.databaseCpuMsPerRequest;
        const lms = m.reached === undefined || Number.isNaN(m.reached.cpuMsPerRequest) ? '' : ` (+ ${m.reached.name} ${m.reached.cpuMsPerRequest.toFixed(2)} ms)`;
        return `${m.cpuMsPerRequest.toFixed(2)}${db === undefined || Number.isNaN(db) ? '' : ` + ${db.toFixed(2)}`} ms${lms}`;
      });
      out.push(`| ${[op, ...cells, ...ratios, fmtRatio(p99Ratio(run, op, conns, p99Of, p99To)), cpuCell, ...more].join(' | ')} |`);
    }
    out.push('');
  }
  return out.join('\n');
}

/** Grouped horizontal bars: one group per operation, one bar per (ratio, connections). */
export function ratioChart(run: BenchRun): string {
  const series = run.ratios.flatMap((r) => run.options.connections.map((c) => ({ r, c })));
  const palette = ['#2b6cb0', '#90cdf4', '#c05621', '#fbd38d', '#2f855a', '#9ae6b4', '#6b46c1', '#d6bcfa'];
  const barH = 12;
  const gap = 10;
  const left = 230;
  const width = 760;
  const plotW = width - left - 60;
  const values = run.operations.flatMap((op) => series.map(({ r, c }) => ratioOf(run, op, c, r) ?? 0));
  const max = Math.max(1, ...values) * 1.1;
  const groupH = series.length * barH + gap;
  const legendH = Math.ceil(series.length / 2) * 16 + 10;
  const height = 30 + run.operations.length * groupH + legendH + 20;
  const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="18" font-size="13" font-weight="bold">${esc(`npm run bench, ${run.started}: requests/s ratios`)}</text>`,
  ];
  const x = (v: number): number => left + (v / max) * plotW;
  // The 1× line: at parity with the baseline.
  parts.push(`<line x1="${x(1)}" y1="26" x2="${x(1)}" y2="${30 + run.operations.length * groupH}" stroke="#888" stroke-dasharray="3,3"/>`);
  run.operations.forEach((op, i) => {
    const top = 30 + i * groupH;
    parts.push(`<text x="${left - 8}" y="${top + (series.length * barH) / 2 + 4}" text-anchor="end">${esc(op)}</text>`);
    series.forEach(({ r, c }, j) => {
      const v = ratioOf(run, op, c, r);
      const y = top + j * barH;
      if (v === null) return;
      parts.push(`<rect x="${left}" y="${y}" width="${Math.max(1, x(v) - left)}" height="${barH - 2}" fill="${palette[j % palette.length]}"/>`);
      parts.push(`<text x="${x(v) + 4}" y="${y + barH - 3}">${v.toFixed(2)}×</text>`);
    });
  });
  const legendTop = 40 + run.operations.length * groupH;
  series.forEach(({ r, c }, j) => {
    const lx = 10 + (j % 2) * 360;
    const ly = legendTop + Math.floor(j / 2) * 16;
    parts.push(`<rect x="${lx}" y="${ly}" width="10" height="10" fill="${palette[j % palette.length]}"/>`);
    parts.push(`<text x="${lx + 14}" y="${ly + 9}">${esc(`${r.label}, ${c} connections`)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

/** Writes `<stamp>.json`, `<stamp>.svg` and `latest.json`/`latest.svg` under `dir`; returns the paths. */
export function writeRun(run: BenchRun, dir: string): { json: string; svg: string } {
  mkdirSync(dir, { recursive: true });
  const stamp = run.started.replace(/[:.]/g, '-');
  const json = JSON.stringify(run, null, 2);
  const svg = ratioChart(run);
  const jsonPath = join(dir, `${stamp}.json`);
  const svgPath = join(dir, `${stamp}.svg`);
  writeFileSync(jsonPath, `${json}\n`);
  writeFileSync(svgPath, `${svg}\n`);
  writeFileSync(join(dir, 'latest.json'), `${json}\n`);
  writeFileSync(join(dir, 'latest.svg'), `${svg}\n`);
  return { json: jsonPath, svg: svgPath };
}
