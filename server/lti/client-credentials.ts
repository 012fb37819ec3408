/**
 * The body of an OAuth 2.0 client_credentials request authenticated by a JWT client assertion (RFC 7523
 * §2.2), as the LTI Security Framework has a tool ask its platform's token endpoint for an access token:
 * the assertion is signed with the service's keys, `iss` = `sub` = the client ID the platform gave, `aud`
 * = what the platform names its token endpoint, a short life and a `jti` never used again.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../store/index.js';
import { MAX_ASSERTION_LIFETIME_SECONDS } from './vocabulary.js';

export const JWT_BEARER_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** What a client assertion needs of the service's signer (`server/signing/signer.ts`). */
export interface AssertionSigner {
  sign(claims: Record<string, unknown>): Promise<string>;
}

export interface TokenClient {
  clientId: string;
  /** The assertion's `aud`: the token URL, or what the platform asks instead (Brightspace, LTI-03). */
  audience: string;
}

export async function clientCredentialsForm(signer: AssertionSigner, clock: Pick<Clock, 'nowMs'>, client: TokenClient, scopes: readonly string[]): Promise<URLSearchParams> {
  const iat = Math.floor(clock.nowMs() / 1000);
  const assertion = await signer.sign({
    iss: client.clientId,
    sub: client.clientId,
    aud: client.audience,
    iat,
    exp: iat + MAX_ASSERTION_LIFETIME_SECONDS,
    jti: randomUUID(),
  });
  return new URLSearchParams({
    grant_type: 'client_credentials',
    client_assertion_type: JWT_BEARER_ASSERTION_TYPE,
    client_assertion: assertion,
    scope: scopes.join(' '),
  });
}
