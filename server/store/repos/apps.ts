import { NoApiKeyError } from '../errors.js';
import { apiKeyHint, digestsEqual, newApiKey, newId, parseApiKey, sha256Hex } from '../ids.js';
import type { RepoContext } from './common.js';
import { bool, updateSet } from './common.js';
import { LocationsRepo } from './locations.js';

export type AppStatus = 'draft' | 'active' | 'suspended';
export type Hosting = 'hosted' | 'self_hosted';

export const CURRENT_CONTRACT_VERSION = '2026-09-21';

export interface AppRecord {
  id: string;
  name: string;
  description: string | null;
  logoUrl: string | null;
  callbackUrl: string | null;
  provisionUrl: string | null;
  locationsUrl: string | null;
  status: AppStatus;
  hosting: Hosting;
  /** The contract pinned for this tool (decision NS-18). */
  contractVersion: string;
  /** Archived setting, passed to the gradebook as the score's visibility (decision NS-02). */
  gradesReleased: boolean;
  /** `ltiaas_...` + last four (decision GAP-29); null for hosted tools, which have no key. */
  apiKeyHint: string | null;
  apiKeyCreatedAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface CreateAppInput {
  name: string;
  hosting: Hosting;
  description?: string | null;
  logoUrl?: string | null;
  contractVersion?: string;
  gradesReleased?: boolean;
  /** Registering builder, made the app's owner. */
  builderId?: string;
  /** The archived contracts register a Home location (extid `home`) at creation. Default true. */
  homeLocation?: boolean;
}

export interface AppSettingsPatch {
  name?: string;
  description?: string | null;
  logoUrl?: string | null;
  callbackUrl?: string | null;
  provisionUrl?: string | null;
  locationsUrl?: string | null;
  contractVersion?: string;
  gradesReleased?: boolean;
}

interface AppRow {
  id: string;
  name: string;
  description: string | null;
  logo_url: string | null;
  callback_url: string | null;
  provision_url: string | null;
  locations_url: string | null;
  status: AppStatus;
  hosting: Hosting;
  contract_version: string;
  grades_released: number;
  api_key_hint: string | null;
  api_key_created_at: number | null;
  created_at: number;
  updated_at: number;
}

const APP_FIELDS = [
  'id',
  'name',
  'description',
  'logo_url',
  'callback_url',
  'provision_url',
  'locations_url',
  'status',
  'hosting',
  'contract_version',
  'grades_released',
  'api_key_hint',
  'api_key_created_at',
  'created_at',
  'updated_at',
];
export const APP_COLUMNS = APP_FIELDS.join(', ');

/** Compared against when the key names no app, so an unknown app costs the same as a wrong secret. */
const DUMMY_DIGEST = sha256Hex('ltiaas_no_such_app');

export function toApp(row: AppRow): AppRecord {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    logoUrl: row.logo_url,
    callbackUrl: row.callback_url,
    provisionUrl: row.provision_url,
    locationsUrl: row.locations_url,
    status: row.status,
    hosting: row.hosting,
    contractVersion: row.contract_version,
    gradesReleased: bool(row.grades_released),
    apiKeyHint: row.api_key_hint,
    apiKeyCreatedAt: row.api_key_created_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * Tools (the API's "apps"). API keys are stored only as a SHA-256 digest: a key carries 256 bits of
 * randomness, so a slow password hash would add nothing, and a digest lets verification stay cheap on
 * every score submission.
 */
export class AppsRepo {
  constructor(private readonly ctx: RepoContext) {}

  /** Registers a tool in draft status. `apiKey` is returned only here and is null for hosted tools. */
  async create(input: CreateAppInput): Promise<{ app: AppRecord; apiKey: string | null }> {
    const id = newId('app');
    const now = this.ctx.clock.nowMs();
    const apiKey = input.hosting === 'self_hosted' ? newApiKey(id) : null;
    return this.ctx.db.transaction(async (tx) => {
      await tx.run(
        `INSERT INTO apps (id, name, description, logo_url, status, hosting, contract_version, grades_released,
           api_key_hash, api_key_hint, api_key_created_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, 'draft', ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          id,
          input.name,
          input.description ?? null,
          input.logoUrl ?? null,
          input.hosting,
          input.contractVersion ?? CURRENT_CONTRACT_VERSION,
          input.gradesReleased ?? true,
          apiKey ? sha256Hex(apiKey) : null,
          apiKey ? apiKeyHint(apiKey) : null,
          apiKey ? now : null,
          now,
          now,
        ],
      );
      if (input.builderId !== undefined) {
        await tx.run('INSERT INTO app_builders (app_id, builder_id, role, created_at) VALUES (?, ?, ?, ?)', [
          id,
          input.builderId,
          'owner',
          now,
        ]);
      }
      if (input.homeLocation ?? true) {
        await new LocationsRepo({ db: tx, clock: this.ctx.clock }).createStored(id, {
          extid: 'home',
          type: 'content',
          label: 'Home',
          isDefault: true,
          params: {},
        });
      }
      const app = await new AppsRepo({ db: tx, clock: this.ctx.clock }).get(id);
      if (!app) throw new Error('app vanished inside its own transaction');
      return { app, apiKey };
    });
  }

  async get(id: string): Promise<AppRecord | null> {
    const row = await this.ctx.db.get<AppRow>(`SELECT ${APP_COLUMNS} FROM apps WHERE id = ?`, [id]);
    return row ? toApp(row) : null;
  }

  async list(): Promise<AppRecord[]> {
    const rows = await this.ctx.db.all<AppRow>(`SELECT ${APP_COLUMNS} FROM apps ORDER BY created_at, id`);
    return rows.map(toApp);
  }

  async listForBuilder(builderId: string): Promise<AppRecord[]> {
    const rows = await this.ctx.db.all<AppRow>(
      `SELECT ${APP_FIELDS.map((f) => `a.${f}`).join(', ')} FROM apps a
       JOIN app_builders ab ON ab.app_id = a.id
       WHERE ab.builder_id = ? ORDER BY a.created_at, a.id`,
      [builderId],
    );
    return rows.map(toApp);
  }

  /** Changes settings; status and hosting are not settings (decision GAP-30). Null when no such app. */
  async update(id: string, patch: AppSettingsPatch): Promise<AppRecord | null> {
    const set = updateSet(
      {
        name: patch.name,
        description: patch.description,
        logoUrl: patch.logoUrl,
        callbackUrl: patch.callbackUrl,
        provisionUrl: patch.provisionUrl,
        locationsUrl: patch.locationsUrl,
        contractVersion: patch.contractVersion,
        gradesReleased: patch.gradesReleased,
      },
      {
        name: 'name',
        description: 'description',
        logoUrl: 'logo_url',
        callbackUrl: 'callback_url',
        provisionUrl: 'provision_url',
        locationsUrl: 'locations_url',
        contractVersion: 'contract_version',
        gradesReleased: 'grades_released',
      },
    );
    if (set.sql !== '') {
      await this.ctx.db.run(`UPDATE apps SET ${set.sql}, updated_at = ? WHERE id = ?`, [
        ...set.params,
        this.ctx.clock.nowMs(),
        id,
      ]);
    }
    return this.get(id);
  }

  /**
   * The platform team's activate and suspend (decisions NS-08, GAP-01). Every move between draft, active
   * and suspended that these two actions can make is allowed; nothing moves a tool back to draft.
   */
  async setStatus(id: string, status: 'active' | 'suspended'): Promise<{ app: AppRecord; previous: AppStatus } | null> {
    return this.ctx.db.transaction(async (tx) => {
      const row = await tx.get<{ status: AppStatus }>(`SELECT status FROM apps WHERE id = ?${tx.forUpdate}`, [id]);
      if (!row) return null;
      if (row.status !== status) {
        await tx.run('UPDATE apps SET status = ?, updated_at = ? WHERE id = ?', [status, this.ctx.clock.nowMs(), id]);
      }
      const app = await new AppsRepo({ db: tx, clock: this.ctx.clock }).get(id);
      return app ? { app, previous: row.status } : null;
    });
  }

  /**
   * Issues a new key and makes the old one invalid in the same statement: there is no overlap window.
   * Null when no such app.
   */
  async rotateApiKey(id: string): Promise<{ apiKey: string; apiKeyHint: string; app: AppRecord } | null> {
    return this.ctx.db.transaction(async (tx) => {
      const row = await tx.get<{ hosting: Hosting }>(`SELECT hosting FROM apps WHERE id = ?${tx.forUpdate}`, [id]);
      if (!row) return null;
      if (row.hosting === 'hosted') throw new NoApiKeyError(id);
      const apiKey = newApiKey(id);
      const hint = apiKeyHint(apiKey);
      const now = this.ctx.clock.nowMs();
      await tx.run(
        'UPDATE apps SET api_key_hash = ?, api_key_hint = ?, api_key_created_at = ?, updated_at = ? WHERE id = ?',
        [sha256Hex(apiKey), hint, now, now, id],
      );
      const app = await new AppsRepo({ db: tx, clock: this.ctx.clock }).get(id);
      if (!app) throw new Error('app vanished inside its own transaction');
      return { apiKey, apiKeyHint: hint, app };
    });
  }

  /**
   * The tool a key belongs to, or null for a malformed, unknown or rotated key (all three answer
   * `Invalid API key`, decision NS-21). The status is not checked here: a suspended tool's key is
   * still its key, and the caller answers `tool X is suspended`.
   */
  async verifyApiKey(key: string): Promise<AppRecord | null> {
    const parsed = parseApiKey(key);
    const presented = sha256Hex(key);
    const row = parsed
      ? await this.ctx.db.get<AppRow & { api_key_hash: string | null }>(
          `SELECT ${APP_COLUMNS}, api_key_hash FROM apps WHERE id = ?`,
          [parsed.appId],
        )
      : undefined;
    const stored = row?.api_key_hash ?? DUMMY_DIGEST;
    const matches = digestsEqual(presented, stored);
    return row && row.api_key_hash !== null && matches ? toApp(row) : null;
  }
}
