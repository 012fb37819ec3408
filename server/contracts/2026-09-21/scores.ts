/**
 * Submit a score, in both URL forms (decision L-03). The guard answers 404/403 before the body is read
 * (GAP-23); the validator has checked the body against the spec when the handler runs, and the handler
 * re-reads it with the contract's exact messages before anything is published.
 */
import type { operations } from '../../../generated/2026-09-21/types.js';
import { scoreGuard } from '../../auth/score-permissions.js';
import type { Handlers, HandlerContext } from '../../http/registry.js';
import { withGuard } from '../../http/registry.js';
import type { ScoreGuardResult } from '../../auth/score-permissions.js';
import type { GradeAttemptJson } from '../../scores/submit.js';
import { submitScore } from '../../scores/submit.js';
import { parseScoreSubmission } from '../../scores/validate.js';
import { idempotencyKeyOf, requestFingerprint, submitOnce } from '../../scores/idempotency.js';
import type { PairClaim, RecordKey } from '../../scores/idempotency.js';
import '../../scores/index.js';

type ScoreOp = operations['submitScore'] | operations['submitScoreAsUser'];

async function record(ctx: HandlerContext<ScoreOp> & { guarded: ScoreGuardResult }, recordKey?: RecordKey, claim?: PairClaim): Promise<GradeAttemptJson> {
  const submission = parseScoreSubmission(ctx.body);
  return submitScore({ store: ctx.services.store, publisher: ctx.services.publisher, log: ctx.log }, ctx.guarded, submission, {
    ...(recordKey ? { onRecorded: recordKey } : {}),
    ...(claim ? { claim } : {}),
    ...(ctx.epoch ? { epoch: ctx.epoch } : {}),
  });
}

/** With an `Idempotency-Key`, the first attempt of the same request instead of a new one (H-07). */
async function answer(ctx: HandlerContext<ScoreOp> & { guarded: ScoreGuardResult }): Promise<{
  status: 200;
  body: GradeAttemptJson;
  headers?: Record<string, string>;
}> {
  // The epoch is confirmed in the score transaction's first exchange on PostgreSQL (PERF-216); elsewhere the
  // key's claim is a write of its own before that transaction, so the epoch is confirmed first.
  if (!ctx.services.store.pipelined) await ctx.epoch?.confirm();
  const key = idempotencyKeyOf(ctx.headers);
  if (key === null) return { status: 200, body: await record(ctx) };
  const { guarded } = ctx;
  const fingerprint = requestFingerprint({ path: ctx.req.path, caller: `${guarded.sourceType}:${guarded.sourceId}`, body: ctx.body });
  const { attempt, replayed } = await submitOnce(ctx.services.store, { appId: guarded.target.appId, key, fingerprint }, (recordKey, claim) => record(ctx, recordKey, claim));
  return replayed ? { status: 200, body: attempt, headers: { 'Idempotent-Replayed': 'true' } } : { status: 200, body: attempt };
}

export const scoreHandlers: Pick<Handlers<operations>, 'submitScore' | 'submitScoreAsUser'> = {
  submitScore: withGuard(scoreGuard<operations['submitScore']>('contexts'), answer),
  submitScoreAsUser: withGuard(scoreGuard<operations['submitScoreAsUser']>('account'), answer),
};
