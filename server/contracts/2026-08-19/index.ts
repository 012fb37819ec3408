/**
 * The archived contract 2026-08-19 as the app serves it: its bundled spec, operations table and one
 * handler per operation. The management API and launch-keyed grades are the archived module's, with this
 * version's fields (no URLs but the callback, no key rotation, no `max_score`); rows and the JWKS are the
 * current contract's own handlers (the same path files), checked here against this contract's generated
 * types. There is no provisioning: rows never wait for a provision PUT. The `satisfies` check makes a
 * missing or extra handler a compile error.
 */
import { operations as operationTable } from '../../../generated/2026-08-19/operations.js';
import type { OperationId } from '../../../generated/2026-08-19/operations.js';
import type { operations } from '../../../generated/2026-08-19/types.js';
import type { ContractDefinition } from '../../http/pipeline.js';
import type { Handlers } from '../../http/registry.js';
import { withGuard } from '../../http/registry.js';
import { loadBundledSpec } from '../../http/spec.js';
import { keyHandlers } from '../2026-09-21/keys.js';
import { rowHandlersFor } from '../2026-09-21/rows.js';
import { grade0819, gradeGuard } from '../archived/grades.js';
import { archivedHandlers } from '../archived/handlers.js';
import { app0819, location0819, storedLocationGuard } from '../archived/management.js';
import { archivedValidationRules } from '../archived/messages.js';
import type { LaunchGradeRecord, LocationRecord } from '../../store/index.js';

const VERSION = '2026-08-19';

/** The operations under `paths` (the webhooks in `operations` are requests the service sends, not serves). */
export type ServedOperations = Pick<operations, OperationId>;
type Ops = operations;

const { unguarded, guarded } = archivedHandlers({ version: VERSION, app: app0819, location: location0819, grade: grade0819 });

export const handlers = {
  ...unguarded,
  updateLocation: withGuard<Ops['updateLocation'], LocationRecord>(storedLocationGuard, guarded.updateLocation),
  deleteLocation: withGuard<Ops['deleteLocation'], LocationRecord>(storedLocationGuard, guarded.deleteLocation),
  getGrade: withGuard<Ops['getGrade'], LaunchGradeRecord>(gradeGuard, guarded.getGrade),
  ...rowHandlersFor({ provisioning: false }),
  ...keyHandlers,
} satisfies Handlers<ServedOperations>;

// A handler object with an extra key still satisfies the mapped type above; this catches that too.
const noExtraHandlers: Record<Exclude<keyof typeof handlers, OperationId>, never> = {};
void noExtraHandlers;

export const contract20260819: ContractDefinition = {
  version: VERSION,
  spec: loadBundledSpec(VERSION),
  operations: operationTable,
  handlers,
  validationRules: archivedValidationRules(VERSION),
};
