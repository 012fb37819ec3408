/**
 * The two dashboard credentials (decision S-07): the platform team's token and a builder's `tisb_` token.
 * The platform token is the operator's: `PLATFORM_TOKEN`, or one generated at first start into
 * `DATA_DIR/platform-token` (mode 0600) and reused afterwards, so a fresh install has a credential without
 * printing a secret to a log. Only its SHA-256 digest is kept in memory for comparisons.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../http/log.js';
import { Problem } from '../http/problem.js';
import type { BuilderRecord, Store } from '../store/index.js';
import { BUILDER_TOKEN_PREFIX, digestsEqual, OPERATOR_TOKEN_PREFIX, sha256Hex } from '../store/ids.js';
import { bearerCredential } from '../auth/credentials.js';

export const PLATFORM_TOKEN_PREFIX = 'tisp_';
export const PLATFORM_TOKEN_FILE = 'platform-token';

/**
 * Who is calling. The platform team is either a named operator (a builder record of the `platform` role,
 * decision OPS-02) or, with `operator: null`, the bootstrap token of `PLATFORM_TOKEN` / `DATA_DIR/platform-token`.
 */
export type DashboardPrincipal = { kind: 'platform'; operator: BuilderRecord | null } | { kind: 'builder'; builder: BuilderRecord };

/** The platform team's credential, as this process checks it. */
export class PlatformCredential {
  private readonly digest: string;

  constructor(
    token: string,
    /** Where the token came from, for the start-up log line (never the token itself). */
    readonly source: 'env' | 'file' | 'generated',
    /** The file that holds a generated token; null when it came from `PLATFORM_TOKEN`. */
    readonly file: string | null,
  ) {
    this.digest = sha256Hex(token);
  }

  matches(presented: string): boolean {
    return digestsEqual(sha256Hex(presented), this.digest);
  }
}

/** Why the platform-token file cannot be used, or null; absent is fine (a token is generated). Checked before a start writes anything (OPS-30). */
export function storedPlatformTokenProblem(file: string): string | null {
  let stored: string;
  try {
    stored = readFileSync(file, 'utf8').trim();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    return `DATA_DIR: ${file} cannot be read (${code ?? String(err)}); fix it, or set PLATFORM_TOKEN`;
  }
  if (stored.length >= 32) return null;
  return `DATA_DIR: ${file} does not hold a platform token; delete it to have a new one generated, or set PLATFORM_TOKEN`;
}

/** `PLATFORM_TOKEN`, else the token in `DATA_DIR/platform-token`, else a new one written there. */
export function loadPlatformCredential(config: Pick<Config, 'platformToken' | 'dataDir'>, log?: Logger): PlatformCredential {
  if (config.platformToken !== null) return new PlatformCredential(config.platformToken, 'env', null);
  const file = join(config.dataDir, PLATFORM_TOKEN_FILE);
  if (existsSync(file)) {
    const problem = storedPlatformTokenProblem(file);
    if (problem !== null) throw new Error(problem);
    log?.info("the platform team's dashboard token is the one in its file", { file });
    return new PlatformCredential(readFileSync(file, 'utf8').trim(), 'file', file);
  }
  mkdirSync(config.dataDir, { recursive: true });
  const token = `${PLATFORM_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  // `wx`: two instances starting on one DATA_DIR must not overwrite each other's fresh token.
  try {
    writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as { code?: string }).code === 'EEXIST') return loadPlatformCredential(config, log);
    throw err;
  }
  chmodSync(file, 0o600);
  log?.warn('generated the platform team\'s dashboard token; read it from the file', { file });
  return new PlatformCredential(token, 'generated', file);
}

function unauthorized(code: string, detail: string): Problem {
  return new Problem(401, code, detail, { headers: { 'WWW-Authenticate': 'Bearer realm="dashboard"' } });
}

/** 401 unless the bearer credential is the platform token or a builder's token. */
export async function authenticateDashboard(
  store: Pick<Store, 'builders'>,
  platform: PlatformCredential,
  authorization: string | string[] | undefined,
): Promise<DashboardPrincipal> {
  const credential = bearerCredential(authorization);
  if (credential === null) throw unauthorized('missing_bearer_token', 'Missing bearer token');
  if (credential.startsWith(BUILDER_TOKEN_PREFIX) || credential.startsWith(OPERATOR_TOKEN_PREFIX)) {
    const builder = await store.builders.verifyToken(credential);
    // A builder record of the `platform` role is a named operator's credential (GAP-01, OPS-02).
    if (builder?.role === 'platform') return { kind: 'platform', operator: builder };
    if (builder) return { kind: 'builder', builder };
    throw unauthorized('invalid_bearer_token', 'Invalid bearer token');
  }
  if (platform.matches(credential)) return { kind: 'platform', operator: null };
  throw unauthorized('invalid_bearer_token', 'Invalid bearer token');
}
