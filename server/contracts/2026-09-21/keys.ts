import type { operations } from '../../../generated/2026-09-21/types.js';
import type { Handlers } from '../../http/registry.js';
import { JWKS_MAX_AGE_SECONDS } from '../../signing/signer.js';

/** The JWKS (decisions L-06, NS-13); cacheable, so rotation publishes keys ahead of use. */
export const keyHandlers: Pick<Handlers<operations>, 'getPublicKeys'> = {
  getPublicKeys: async (ctx) => ({
    status: 200,
    body: await ctx.services.signer.jwks(),
    headers: { 'Cache-Control': `public, max-age=${JWKS_MAX_AGE_SECONDS}` },
  }),
};
