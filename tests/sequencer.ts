/**
 * Test file order for vitest (vitest.config.ts, decision CI-02): the few files that take the longest start
 * first, on whichever project they belong to, and everything else follows in vitest's own order (its
 * cached durations on a developer machine; file size on a fresh CI checkout, which has no cache).
 *
 * With two workers on a 2-core CI machine, a two-minute file started last would run alone at the end
 * while the other worker idles; started first, it runs beside the many short files. The weights are the
 * files' seconds in a CI run of the suite (rounded), every file of 3 s or more, so the order is longest
 * first all the way down and the two workers end close together (CI-34); only the order they give matters, so
 * a stale weight costs some idle time at the end, never a test.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const SLOW: Readonly<Record<string, number>> = {
  // From the fresh-clone CI run of 2026-11-27 22:42 (047287a, two workers): every file of 3 s or more.
  'default:tests/e2e/dashboard-layout.test.ts': 48,
  'default:tests/docs/site.test.ts': 48,
  'default:tests/lockstep/spec-change.test.ts': 44,
  'default:tests/client/package.test.ts': 33,
  'default:tests/e2e/lti-launch.test.ts': 25,
  'postgres:tests/server/core/fuzz.test.ts': 21,
  'default:tests/server/core/fuzz.test.ts': 21,
  'postgres:tests/server/multi-instance.test.ts': 18,
  'default:tests/lms/platform.test.ts': 16,
  'default:tests/mocks/prism.test.ts': 15,
  'default:tests/store/driver.test.ts': 12,
  'default:tests/lockstep/scenario.test.ts': 12,
  'postgres:tests/server/scores/scores.test.ts': 11,
  'postgres:tests/server/sandbox/shared-lms.test.ts': 11,
  'postgres:tests/server/crash.test.ts': 11,
  'default:tests/server/files/files.test.ts': 9,
  'default:tests/ops/first-hour.test.ts': 9,
  'default:tests/store/processes.test.ts': 8,
  'default:tests/store/postgres.test.ts': 8,
  'default:tests/store/grades.test.ts': 8,
  'default:tests/server/sandbox/controls/controls.test.ts': 8,
  'default:tests/server/rows/exact-json.test.ts': 8,
  'default:tests/ops/backup.test.ts': 8,
  'default:tests/server/scores/scores.test.ts': 7,
  'default:tests/server/files/s3.test.ts': 7,
  'default:tests/server/crash.test.ts': 7,
  'default:tests/ops/npm-signals.test.ts': 7,
  'default:tests/lms/browser.test.ts': 7,
  'postgres:tests/server/lti/deep-linking-ags.test.ts': 6,
  'postgres:tests/server/coverage.test.ts': 6,
  'postgres:tests/server/archived/operations.test.ts': 6,
  'default:tests/server/lti/families.test.ts': 6,
  'default:tests/server/dashboard/sandbox.test.ts': 6,
  'default:tests/server/dashboard/credentials.test.ts': 6,
  'default:tests/ops/start.test.ts': 6,
  'default:tests/client/contract-client.test.ts': 6,
  'default:tests/store/rows.test.ts': 5,
  'default:tests/store/files.test.ts': 5,
  'default:tests/server/rows/rows.test.ts': 5,
  'default:tests/server/rows/permissions.test.ts': 5,
  'default:tests/server/core/shutdown.test.ts': 5,
  'default:tests/examples/quiz.test.ts': 5,
  'postgres:tests/server/scores/idempotency.test.ts': 4,
  'postgres:tests/server/dashboard/operators.test.ts': 4,
  'default:tests/server/rows/json-patch-suite.test.ts': 4,
  'default:tests/server/outbound/provision.test.ts': 4,
  'default:tests/server/outbound/launch-page.test.ts': 4,
  'default:tests/server/outbound/development-urls.test.ts': 4,
  'default:tests/server/lti/deep-linking-ags.test.ts': 4,
  'default:tests/server/dashboard/pinned.test.ts': 4,
  'default:tests/server/dashboard/apps.test.ts': 4,
  'default:tests/server/coverage.test.ts': 4,
  'default:tests/server/core/throttle.test.ts': 4,
  'default:tests/server/archived/operations.test.ts': 4,
  'postgres:tests/server/files/database-blob-store.test.ts': 3,
  'default:tests/store/directory.test.ts': 3,
  'default:tests/spec/archived.test.ts': 3,
  'default:tests/server/scores/publisher.test.ts': 3,
  'default:tests/server/scores/column-points.test.ts': 3,
  'default:tests/server/sandbox/sandbox-lms-host.test.ts': 3,
  'default:tests/server/lti/registrations.test.ts': 3,
  'default:tests/server/files/s3-unavailable.test.ts': 3,
  'default:tests/server/files/migrate.test.ts': 3,
  'default:tests/server/dashboard/url-rules.test.ts': 3,
  'default:tests/server/dashboard/signed-launch.test.ts': 3,
  'default:tests/server/dashboard/sandbox-restart.test.ts': 3,
  'default:tests/server/core/validator-options.test.ts': 3,
  'default:tests/server/archived/storage.test.ts': 3,
  'default:tests/server/archived/second-school.test.ts': 3,
  'default:tests/server/archived/grades.test.ts': 3,
  'default:tests/server/archived/claims.test.ts': 3,
  'default:tests/pipeline/generate.test.ts': 3,
  'default:tests/pipeline/examples.test.ts': 3,
  'default:tests/client/verifier.test.ts': 3,
  'default:tests/bin/commands.test.ts': 3,
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
