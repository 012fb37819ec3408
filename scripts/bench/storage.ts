/** Storage rows: GET, PUT and a one-key PATCH of a member row (the contract's hottest operations). */
import type { BenchSection } from './section.js';

export const BENCH_ROW = JSON.stringify({
  progress: 3,
  answers: { q1: 'b', q2: 'd', q3: ['a', 'c'] },
  notes: 'Second attempt at question 3 after reviewing the lecture.',
  updated: '2026-11-03T10:15:00Z',
});

export const storageSection: BenchSection = {
  name: 'storage',
  async prepare({ student }) {
    const rowPath = new URL(student.claims.storage.member).pathname;
    return [
      { name: 'storage GET (member row)', method: 'GET', path: rowPath },
      { name: 'storage PUT (member row, 160 B)', method: 'PUT', path: rowPath, body: BENCH_ROW },
      {
        name: 'storage PATCH (one key)',
        method: 'PATCH',
        path: rowPath,
        body: JSON.stringify({ patch: [{ op: 'replace', path: '/progress', value: 4 }] }),
      },
    ];
  },
};
