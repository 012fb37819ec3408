/**
 * `Idempotency-Key` on score submissions, an extension of this implementation (decision H-07): a tool that
 * lost the answer to a score submission can send it again without publishing twice. The first request
 * with a key claims it (per tool) and, once its attempt is recorded, the key names that attempt for 24
 * hours; the same request again answers that attempt and publishes nothing, another request under the key
 * is refused. The header's name is read from the spec (lockstep).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Problem } from '../http/problem.js';
import { loadBundledSpec } from '../http/spec.js';
import { sha256Hex } from '../store/ids.js';
import type { AttemptRecord, Repositories, Store } from '../store/index.js';
import type { IdempotencyRecord, IdempotencyRow } from '../store/repos/score-idempotency.js';
import { claimStatement, heldStatement, toIdempotencyRecord } from '../store/repos/score-idempotency.js';
import type { AttemptToPublish } from './publish.js';
import type { GradeAttemptJson } from './submit.js';
import { attemptJson } from './submit.js';

/** How long a key names its first attempt. */
export const IDEMPOTENCY_KEPT_MS = 24 * 60 * 60 * 1000;
/**
 * A claim whose request never recorded its attempt (the process died while publishing) frees its key
 * after this long, far beyond the longest publication (a few LMS requests of at most 10 s each).
 */
export const IDEMPOTENCY_UNFINISHED_MS = 5 * 60 * 1000;

function headerName(): string {
  const spec = loadBundledSpec('2026-09-21') as { components?: { parameters?: Record<string, { name?: string }> } };
  const name = spec.components?.parameters?.['IdempotencyKey']?.name;
  if (!name) throw new Error('the 2026-09-21 spec has no IdempotencyKey parameter');
  return name.toLowerCase();
}

const HEADER = headerName();

export const IDEMPOTENCY_MESSAGES = {
  reused: (key: string) => `Idempotency-Key "${key}" was used within the last 24 hours for a different score submission`,
  inProgress: (key: string) => `the score submission with Idempotency-Key "${key}" is still being published; retry in a moment`,
} as const;

/** The request's key, or null without the header (the validator has checked its shape). */
export function idempotencyKeyOf(headers: IncomingHttpHeaders): string | null {
  const value = headers[HEADER];
  const key = Array.isArray(value) ? value[0] : value;
  return typeof key === 'string' && key !== '' ? key : null;
}

/** Object members in code-unit order at every level, so the same JSON value always reads the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** What makes two requests the same: the URL, who sends it, and the body as a JSON value. */
export function requestFingerprint(parts: { path: string; caller: string; body: unknown }): string {
  return sha256Hex(`${parts.path}\n${parts.caller}\n${canonical(parts.body)}`);
}

export interface IdempotentAnswer {
  attempt: GradeAttemptJson;
  replayed: boolean;
}

/** Writes the key's answer in the attempt's own transaction (`publishAttempt`'s `onRecorded`). */
export type RecordKey = (tx: Repositories, attempt: AttemptRecord) => Promise<void>;

/**
 * Keys older than 24 hours are deleted at most this often per process: a claim treats an expired key as
 * free anyway, so the sweep only keeps the table small and need not cost a write per request.
 */
export const IDEMPOTENCY_SWEEP_EVERY_MS = 60 * 1000;

const lastSweep = new WeakMap<object, number>();

async function sweepNowAndThen(store: Store): Promise<void> {
  const now = Date.now();
  const last = lastSweep.get(store);
  if (last !== undefined && now - last < IDEMPOTENCY_SWEEP_EVERY_MS && now >= last) return;
  lastSweep.set(store, now);
  await store.scoreIdempotency.sweep(IDEMPOTENCY_KEPT_MS);
}

/** The claim sent in the score transaction's first exchange on PostgreSQL (PERF-173). */
export type PairClaim = NonNullable<AttemptToPublish['claim']>;

/** Thrown from inside the pair's transaction when the key is held: nothing was published, all is rolled back. */
class KeyHeld extends Error {
  constructor(readonly held: IdempotencyRecord | null) {
    super('the Idempotency-Key is held');
  }
}

const STALE = { keptMs: IDEMPOTENCY_KEPT_MS, unfinishedMs: IDEMPOTENCY_UNFINISHED_MS };

export async function submitOnce(
  store: Store,
  claim: { appId: string; key: string; fingerprint: string },
  submit: (recordKey: RecordKey, inPair?: PairClaim) => Promise<GradeAttemptJson>,
): Promise<IdempotentAnswer> {
  await sweepNowAndThen(store);
  const recordKey: RecordKey = (tx, recorded) => tx.scoreIdempotency.complete(claim.appId, claim.key, recorded.id);
  if (store.pipelined) {
    // PostgreSQL: claimed in the score's own transaction, after its lock and facts (PERF-173); a key held
    // stops it before anything is published, and a refusal or failure rolls the claim back with it.
    const inPair: PairClaim = {
      statements: (clock) => [claimStatement(clock, claim.appId, claim.key, claim.fingerprint, STALE)],
      settle: async ([claimed], pair) => {
        if ((claimed?.rowCount ?? 0) > 0) return;
        const [held] = await pair.run([heldStatement(claim.appId, claim.key)]);
        const row = held?.rows[0] as IdempotencyRow | undefined;
        throw new KeyHeld(row ? toIdempotencyRecord(row) : null);
      },
    };
    try {
      return { attempt: await submit(recordKey, inPair), replayed: false };
    } catch (err) {
      if (!(err instanceof KeyHeld)) throw err;
      return answerHeld(store, claim, err.held ?? { appId: claim.appId, key: claim.key, fingerprint: claim.fingerprint, attemptId: null, createdAt: 0 });
    }
  }
  const claimed = await store.scoreIdempotency.claim(claim.appId, claim.key, claim.fingerprint, STALE);
  if (claimed.claimed) {
    let attempt: GradeAttemptJson;
    try {
      // The key names the attempt from the attempt's own commit on (one transaction, PERF-40).
      attempt = await submit(recordKey);
    } catch (err) {
      // Refused before anything was published: the key was not used.
      await store.scoreIdempotency.release(claim.appId, claim.key);
      throw err;
    }
    return { attempt, replayed: false };
  }
  return answerHeld(store, claim, claimed.held);
}

/** A key another request holds: the same request is answered its first attempt, another one refused. */
async function answerHeld(store: Store, claim: { key: string; fingerprint: string }, held: IdempotencyRecord): Promise<IdempotentAnswer> {
  if (held.fingerprint !== claim.fingerprint) {
    throw new Problem(422, 'idempotency_key_reused', IDEMPOTENCY_MESSAGES.reused(claim.key));
  }
  const first = held.attemptId === null ? null : await store.attempts.get(held.attemptId);
  if (!first) {
    throw new Problem(409, 'idempotency_key_in_progress', IDEMPOTENCY_MESSAGES.inProgress(claim.key), {
      headers: { 'Retry-After': '1' },
    });
  }
  return { attempt: attemptJson(first), replayed: true };
}
