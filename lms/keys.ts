/**
 * The platform's signing keys: RSA 2048, RS256, made on first start and kept in the LMS's store, published
 * at its JWKS with a `kid` each. Rotation makes a new key and keeps the old one published, so id_tokens
 * already handed out still verify (decision LTI-31).
 */
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, SignJWT } from 'jose';
import type { JWK, JWTPayload } from 'jose';
import type { LmsDatabase } from './store.js';

interface KeyRow {
  kid: string;
  private_jwk: string;
  public_jwk: string;
  created: number;
}

export class PlatformKeys {
  constructor(private readonly db: LmsDatabase) {}

  /** Makes the first key when the store has none. */
  async init(nowMs: number): Promise<void> {
    const any = this.db.prepare('SELECT kid FROM platform_keys LIMIT 1').get();
    if (!any) await this.rotate(nowMs);
  }

  async rotate(nowMs: number): Promise<string> {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
    const kid = `lms-${nowMs.toString(36)}-${randomBytes(6).toString('base64url')}`;
    const pub: JWK = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
    const priv: JWK = { ...(await exportJWK(privateKey)), kid, alg: 'RS256' };
    this.db
      .prepare('INSERT INTO platform_keys (kid, private_jwk, public_jwk, created) VALUES (?, ?, ?, ?)')
      .run(kid, JSON.stringify(priv), JSON.stringify(pub), nowMs);
    return kid;
  }

  jwks(): { keys: JWK[] } {
    const rows = this.db.prepare('SELECT public_jwk FROM platform_keys ORDER BY created DESC, kid').all() as Pick<KeyRow, 'public_jwk'>[];
    return { keys: rows.map((r) => JSON.parse(r.public_jwk) as JWK) };
  }

  /** Signs with the newest key, `kid` and `typ: JWT` in the header. */
  async sign(payload: JWTPayload): Promise<string> {
    const row = this.db.prepare('SELECT * FROM platform_keys ORDER BY created DESC, kid LIMIT 1').get() as KeyRow | undefined;
    if (!row) throw new Error('the LMS has no signing key');
    const key = await importJWK(JSON.parse(row.private_jwk) as JWK, 'RS256');
    return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: row.kid, typ: 'JWT' }).sign(key);
  }
}
