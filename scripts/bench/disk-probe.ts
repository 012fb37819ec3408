/**
 * What one durable commit costs on the disk the bench runs on: SQLite in WAL mode committing a changed
 * row, with `synchronous=FULL` (the service's setting: one fsync of the WAL per commit) and with
 * `synchronous=NORMAL` (no fsync at commit). The service's write throughput is bounded by the first,
 * so the table is read beside it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

export interface DiskProbe {
  fullMs: number;
  normalMs: number;
}

export function probeCommitCost(commits = 200, dir: string = tmpdir()): DiskProbe {
  const cost = (mode: 'FULL' | 'NORMAL'): number => {
    const scratch = mkdtempSync(join(dir, 'tis-disk-probe-'));
    const db = new Database(join(scratch, 'probe.sqlite'));
    try {
      db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${mode}`);
      db.exec('CREATE TABLE rows (k TEXT PRIMARY KEY, body TEXT NOT NULL)');
      const put = db.prepare('INSERT INTO rows (k, body) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET body = excluded.body');
      const begin = db.prepare('BEGIN IMMEDIATE');
      const commit = db.prepare('COMMIT');
      const started = process.hrtime.bigint();
      for (let i = 0; i < commits; i += 1) {
        begin.run();
        // A different body each time: SQLite skips writing a cell whose content did not change.
        put.run(`k${i % 10}`, JSON.stringify({ progress: i, notes: 'x'.repeat(120) }));
        commit.run();
      }
      return Number(process.hrtime.bigint() - started) / 1e6 / commits;
    } finally {
      db.close();
      rmSync(scratch, { recursive: true, force: true });
    }
  };
  return { fullMs: cost('FULL'), normalMs: cost('NORMAL') };
}
