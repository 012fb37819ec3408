/** Storage rows: GET, PUT and a one-key PATCH of a member row (the contract's hottest operations). */
import type { BenchSection } from './section.js';

export const BENCH_ROW = JSON.stringify({
  progress: 3,
  answers: { q1: 'b', q2: 'd', q3: ['a', 'c'] },
  notes: 'Second attempt at question 3 after reviewing the lecture.',
  updated: '2026-11-03T10:15:00Z',
});

/** The storage rows' names, which the table, the floors file and the goals (goals.ts) key their cells by. */
export const STORAGE_OPERATIONS = { get: 'storage GET (member row)', put: 'storage PUT (member row, 160 B)', patch: 'storage PATCH (one key)' } as const;

export const storageSection: BenchSection = {
  name: 'storage',
  async prepare({ student }) {
    const rowPath = new URL(student.claims.storage.member).pathname;
    return [
      { name: STORAGE_OPERATIONS.get, method: 'GET', path: rowPath },
      { name: STORAGE_OPERATIONS.put, method: 'PUT', path: rowPath, body: BENCH_ROW },
      {
        name: STORAGE_OPERATIONS.patch,
        method: 'PATCH',
        path: rowPath,
        body: JSON.stringify({ patch: [{ op: 'replace', path: '/progress', value: 4 }] }),
      },
    ];
  },
};
