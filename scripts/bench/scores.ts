/**
 * Score submission, published by the service to its Sandbox LMS over real HTTP. A submission is answered
 * 200 whether the LMS took the score or not; only an attempt with `status: success` counts as served.
 */
import type { BenchSection } from './section.js';

export const scoreSection: BenchSection = {
  name: 'scores',
  async prepare({ student }) {
    const scorePath = new URL(student.claims.grade.submit ?? '').pathname;
    return [
      {
        name: 'score submission',
        method: 'POST',
        path: scorePath,
        body: JSON.stringify({ score: 0.85, comment: 'Good work on question 3.' }),
        failure: (status, body) => {
          if (status < 200 || status > 299) return null;
          try {
            const attempt = JSON.parse(body) as { status?: unknown; data?: { error?: unknown } };
            if (attempt.status === 'success') return null;
            const why = typeof attempt.data?.error === 'string' ? attempt.data.error : JSON.stringify(attempt.data?.error ?? null);
            return `attempt ${String(attempt.status)}: ${why}`.slice(0, 200);
          } catch {
            // Prism answers the spec's example; bare Express a stub; neither is an attempt to judge.
            return null;
          }
        },
      },
    ];
  },
};
