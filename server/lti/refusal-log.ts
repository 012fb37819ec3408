/**
 * Refused LMS messages kept for the school's administrator (decisions LTI-126, LTI-127): each refusal
 * the page showed a report ID for is stored under that ID with its registration, the diagnosis and the
 * technical detail (never a token or a secret: the detail is the service's own sentence, capped). A
 * message that names no known registration is kept too, with the issuer and client it claimed.
 */
import { decodeJwt } from 'jose';
import type { Services } from '../http/services.js';
import type { LtiRefusalMessage } from '../store/index.js';
import { diagnose } from './diagnoses.js';
import { findRegistration } from './login.js';
import type { LtiRefusal } from './refusals.js';
import { CLAIMS, MESSAGE_TYPES } from './vocabulary.js';

/** What a refused message said about who sent it; unverified unless `registrationId` came from a check. */
export interface RefusalSource {
  message: LtiRefusalMessage;
  registrationId?: string | null;
  issuer?: string | null;
  clientId?: string | null;
  deploymentId?: string | null;
}

const MAX_DETAIL_CHARS = 500;
const MAX_ID_CHARS = 255;

/**
 * At most this many refusals are written per second by one process (LTI-127): a flood of forged
 * launches costs the store a bounded number of writes, so real launches keep their speed; past it a
 * refusal is still logged with its report ID, only not kept.
 */
export const REFUSALS_KEPT_PER_SECOND = 20;

let windowStart = 0;
let keptInWindow = 0;

function withinRate(nowMs: number): boolean {
  if (nowMs - windowStart >= 1000) {
    windowStart = nowMs;
    keptInWindow = 0;
  }
  keptInWindow += 1;
  return keptInWindow <= REFUSALS_KEPT_PER_SECOND;
}

function short(value: string | null | undefined, max = MAX_ID_CHARS): string | null {
  if (typeof value !== 'string' || value === '') return null;
  return value.length > max ? `${value.slice(0, max - 1)}…` : value;
}

/** Who an id_token says sent it, read without verifying (only to file the refusal under its LMS). */
export function claimedSender(idToken: string | undefined): Pick<RefusalSource, 'issuer' | 'clientId' | 'deploymentId'> {
  if (!idToken) return {};
  try {
    const claims = decodeJwt(idToken);
    const aud = Array.isArray(claims.aud) ? claims.aud[0] : claims.aud;
    const deployment = claims[CLAIMS.deploymentId];
    return {
      issuer: typeof claims.iss === 'string' ? claims.iss : null,
      clientId: typeof aud === 'string' ? aud : null,
      deploymentId: typeof deployment === 'string' ? deployment : null,
    };
  } catch {
    return {};
  }
}

/** Launch or Deep Linking, as an unverified id_token says. */
export function claimedMessage(idToken: string | undefined): LtiRefusalMessage {
  if (!idToken) return 'launch';
  try {
    return decodeJwt(idToken)[CLAIMS.messageType] === MESSAGE_TYPES.deepLinking ? 'deep_linking' : 'launch';
  } catch {
    return 'launch';
  }
}

export async function keepRefusal(services: Services, reportId: string, refusal: LtiRefusal, source: RefusalSource): Promise<void> {
  if (!withinRate(Date.now())) {
    services.log.warn('lti refusal not kept: too many this second', { report_id: reportId, code: refusal.code });
    return;
  }
  try {
    let registrationId = source.registrationId ?? null;
    const issuer = short(source.issuer);
    const clientId = short(source.clientId);
    if (registrationId === null && issuer !== null) {
      registrationId = (await findRegistration(services.store, issuer, clientId ?? undefined))?.id ?? null;
    }
    const { reason, advice } = diagnose(refusal.code, { publicUrl: services.config.publicUrl });
    await services.store.ltiRefusals.record({
      reportId,
      registrationId,
      issuer,
      clientId,
      deploymentId: short(source.deploymentId),
      message: source.message,
      code: short(refusal.code, 100) ?? 'refused',
      status: refusal.status,
      reason,
      advice,
      detail: short(refusal.reason, MAX_DETAIL_CHARS) ?? '',
    });
  } catch (err) {
    // Keeping the refusal must never turn the person's page into an error page.
    services.log.error('lti refusal not kept', { err, report_id: reportId });
  }
}
