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
import { grade0825, gradeGuard, submitGrade } from '../archived/grades.js';
import {
  app0825,
  createLocation,
  deleteLocation,
  location0825,
  rotateKey,
  storedLocationGuard,
  storedLocations,
  updateApp,
  updateLocation,
} from '../archived/management.js';
import { archivedValidationRules } from '../archived/messages.js';
import { callingApp } from '../archived/version.js';
import type { LaunchGradeRecord, LocationRecord } from '../../store/index.js';

const VERSION = '2026-08-25';

/** The operations under `paths` (the webhooks in `operations` are requests the service sends, not serves). */
export type ServedOperations = Pick<operations, OperationId>;
type Ops = operations;

const managementHandlers: Pick<
  Handlers<Ops>,
  'getApp' | 'updateApp' | 'listLocations' | 'createLocation' | 'updateLocation' | 'deleteLocation' | 'rotateKey'
> = {
  getApp: async (ctx) => ({ status: 200, body: await app0825(ctx.services, callingApp(ctx.principal)) }),
  updateApp: async (ctx) => {
    const app = await updateApp(ctx.services, callingApp(ctx.principal), ctx.body, VERSION);
    return { status: 200, body: await app0825(ctx.services, app) };
  },
  listLocations: async (ctx) => {
    const locations = await storedLocations(ctx.services, callingApp(ctx.principal).id, VERSION);
    return { status: 200, body: { locations: locations.map(location0825) } };
  },
  createLocation: async (ctx) => ({
    status: 201,
    body: location0825(await createLocation(ctx.services, callingApp(ctx.principal), ctx.body, VERSION)),
  }),
  updateLocation: withGuard<Ops['updateLocation'], LocationRecord>(storedLocationGuard, async (ctx) => ({
    status: 200,
    body: location0825(await updateLocation(ctx.services, callingApp(ctx.principal), ctx.guarded, ctx.body, VERSION)),
  })),
  deleteLocation: withGuard<Ops['deleteLocation'], LocationRecord>(storedLocationGuard, async (ctx) => ({
    status: 200,
    body: await deleteLocation(ctx.services, callingApp(ctx.principal), ctx.guarded),
  })),
  rotateKey: async (ctx) => ({ status: 200, body: await rotateKey(ctx.services, callingApp(ctx.principal)) }),
};

const gradeHandlers: Pick<Handlers<Ops>, 'submitGrade' | 'getGrade'> = {
  submitGrade: async (ctx) => ({
    status: 200,
    body: grade0825(await submitGrade({ services: ctx.services, log: ctx.log }, callingApp(ctx.principal), ctx.body, VERSION)),
  }),
  getGrade: withGuard<Ops['getGrade'], LaunchGradeRecord>(gradeGuard, async (ctx) => ({ status: 200, body: grade0825(ctx.guarded) })),
};

export const handlers = {
  ...managementHandlers,
  ...gradeHandlers,
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
