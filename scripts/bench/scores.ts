/**
 * Score submission, published by the service over real HTTP to a school's LMS: the reference LMS in a
 * process of its own (`school-lms.ts`, decision PERF-150), registered through Dynamic Registration. A
 * submission is answered 200 whether the LMS took the score or not; only an attempt with `status: success`
 * counts as served. The LMS's CPU per score is reported beside the service's.
 *
 * The submissions go to many members in turn, each with their own launch's token, as a class submitting
 * a quiz would: one member's scores are published one after another in `submitted` order (LTI-16), so a
 * bench that sent every score for one member would measure that one queue, not the service.
 */
import type { BenchSection } from './section.js';
import { gradedClass, registerWithLms } from './school-lms.js';

/** Members the submissions are spread over: more than the largest connection count, so no queue waits. */
export const SCORE_MEMBERS = 100;

/** The score row's name, which the table, the floors file and the goals (goals.ts) key their cells by. */
export const SCORE_OPERATION = 'score submission';

export const scoreSection: BenchSection = {
  name: 'scores',
  async prepare({ services, lms }) {
    // The fixture's service is not listening yet: it is served for the registration's span only.
    const school = await registerWithLms(lms, services, true);
    const { members } = await gradedClass(lms, services, school, SCORE_MEMBERS);
    const first = members[0];
    if (!first) throw new Error('no member to score');
    return [
      {
        name: SCORE_OPERATION,
        method: 'POST',
        path: first.path,
        spread: members,
        reaches: { name: 'LMS', pid: lms.pid },
        // Measured on the build (2026-11-26, PERF-152): after 1 s the service spent 1.1 to 1.2 ms per score
        // and the LMS 0.45 to 0.5, against 0.7 to 0.8 and 0.3 after about 5 s; both JITs need a few
        // thousand scores over this longer path (publication, the LMS's token and scores endpoints).
        warmupS: 5,
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
