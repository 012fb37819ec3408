/**
 * Score submission, published by the service to its Sandbox LMS over real HTTP. A submission is answered
 * 200 whether the LMS took the score or not; only an attempt with `status: success` counts as served.
 *
 * The submissions go to many members in turn, each with their own launch's token, as a class submitting
 * a quiz would: one member's scores are published one after another in `submitted` order (LTI-16), so a
 * bench that sent every score for one member would measure that one queue, not the service.
 */
import { launch } from '../../tests/server/harness.js';
import type { BenchSection } from './section.js';

/** Members the submissions are spread over: more than the largest connection count, so no queue waits. */
export const SCORE_MEMBERS = 100;

export const scoreSection: BenchSection = {
  name: 'scores',
  async prepare({ services, student, placed }) {
    const scorePath = new URL(student.claims.grade.submit ?? '').pathname;
    const members = [{ path: scorePath, auth: student.auth }];
    while (members.length < SCORE_MEMBERS) {
      const other = await launch({ services }, { placed, groups: ['student'] });
      members.push({ path: new URL(other.claims.grade.submit ?? '').pathname, auth: other.auth });
    }
    return [
      {
        name: 'score submission',
        method: 'POST',
        path: scorePath,
        spread: members,
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
