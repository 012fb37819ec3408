/**
 * The archived contract 2026-08-25 as the app serves it: its bundled spec, operations table and one
 * handler per operation. The management API and launch-keyed grades are the archived module's, with this
 * version's fields; rows, provision PUTs and the JWKS are the current contract's own handlers (the same
 * path files), checked here against this contract's generated types. The `satisfies` check makes a
 * missing or extra handler a compile error.
 */
import { operations as operationTable } from '../../../generated/2026-08-25/operations.js';
import type { OperationId } from '../../../generated/2026-08-25/operations.js';
import type { operations } from '../../../generated/2026-08-25/types.js';
import type { ContractDefinition } from '../../http/pipeline.js';
import type { Handlers } from '../../http/registry.js';
import { withGuard } from '../../http/registry.js';
import { loadBundledSpec } from '../../http/spec.js';
import { keyHandlers } from '../2026-09-21/keys.js';
import { provisionHandlers } from '../2026-09-21/provision.js';
import { rowHandlersFor } from '../2026-09-21/rows.js';
import { grade0825, gradeGuard } from '../archived/grades.js';
import { archivedHandlers } from '../archived/handlers.js';
import { app0825, location0825, rotateKey, storedLocationGuard } from '../archived/management.js';
import { archivedValidationRules } from '../archived/messages.js';
import { callingApp } from '../archived/version.js';
import type { LaunchGradeRecord, LocationRecord } from '../../store/index.js';

const VERSION = '2026-08-25';

/** The operations under `paths` (the webhooks in `operations` are requests the service sends, not serves). */
export type ServedOperations = Pick<operations, OperationId>;
type Ops = operations;

const { unguarded, guarded } = archivedHandlers({ version: VERSION, app: app0825, location: location0825, grade: grade0825 });

export const handlers = {
  ...unguarded,
  updateLocation: withGuard<Ops['updateLocation'], LocationRecord>(storedLocationGuard, guarded.updateLocation),
  deleteLocation: withGuard<Ops['deleteLocation'], LocationRecord>(storedLocationGuard, guarded.deleteLocation),
  getGrade: withGuard<Ops['getGrade'], LaunchGradeRecord>(gradeGuard, guarded.getGrade),
  rotateKey: async (ctx) => ({ status: 200, body: await rotateKey(ctx.services, callingApp(ctx.principal)) }),
  ...rowHandlersFor({ provisioning: true }),
  ...provisionHandlers,
  ...keyHandlers,
} satisfies Handlers<ServedOperations>;

// A handler object with an extra key still satisfies the mapped type above; this catches that too.
const noExtraHandlers: Record<Exclude<keyof typeof handlers, OperationId>, never> = {};
void noExtraHandlers;

export const contract20260825: ContractDefinition = {
  version: VERSION,
  spec: loadBundledSpec(VERSION),
  operations: operationTable,
  handlers,
  validationRules: archivedValidationRules(VERSION),
};
