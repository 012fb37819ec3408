/**
 * Test file order for vitest (vitest.config.ts, decision CI-02): the few files that take the longest start
 * first, on whichever project they belong to, and everything else follows in vitest's own order (its
 * cached durations on a developer machine; file size on a fresh CI checkout, which has no cache).
 *
 * With two workers on a 2-core CI machine, a two-minute file started last would run alone at the end
 * while the other worker idles; started first, it runs beside the many short files. The weights are the
 * files' seconds in a CI run of the suite (on one worker, rounded); only the order they give matters, so a
 * stale weight costs some idle time at the end, never a test.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const SLOW: Readonly<Record<string, number>> = {
  // A clone's `npm ci` and first build (OPS-44): an estimate until a CI run measures it.
  'default:tests/ops/first-hour.test.ts': 240,
  'default:tests/docs/site.test.ts': 135,
  'postgres:tests/server/core/fuzz.test.ts': 47,
  // Holds dashboard-sandbox, dashboard-lms and dashboard-states since CI-41: an estimate until CI measures it.
  'default:tests/e2e/dashboard-layout.test.ts': 40,
  'default:tests/lockstep/spec-change.test.ts': 35,
  'default:tests/server/core/fuzz.test.ts': 33,
  'default:tests/bin/tis.test.ts': 21,
  // Holds lti-picker and reference-lms since CI-42.
  'default:tests/e2e/lti-launch.test.ts': 20,
  'postgres:tests/server/multi-instance.test.ts': 16,
  'default:tests/client/package.test.ts': 16,
  'postgres:tests/server/scores/scores.test.ts': 13,
  'default:tests/examples/quiz.test.ts': 12,
  'default:tests/store/postgres.test.ts': 12,
  'default:tests/store/grades.test.ts': 12,
  'default:tests/ops/start.test.ts': 12,
  'default:tests/mocks/prism.test.ts': 11,
  'postgres:tests/server/files/files.test.ts': 11,
};

function weight(spec: TestSpecification, root: string): number {
  const file = spec.moduleId.startsWith(`${root}/`) ? spec.moduleId.slice(root.length + 1) : spec.moduleId;
  return SLOW[`${spec.project.name}:${file}`] ?? 0;
}

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root.replace(/\/$/, '');
    const rest = await super.sort(files);
    // A stable sort: files without a weight keep vitest's order among themselves.
    return [...rest].sort((a, b) => weight(b, root) - weight(a, root));
  }
}
