import type { RepoContext } from './common.js';

/**
 * Named secrets shared by every instance of the service through the database (e.g. the HMAC key of
 * signed upload forms and download URLs). Each is created once, by whichever instance asks first.
 */
export class SecretsRepo {
  constructor(private readonly ctx: RepoContext) {}

  async get(name: string): Promise<string | null> {
    const row = await this.ctx.db.get<{ value: string }>('SELECT value FROM service_secrets WHERE name = ?', [name]);
    return row?.value ?? null;
  }

  /**
   * The secret called `name`, creating it with `generate()` if none exists yet. Instances racing to
   * create it all get the one that was stored first.
   */
  async getOrCreate(name: string, generate: () => string): Promise<string> {
    const existing = await this.get(name);
    if (existing !== null) return existing;
    await this.ctx.db.run(
      'INSERT INTO service_secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING',
      [name, generate(), this.ctx.clock.nowMs()],
    );
    const stored = await this.get(name);
    if (stored === null) throw new Error(`secret ${name} vanished after insert`);
    return stored;
  }
}
