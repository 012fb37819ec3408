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
import '../../scores/index.js';

type ScoreOp = operations['submitScore'] | operations['submitScoreAsUser'];

async function record(ctx: HandlerContext<ScoreOp> & { guarded: ScoreGuardResult }): Promise<GradeAttemptJson> {
  const submission = parseScoreSubmission(ctx.body);
  return submitScore({ store: ctx.services.store, publisher: ctx.services.publisher, log: ctx.log }, ctx.guarded, submission);
}

export const scoreHandlers: Pick<Handlers<operations>, 'submitScore' | 'submitScoreAsUser'> = {
  submitScore: withGuard(scoreGuard<operations['submitScore']>('contexts'), async (ctx) => ({
    status: 200,
    body: await record(ctx),
  })),
  submitScoreAsUser: withGuard(scoreGuard<operations['submitScoreAsUser']>('account'), async (ctx) => ({
    status: 200,
    body: await record(ctx),
  })),
};
