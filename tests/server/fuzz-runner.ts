/**
 * Sends many hostile requests to a real server, a few at a time, and lists every answer that breaks the
 * rule "nothing the caller sends produces a 500": a 5xx, an error without the problem envelope, or no
 * `Request-Id`. Also the fuzz's seeded choices, so a failure names the seed that reproduces it.
 */

export interface Attempt {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  label: string;
  /** The OAuth token endpoint answers its refusals as RFC 6749 does (`{"error": ...}`), not as problems. */
  tokenEndpoint?: boolean;
}

export interface BadAnswer {
  label: string;
  status: number;
  problem: string;
}

/**
 * The run's seed: `TIS_FUZZ_SEED` when given (to replay a failure), else a new one each run, so that runs
 * together pair more garbage with more credentials than one run sends.
 */
export function fuzzSeed(): number {
  const given = process.env['TIS_FUZZ_SEED'];
  if (given !== undefined && given.trim() !== '') {
    const seed = Number(given);
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new Error(`TIS_FUZZ_SEED must be an integer from 0 to 4294967295, got ${given}`);
    return seed;
  }
  return Math.floor(Math.random() * 0x100000000);
}

/**
 * A small seeded generator (mulberry32): `pick` draws from a list. One per test and stream (`stream`), so
 * running one test alone with the same seed draws the same choices.
 */
export function seededPicker(seed: number, stream: number): <T>(list: readonly T[]) => T {
  let state = (seed + Math.imul(stream, 0x9e3779b9)) >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 0x100000000;
  };
  return <T>(list: readonly T[]): T => {
    if (list.length === 0) throw new Error('seededPicker: nothing to pick from');
    return list[Math.floor(next() * list.length)] as T;
  };
}

/** `template` with its `{name}` segments filled from `params` (`x` for a missing one), on `origin`. */
export function urlFor(origin: string, template: string, params: Record<string, string>): string {
  return `${origin}${template.replace(/\{([a-z_]+)\}/g, (_m, name: string) => params[name] ?? 'x')}`;
}

export async function runAttempts(attempts: readonly Attempt[], concurrency: number): Promise<BadAnswer[]> {
  const bad: BadAnswer[] = [];
  let index = 0;
  const worker = async (): Promise<void> => {
    while (index < attempts.length) {
      const a = attempts[index];
      index += 1;
      if (!a) continue;
      let status = 0;
      let problem = '';
      try {
        const res = await fetch(a.url, { method: a.method, headers: a.headers, ...(a.body !== undefined ? { body: a.body as BodyInit } : {}) });
        status = res.status;
        const text = await res.text();
        if (!res.headers.get('request-id')) problem = 'no Request-Id';
        const type = res.headers.get('content-type') ?? '';
        const oauthError = a.tokenEndpoint === true && type.startsWith('application/json') && /"error":"[a-z_]+"/.test(text);
        if (status >= 400 && !type.startsWith('application/problem+json') && !oauthError) problem = `error without a problem body (${type}): ${text.slice(0, 200)}`;
        if (status >= 500) problem = text.slice(0, 300);
      } catch (err) {
        // The server may close the connection after a 413; anything else is a failure.
        const cause = (err as { cause?: { code?: string } }).cause?.code;
        if (cause !== 'UND_ERR_SOCKET' && cause !== 'ECONNRESET' && cause !== 'EPIPE') problem = `request failed: ${String(err)} ${cause ?? ''}`;
      }
      if (status >= 500 || problem) bad.push({ label: a.label, status, problem });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return bad;
}
