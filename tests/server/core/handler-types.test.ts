/**
 * Issue 3, "Server shape": handlers are typed from generated/2026-09-21/ so that a missing handler, an extra
 * one, or a wrong body or response type is a compile error. The proof is the type checker: every
 * `@ts-expect-error` below marks a mistake that must NOT compile, and `tsc --noEmit` (part of
 * `npm run check`) fails with "Unused '@ts-expect-error' directive" the day one of them starts compiling.
 * The runtime assertions only show the real handler table is the one checked.
 */
import { describe, expect, it } from 'vitest';
import { operations as operationTable } from '../../../generated/2026-09-21/operations.js';
import type { OperationId } from '../../../generated/2026-09-21/operations.js';
import type { operations as Operations0825 } from '../../../generated/2026-08-25/types.js';
import type { operations } from '../../../generated/2026-09-21/types.js';
import type { ServedOperations } from '../../../server/contracts/2026-09-21/index.js';
import { handlers } from '../../../server/contracts/2026-09-21/index.js';
import type { Handler, Handlers } from '../../../server/http/registry.js';

type Attempt = operations['submitScore']['responses'][200]['content']['application/json'];

// A table with one handler left out is not a complete table.
const { getContextRow: _left, ...missingOne } = handlers;
// @ts-expect-error getContextRow is missing
void (missingOne satisfies Handlers<ServedOperations>);

// An extra key: `satisfies` alone lets it through, the check index.ts adds does not.
const withExtra = { ...handlers, getContextRows: handlers.getContextRow };
void (withExtra satisfies Handlers<ServedOperations>);
// @ts-expect-error getContextRows is no operation of the contract
const noExtra: Record<Exclude<keyof typeof withExtra, OperationId>, never> = {};
void noExtra;

// A response body of the wrong shape.
// @ts-expect-error the attempt's id is a string and its other fields are required
export const wrongBody: Handler<operations['submitScore']> = async () => ({ status: 200, body: { id: 7 } });

// A status the operation does not list (a row PUT answers 204, with no body).
// @ts-expect-error 200 is not a status of putMemberRow
export const wrongStatus: Handler<operations['putMemberRow']> = async () => ({ status: 200, body: {} });

// A body on a response the spec declares with no content (a row PUT answers 204, empty), alone or as one
// branch of a union; the writer would otherwise send it with the 204.
// @ts-expect-error a 204 of putMemberRow has no body
export const bodyOnNoContent: Handler<operations['putMemberRow']> = async () => ({ status: 204, body: {} });
// @ts-expect-error the 204 branch carries a body
export const bodyOnNoContentBranch: Handler<operations['putMemberRow']> = async (ctx) => (ctx.params.member_id === '' ? { status: 204 } : { status: 204, body: { saved: true } });
// The same rule for an archived contract's own generated types (its provision PUT answers 204).
// @ts-expect-error a 204 of provisionContext (2026-08-25) has no body
export const bodyOnArchivedNoContent: Handler<Operations0825['provisionContext']> = async () => ({ status: 204, body: '' });

// A problem status returned as a result: problems are thrown as `Problem`, never returned.
// @ts-expect-error 422 is a problem response
export const returnedProblem: Handler<operations['putMemberRow']> = async () => ({ status: 422, body: { detail: 'x' } });

// Reading the request wrongly: the score is a number, and a row PUT has no `location_id` path parameter.
export const wrongRead: Handler<operations['submitScore']> = async (ctx) => {
  // @ts-expect-error score is a number
  const score: string = ctx.body.score;
  void score;
  const attempt = {} as Attempt;
  return { status: 200, body: attempt };
};
export const wrongParam: Handler<operations['putMemberRow']> = async (ctx) => {
  // @ts-expect-error putMemberRow's path has no location_id
  void ctx.params.location_id;
  return { status: 204 };
};

describe('handler typing (compile-time, checked by tsc)', () => {
  it('the checked table is the served one: one handler per operationId, no other', () => {
    expect(Object.keys(handlers).sort()).toEqual(Object.keys(operationTable).sort());
    expect(Object.keys(missingOne)).not.toContain('getContextRow');
  });
});
