import { newId } from '../ids.js';
import { lockName } from '../pg-locks.js';
import type { JsonObject, RepoContext } from './common.js';
import { parseJson } from './common.js';

/**
 * Keys that sign launch, provision and locations tokens, shared by every instance through the
 * database. A key is published from its creation, signs from `signFrom` (set ahead of creation so
 * tools refresh their JWKS cache before meeting it, decision NS-13), stops signing at `retiredAt`, and
 * stays published until `publishUntil`, when every token it signed has expired.
 *
 * The private JWK is stored as is: protecting the database file (or the PostgreSQL role) protects it.
 */
export interface SigningKeyRecord {
  kid: string;
  alg: string;
  privateJwk: JsonObject;
  publicJwk: JsonObject;
  createdAt: number;
  signFrom: number;
  retiredAt: number | null;
  publishUntil: number | null;
}

export interface NewSigningKey {
  /** Defaults to a fresh `key_...` ID. */
  kid?: string;
  alg?: string;
  privateJwk: JsonObject;
  publicJwk: JsonObject;
}

interface KeyRow {
  kid: string;
  alg: string;
  private_jwk: string;
  public_jwk: string;
  created_at: number;
  sign_from: number;
  retired_at: number | null;
  publish_until: number | null;
}

const COLUMNS = 'kid, alg, private_jwk, public_jwk, created_at, sign_from, retired_at, publish_until';

function toKey(row: KeyRow): SigningKeyRecord {
  return {
    kid: row.kid,
    alg: row.alg,
    privateJwk: parseJson<JsonObject>(row.private_jwk, {}),
    publicJwk: parseJson<JsonObject>(row.public_jwk, {}),
    createdAt: row.created_at,
    signFrom: row.sign_from,
    retiredAt: row.retired_at,
    publishUntil: row.publish_until,
  };
}

export class SigningKeysRepo {
  constructor(private readonly ctx: RepoContext) {}

  async insert(key: NewSigningKey & { signFrom: number }): Promise<SigningKeyRecord> {
    const kid = key.kid ?? newId('key');
    await this.ctx.db.run(
      `INSERT INTO signing_keys (kid, alg, private_jwk, public_jwk, created_at, sign_from) VALUES (?, ?, ?, ?, ?, ?)`,
      [kid, key.alg ?? 'RS256', JSON.stringify(key.privateJwk), JSON.stringify(key.publicJwk), this.ctx.clock.nowMs(), key.signFrom],
    );
    const record = await this.get(kid);
    if (!record) throw new Error('signing key vanished after insert');
    return record;
  }

  async get(kid: string): Promise<SigningKeyRecord | null> {
    const row = await this.ctx.db.get<KeyRow>(`SELECT ${COLUMNS} FROM signing_keys WHERE kid = ?`, [kid]);
    return row ? toKey(row) : null;
  }

  /** Keys for the JWKS: every key not past its `publishUntil`, in signing order. */
  async listPublished(): Promise<SigningKeyRecord[]> {
    const rows = await this.ctx.db.all<KeyRow>(
      `SELECT ${COLUMNS} FROM signing_keys WHERE publish_until IS NULL OR publish_until > ? ORDER BY sign_from, created_at, kid`,
      [this.ctx.clock.nowMs()],
    );
    return rows.map(toKey);
  }

  /** The key that signs now: the newest whose `signFrom` has come and that is not retired. */
  async currentSigner(): Promise<SigningKeyRecord | null> {
    const now = this.ctx.clock.nowMs();
    const row = await this.ctx.db.get<KeyRow>(
      `SELECT ${COLUMNS} FROM signing_keys WHERE sign_from <= ? AND (retired_at IS NULL OR retired_at > ?)
       ORDER BY sign_from DESC, created_at DESC, kid DESC LIMIT 1`,
      [now, now],
    );
    return row ? toKey(row) : null;
  }

  /**
   * The current signer, or `candidate` stored as one that signs at once when there is none (a fresh
   * installation: nobody can have cached an older JWKS). Instances starting together agree on one key.
   */
  async ensureSigner(candidate: NewSigningKey): Promise<SigningKeyRecord> {
    return this.ctx.db.transaction(async (tx) => {
      // No row to lock while there is no key: on PostgreSQL, instances starting together would each add one.
      await lockName(tx, 'signing_keys');
      const repo = new SigningKeysRepo({ db: tx, clock: this.ctx.clock });
      const current = await repo.currentSigner();
      if (current) return current;
      return repo.insert({ ...candidate, signFrom: this.ctx.clock.nowMs() });
    });
  }

  /**
   * Stores `next` to sign from `signFrom` and retires every other unretired key at that moment, kept
   * published until `publishOldUntil`.
   */
  async rotate(next: NewSigningKey, options: { signFrom: number; publishOldUntil: number }): Promise<SigningKeyRecord> {
    if (options.publishOldUntil < options.signFrom) {
      throw new RangeError('an old key must stay published at least until the new one starts signing');
    }
    return this.ctx.db.transaction(async (tx) => {
      // Two rotations at once on PostgreSQL would each miss the other's new key and leave both unretired.
      await lockName(tx, 'signing_keys');
      const repo = new SigningKeysRepo({ db: tx, clock: this.ctx.clock });
      const record = await repo.insert({ ...next, signFrom: options.signFrom });
      await tx.run(
        'UPDATE signing_keys SET retired_at = ?, publish_until = ? WHERE kid <> ? AND retired_at IS NULL',
        [options.signFrom, options.publishOldUntil, record.kid],
      );
      return record;
    });
  }

  /** Deletes keys no longer published. */
  async purgeUnpublished(): Promise<number> {
    const result = await this.ctx.db.run('DELETE FROM signing_keys WHERE publish_until IS NOT NULL AND publish_until <= ?', [
      this.ctx.clock.nowMs(),
    ]);
    return result.changes;
  }
}
