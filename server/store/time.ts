/** Wall clock of the store, injectable so tests can move time (expiry, retries) without sleeping. */
export interface Clock {
  /** Milliseconds since the epoch. */
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };

export function nowUs(clock: Clock): number {
  return Math.floor(clock.nowMs() * 1000);
}

/** ISO 8601 with six fractional digits, e.g. `2026-09-21T10:00:00.123456Z`. */
export function isoFromUs(us: number): string {
  const ms = Math.floor(us / 1000);
  const micros = us - ms * 1000;
  const iso = new Date(ms).toISOString(); // ...ss.mmmZ
  return `${iso.slice(0, -1)}${String(micros).padStart(3, '0')}Z`;
}

export function isoFromMs(ms: number): string {
  return new Date(ms).toISOString();
}
