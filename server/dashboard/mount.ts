/**
 * Serves the dashboard API's own operations (`/dashboard/v1/...`, decision L-08). The launch page and the
 * Sandbox LMS, which the same spec describes, are served by their own mounts. Mount it on the app before
 * the contract dispatcher, with no path prefix:
 *
 *   app.use(dashboardPipeline(services, { responseValidation, bodyLimitBytes }));
 *
 * Requests outside `/dashboard/v1/` pass through untouched. It runs the contract pipeline (operation,
 * 404/405, guard, 415, 413, 400, validator, handler, response validation) over the dashboard spec, with
 * the credential checked by each operation's guard (`guard.ts`). The validator checks bodies and queries
 * against the spec, and `validation.ts` gives its failures the dashboard's words.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { operations as dashboardOperations } from '../../generated/dashboard/operations.js';
import type { operations } from '../../generated/dashboard/types.js';
import type { PipelineOptions } from '../http/pipeline.js';
import { contractPipeline } from '../http/pipeline.js';
import type { Handlers } from '../http/registry.js';
import type { OperationEntry } from '../http/routes.js';
import type { Services } from '../http/services.js';
import { loadBundledSpec } from '../http/spec.js';
import { appHandlers } from './apps.js';
import { operatorHandlers } from './operators.js';
import { sandboxHandlers } from './sandbox.js';
import { signedLaunchHandlers } from './signed-launch.js';
import { lmsRegistrationHandlers } from '../lti/dashboard.js';
import { sandboxLmsControlHandlers } from '../sandbox/controls/handlers.js';
import { dashboardValidationRules } from './validation.js';

export const DASHBOARD_PATH = '/dashboard/v1';

/** Every operation of the dashboard spec but the ones other mounts serve. */
export type DashboardOperationId = Exclude<keyof operations, 'openLaunchPage'>;

/** Complete by type: a missing or an extra handler is a compile error. */
export const dashboardHandlers: Handlers<Pick<operations, DashboardOperationId>> = {
  ...appHandlers,
  ...sandboxHandlers,
  ...operatorHandlers,
  ...signedLaunchHandlers,
  ...lmsRegistrationHandlers,
  ...sandboxLmsControlHandlers,
};

type SpecObject = Record<string, unknown>;

const served = new WeakMap<SpecObject, SpecObject>();

/** The dashboard spec as the validator gets it: only the `/dashboard/v1/` paths this mount serves. */
export function dashboardServedSpec(full: SpecObject = loadBundledSpec('dashboard')): SpecObject {
  // One object per bundle, as `loadBundledSpec` gives, so every mount in a process shares its validators.
  let spec = served.get(full);
  if (!spec) {
    const paths = (full['paths'] ?? {}) as Record<string, unknown>;
    spec = { ...full, paths: Object.fromEntries(Object.entries(paths).filter(([path]) => path.startsWith(`${DASHBOARD_PATH}/`))) };
    served.set(full, spec);
  }
  return spec;
}

function buildDashboardPipeline(services: Services, options: PipelineOptions): RequestHandler {
  const ids = Object.keys(dashboardHandlers) as DashboardOperationId[];
  const table: Record<string, OperationEntry> = Object.fromEntries(ids.map((id) => [id, dashboardOperations[id]]));
  const spec = dashboardServedSpec();
  return contractPipeline(
    {
      version: 'dashboard',
      spec,
      operations: table,
      handlers: dashboardHandlers,
      authenticate: 'handler',
      validationRules: dashboardValidationRules(spec),
    },
    services,
    options,
  );
}

export function dashboardPipeline(services: Services, options: PipelineOptions): RequestHandler {
  // Made on the first request under /dashboard/v1, not at start: its spec is the largest of the bundled
  // ones, and parsing it, its routes and its validation rules were a share of every cold start that no
  // tool request needs (PERF-92).
  let pipeline: RequestHandler | undefined;
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.path !== DASHBOARD_PATH && !req.path.startsWith(`${DASHBOARD_PATH}/`)) {
      next();
      return;
    }
    pipeline ??= buildDashboardPipeline(services, options);
    void pipeline(req, res, next);
  };
}
