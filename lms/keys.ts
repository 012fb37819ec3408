/**
 * The platform's signing keys: RSA 2048, RS256, made on first start and kept in the LMS's store, published
 * at its JWKS with a `kid` each. Rotation makes a new key and keeps the old one published, so id_tokens
 * already handed out still verify (decision LTI-31). Nothing about them is kept in process memory but
 * imported keys by `kid` (a key's row never changes): every process sharing the store signs with the
 * newest stored key and publishes every stored one (decision LTI-80).
 */
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, SignJWT } from 'jose';
import type { JWK, JWTPayload } from 'jose';
import type { LmsDb } from './store.js';

interface KeyRow {
  kid: string;
  private_jwk: string;
  public_jwk: string;
  created: number;
}

type SigningKey = Awaited<ReturnType<typeof importJWK>>;

export class PlatformKeys {
  readonly #imported = new Map<string, Promise<SigningKey>>();

  constructor(private readonly db: LmsDb) {}

  /**
   * Makes the first key when the store has none. Processes starting at once on one store make one: each
   * claims the `first_key` setting in the transaction that stores its key, and the one that finds it
   * claimed (after waiting for the other's commit on PostgreSQL) stores nothing.
   */
  async init(nowMs: number): Promise<void> {
    if (await this.db.get('SELECT kid FROM lms_platform_keys LIMIT 1')) return;
    const made = await this.#make(nowMs);
    await this.db.transaction(async (tx) => {
      const claimed = await tx.run("INSERT INTO lms_settings (name, value) VALUES ('first_key', ?) ON CONFLICT (name) DO NOTHING", [made.kid]);
      if (claimed.changes === 1) await this.#insert(tx, made);
    });
  }

  async rotate(nowMs: number): Promise<string> {
    const made = await this.#make(nowMs);
    await this.#insert(this.db, made);
    return made.kid;
  }

  async #make(nowMs: number): Promise<KeyRow> {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
    const kid = `lms-${nowMs.toString(36)}-${randomBytes(6).toString('base64url')}`;
    const pub: JWK = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
    const priv: JWK = { ...(await exportJWK(privateKey)), kid, alg: 'RS256' };
    return { kid, private_jwk: JSON.stringify(priv), public_jwk: JSON.stringify(pub), created: nowMs };
  }

  async #insert(db: LmsDb, row: KeyRow): Promise<void> {
    await db.run('INSERT INTO lms_platform_keys (kid, private_jwk, public_jwk, created) VALUES (?, ?, ?, ?)', [row.kid, row.private_jwk, row.public_jwk, row.created]);
  }

  async jwks(): Promise<{ keys: JWK[] }> {
    const rows = await this.db.all<Pick<KeyRow, 'public_jwk'>>('SELECT public_jwk FROM lms_platform_keys ORDER BY created DESC, kid');
    return { keys: rows.map((r) => JSON.parse(r.public_jwk) as JWK) };
  }

  /** Signs with the newest stored key, `kid` and `typ: JWT` in the header. */
  async sign(payload: JWTPayload): Promise<string> {
    const row = await this.db.get<KeyRow>('SELECT * FROM lms_platform_keys ORDER BY created DESC, kid LIMIT 1');
    if (!row) throw new Error('the LMS has no signing key');
    let key = this.#imported.get(row.kid);
    if (!key) {
      key = importJWK(JSON.parse(row.private_jwk) as JWK, 'RS256');
      this.#imported.set(row.kid, key);
    }
    return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: row.kid, typ: 'JWT' }).sign(await key);
  }
}
