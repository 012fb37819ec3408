// The types generated from the specs (`npm run generate`), one namespace per API, for code that
// wants the schemas without the clients: `import type { Contract20260921 } from '.../types'`, then
// `Contract20260921.components['schemas']['LaunchClaims']`. A single API is also importable as
// `.../types/<name>` (for example `.../types/2026-09-21`).

export type * as Contract20260921 from '../generated/2026-09-21/types.js';
export type * as Contract20260825 from '../generated/2026-08-25/types.js';
export type * as Contract20260819 from '../generated/2026-08-19/types.js';
export type * as Dashboard from '../generated/dashboard/types.js';

export type { ContractComponents, ContractPaths, ContractVersion, DashboardComponents, DashboardPaths } from './client-types.js';

import type { ContractComponents, ContractVersion } from './client-types.js';

/** One schema of one contract by name: `Schema<'2026-09-21', 'GradeAttempt'>`. */
export type Schema<
  V extends ContractVersion,
  Name extends keyof ContractComponents[V]['schemas'],
> = ContractComponents[V]['schemas'][Name];
