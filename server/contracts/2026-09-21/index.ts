/**
 * The current contract as the app serves it: the bundled spec, the operations table and one handler per
 * operation. The `satisfies` check makes a missing or extra handler a compile error.
 */
import { operations as operationTable } from '../../../generated/2026-09-21/operations.js';
import type { OperationId } from '../../../generated/2026-09-21/operations.js';
import type { operations } from '../../../generated/2026-09-21/types.js';
import type { ContractDefinition } from '../../http/pipeline.js';
import type { Handlers } from '../../http/registry.js';
import { loadBundledSpec } from '../../http/spec.js';
import { fileHandlers } from './files.js';
import { keyHandlers } from './keys.js';
import { provisionHandlers } from './provision.js';
import { rowHandlers } from './rows.js';
import { scoreHandlers } from './scores.js';

/** The operations under `paths` (the webhooks in `operations` are requests the service sends, not serves). */
export type ServedOperations = Pick<operations, OperationId>;

export const handlers = {
  ...keyHandlers,
  ...provisionHandlers,
  ...rowHandlers,
  ...fileHandlers,
  ...scoreHandlers,
} satisfies Handlers<ServedOperations>;

// A handler object with an extra key still satisfies the mapped type above; this catches that too.
const noExtraHandlers: Record<Exclude<keyof typeof handlers, OperationId>, never> = {};
void noExtraHandlers;

export const contract20260921: ContractDefinition = {
  version: '2026-09-21',
  spec: loadBundledSpec('2026-09-21'),
  operations: operationTable,
  handlers,
};
