import { createHash } from 'node:crypto';
import type { Dialect, Driver } from './driver.js';
import { MigrationError } from './errors.js';
import type { Clock } from './time.js';

/**
 * A schema change, applied once, in order, in its own transaction. Applied migrations are never edited:
 * a checksum of each applied migration's SQL is kept and a mismatch stops the start, because an edited
 * migration means two databases that claim the same version can differ.
 *
 * Statements use only types both engines read the same way (TEXT, INTEGER, BIGINT, DOUBLE PRECISION);
 * where PostgreSQL must differ, the migration says so in its own `postgres` list. JSON is TEXT in both,
 * never JSONB: a row must come back exactly as written, and JSONB reorders keys (decision GAP-37).
 */
export interface Migration {
  readonly id: string;
  readonly sql: Readonly<Record<Dialect, readonly string[]>>;
}

/** The same statements for both dialects. */
function portable(id: string, statements: readonly string[]): Migration {
  return { id, sql: { sqlite: statements, postgres: statements } };
}

const ROW_KEY_COLUMNS = `
  app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
  context_id TEXT NOT NULL REFERENCES contexts (id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('context', 'location', 'member', 'member_location')),
  location_id TEXT NOT NULL DEFAULT '',
  member_id TEXT NOT NULL DEFAULT ''`;

/** Absent key parts are '' rather than NULL so the row key can be a primary key in both engines. */
const ROW_KEY_CHECKS = `
  CHECK ((location_id = '') = (kind IN ('context', 'member'))),
  CHECK ((member_id = '') = (kind IN ('context', 'location')))`;

export const MIGRATIONS: readonly Migration[] = [
  portable('0001_initial', [
    `CREATE TABLE apps (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL,
      description TEXT,
      logo_url TEXT,
      callback_url TEXT,
      provision_url TEXT,
      locations_url TEXT,
      status TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'active', 'suspended')),
      hosting TEXT NOT NULL CHECK (hosting IN ('hosted', 'self_hosted')),
      contract_version TEXT NOT NULL DEFAULT '2026-09-21',
      grades_released INTEGER NOT NULL DEFAULT 1 CHECK (grades_released IN (0, 1)),
      api_key_hash TEXT,
      api_key_hint TEXT,
      api_key_created_at BIGINT,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL,
      CHECK ((api_key_hash IS NULL) = (api_key_hint IS NULL))
    )`,
    `CREATE TABLE builders (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL,
      email TEXT,
      role TEXT NOT NULL DEFAULT 'builder' CHECK (role IN ('builder', 'platform')),
      token_hash TEXT NOT NULL,
      token_hint TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE UNIQUE INDEX builders_token_hash ON builders (token_hash)`,
    `CREATE UNIQUE INDEX builders_email ON builders (email) WHERE email IS NOT NULL`,
    `CREATE TABLE app_builders (
      app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
      builder_id TEXT NOT NULL REFERENCES builders (id) ON DELETE CASCADE,
      role TEXT NOT NULL DEFAULT 'member' CHECK (role IN ('owner', 'member')),
      created_at BIGINT NOT NULL,
      PRIMARY KEY (app_id, builder_id)
    )`,
    `CREATE INDEX app_builders_builder ON app_builders (builder_id)`,
    `CREATE TABLE organizations (
      id TEXT PRIMARY KEY,
      title TEXT NOT NULL,
      issuer TEXT NOT NULL,
      client TEXT NOT NULL,
      deployment TEXT NOT NULL,
      grants_line_item_scope INTEGER NOT NULL DEFAULT 1 CHECK (grants_line_item_scope IN (0, 1)),
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE UNIQUE INDEX organizations_deployment ON organizations (issuer, client, deployment)`,
    `CREATE TABLE contexts (
      id TEXT PRIMARY KEY,
      organization_id TEXT NOT NULL REFERENCES organizations (id),
      external_id TEXT NOT NULL,
      name TEXT NOT NULL,
      label TEXT,
      parent_context_id TEXT REFERENCES contexts (id),
      sandbox_app_id TEXT REFERENCES apps (id) ON DELETE CASCADE,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE UNIQUE INDEX contexts_external ON contexts (organization_id, external_id)`,
    `CREATE INDEX contexts_sandbox_app ON contexts (sandbox_app_id) WHERE sandbox_app_id IS NOT NULL`,
    `CREATE INDEX contexts_parent ON contexts (parent_context_id) WHERE parent_context_id IS NOT NULL`,
    `CREATE TABLE users (
      id TEXT PRIMARY KEY,
      organization_id TEXT NOT NULL REFERENCES organizations (id),
      external_id TEXT NOT NULL,
      given_name TEXT,
      family_name TEXT,
      full_name TEXT,
      email TEXT,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE UNIQUE INDEX users_external ON users (organization_id, external_id)`,
    `CREATE TABLE members (
      id TEXT PRIMARY KEY,
      context_id TEXT NOT NULL REFERENCES contexts (id) ON DELETE CASCADE,
      user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      group_names TEXT NOT NULL DEFAULT '[]',
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE UNIQUE INDEX members_context_user ON members (context_id, user_id)`,
    `CREATE INDEX members_user ON members (user_id)`,
    `CREATE TABLE locations (
      id TEXT PRIMARY KEY,
      app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
      extid TEXT,
      type TEXT NOT NULL CHECK (type IN ('assessment', 'practice', 'content', 'setup')),
      label TEXT NOT NULL DEFAULT '',
      description TEXT,
      points DOUBLE PRECISION,
      hidden INTEGER NOT NULL DEFAULT 0 CHECK (hidden IN (0, 1)),
      is_stored INTEGER NOT NULL DEFAULT 0 CHECK (is_stored IN (0, 1)),
      is_default INTEGER NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1)),
      sort_order INTEGER,
      params TEXT,
      deleted_at BIGINT,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE UNIQUE INDEX locations_app_extid ON locations (app_id, extid) WHERE extid IS NOT NULL AND deleted_at IS NULL`,
    `CREATE INDEX locations_app ON locations (app_id)`,
    `CREATE TABLE placements (
      id TEXT PRIMARY KEY,
      app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
      context_id TEXT NOT NULL REFERENCES contexts (id) ON DELETE CASCADE,
      location_id TEXT NOT NULL REFERENCES locations (id) ON DELETE CASCADE,
      resource_link TEXT NOT NULL,
      entry TEXT NOT NULL,
      line_item_id TEXT,
      created_at BIGINT NOT NULL
    )`,
    `CREATE UNIQUE INDEX placements_resource_link ON placements (resource_link)`,
    `CREATE INDEX placements_context ON placements (context_id, app_id, location_id)`,
    `CREATE INDEX placements_location ON placements (location_id)`,
    `CREATE TABLE context_provisioning (
      app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
      context_id TEXT NOT NULL REFERENCES contexts (id) ON DELETE CASCADE,
      state TEXT NOT NULL CHECK (state IN ('pending', 'provisioned', 'failed')),
      last_request_at BIGINT,
      last_error TEXT,
      provisioned_at BIGINT,
      updated_at BIGINT NOT NULL,
      PRIMARY KEY (app_id, context_id)
    )`,
    `CREATE TABLE location_provisioning (
      app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
      context_id TEXT NOT NULL REFERENCES contexts (id) ON DELETE CASCADE,
      location_id TEXT NOT NULL REFERENCES locations (id) ON DELETE CASCADE,
      state TEXT NOT NULL CHECK (state IN ('pending', 'provisioned', 'failed')),
      last_request_at BIGINT,
      last_error TEXT,
      provisioned_at BIGINT,
      updated_at BIGINT NOT NULL,
      PRIMARY KEY (app_id, context_id, location_id)
    )`,
    `CREATE TABLE api_tokens (
      token_hash TEXT PRIMARY KEY,
      kind TEXT NOT NULL CHECK (kind IN ('launch', 'provision')),
      app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
      context_id TEXT NOT NULL REFERENCES contexts (id) ON DELETE CASCADE,
      user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
      member_id TEXT REFERENCES members (id) ON DELETE CASCADE,
      location_id TEXT REFERENCES locations (id) ON DELETE CASCADE,
      launch_id TEXT,
      parent_context_id TEXT REFERENCES contexts (id) ON DELETE CASCADE,
      provision_levels TEXT NOT NULL DEFAULT '[]',
      created_at BIGINT NOT NULL,
      expires_at BIGINT NOT NULL,
      revoked_at BIGINT
    )`,
    `CREATE INDEX api_tokens_context ON api_tokens (context_id, app_id)`,
    `CREATE INDEX api_tokens_expires ON api_tokens (expires_at)`,
    `CREATE TABLE launches (
      id TEXT PRIMARY KEY,
      app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
      placement_id TEXT REFERENCES placements (id) ON DELETE CASCADE,
      context_id TEXT NOT NULL REFERENCES contexts (id) ON DELETE CASCADE,
      location_id TEXT NOT NULL REFERENCES locations (id) ON DELETE CASCADE,
      member_id TEXT NOT NULL REFERENCES members (id) ON DELETE CASCADE,
      grade_passback INTEGER NOT NULL DEFAULT 0 CHECK (grade_passback IN (0, 1)),
      trial INTEGER NOT NULL DEFAULT 0 CHECK (trial IN (0, 1)),
      created_at BIGINT NOT NULL
    )`,
    `CREATE INDEX launches_app ON launches (app_id, created_at)`,
    `CREATE TABLE launch_tickets (
      ticket_hash TEXT PRIMARY KEY,
      payload TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      expires_at BIGINT NOT NULL,
      used_at BIGINT
    )`,
    `CREATE INDEX launch_tickets_expires ON launch_tickets (expires_at)`,
    `CREATE TABLE storage_rows (${ROW_KEY_COLUMNS},
      body TEXT NOT NULL,
      size_bytes INTEGER NOT NULL,
      updated_at BIGINT NOT NULL,
      PRIMARY KEY (app_id, context_id, kind, location_id, member_id),${ROW_KEY_CHECKS}
    )`,
    `CREATE TABLE files (${ROW_KEY_COLUMNS},
      file_key TEXT NOT NULL,
      size BIGINT NOT NULL CHECK (size >= 0),
      content_type TEXT NOT NULL,
      filename TEXT NOT NULL,
      attachment INTEGER NOT NULL DEFAULT 0 CHECK (attachment IN (0, 1)),
      blob_id TEXT NOT NULL,
      modified_ms BIGINT NOT NULL,
      PRIMARY KEY (app_id, context_id, kind, location_id, member_id, file_key),${ROW_KEY_CHECKS}
    )`,
    `CREATE UNIQUE INDEX files_blob ON files (blob_id)`,
    `CREATE TABLE upload_reservations (
      id TEXT PRIMARY KEY,${ROW_KEY_COLUMNS},
      file_key TEXT NOT NULL,
      size BIGINT NOT NULL CHECK (size >= 0),
      content_type TEXT NOT NULL,
      filename TEXT NOT NULL,
      attachment INTEGER NOT NULL DEFAULT 0 CHECK (attachment IN (0, 1)),
      blob_id TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('pending', 'completed', 'failed', 'expired')),
      created_at BIGINT NOT NULL,
      expires_at BIGINT NOT NULL,
      finished_at BIGINT,${ROW_KEY_CHECKS}
    )`,
    `CREATE UNIQUE INDEX upload_reservations_blob ON upload_reservations (blob_id)`,
    `CREATE INDEX upload_reservations_row ON upload_reservations (app_id, context_id, kind, location_id, member_id, state)`,
    `CREATE INDEX upload_reservations_pending ON upload_reservations (expires_at) WHERE state = 'pending'`,
    `CREATE TABLE grade_attempts (
      id TEXT PRIMARY KEY,
      app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
      context_id TEXT NOT NULL REFERENCES contexts (id) ON DELETE CASCADE,
      location_id TEXT NOT NULL REFERENCES locations (id) ON DELETE CASCADE,
      member_id TEXT NOT NULL REFERENCES members (id) ON DELETE CASCADE,
      score DOUBLE PRECISION NOT NULL,
      max_score DOUBLE PRECISION,
      comment TEXT NOT NULL DEFAULT '',
      activity_progress TEXT NOT NULL CHECK (activity_progress IN ('Completed', 'Submitted')),
      grading_progress TEXT NOT NULL CHECK (grading_progress IN ('FullyGraded', 'Pending')),
      status TEXT NOT NULL CHECK (status IN ('pending', 'success', 'failed')),
      data TEXT NOT NULL,
      submitted_us BIGINT NOT NULL,
      finished_at BIGINT
    )`,
    // The guarantee "each attempt carries a later timestamp" is computed in the insert transaction; this
    // index turns any race that slips past it into a loud failure instead of two equal timestamps.
    `CREATE UNIQUE INDEX grade_attempts_member_location_submitted ON grade_attempts (member_id, location_id, submitted_us)`,
    `CREATE INDEX grade_attempts_app_history ON grade_attempts (app_id, submitted_us, id)`,
    `CREATE TABLE launch_grades (
      id TEXT PRIMARY KEY,
      app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
      launch_id TEXT NOT NULL REFERENCES launches (id) ON DELETE CASCADE,
      score DOUBLE PRECISION NOT NULL,
      max_score DOUBLE PRECISION,
      comment TEXT NOT NULL DEFAULT '',
      activity_progress TEXT NOT NULL CHECK (activity_progress IN ('Completed', 'Submitted')),
      grading_progress TEXT NOT NULL CHECK (grading_progress IN ('FullyGraded', 'Pending')),
      sync_status TEXT NOT NULL CHECK (sync_status IN ('pending', 'synced', 'failed')),
      sync_error TEXT,
      submitted_us BIGINT NOT NULL,
      synced_us BIGINT,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE UNIQUE INDEX launch_grades_launch ON launch_grades (launch_id)`,
    `CREATE INDEX launch_grades_app ON launch_grades (app_id)`,
    `CREATE TABLE signing_keys (
      kid TEXT PRIMARY KEY,
      alg TEXT NOT NULL DEFAULT 'RS256',
      private_jwk TEXT NOT NULL,
      public_jwk TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      sign_from BIGINT NOT NULL,
      retired_at BIGINT,
      publish_until BIGINT
    )`,
    `CREATE TABLE gradebook_line_items (
      id TEXT PRIMARY KEY,
      context_id TEXT NOT NULL REFERENCES contexts (id) ON DELETE CASCADE,
      label TEXT NOT NULL,
      score_maximum DOUBLE PRECISION NOT NULL CHECK (score_maximum > 0),
      resource_link TEXT,
      placement_id TEXT REFERENCES placements (id) ON DELETE SET NULL,
      tag TEXT,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE INDEX gradebook_line_items_context ON gradebook_line_items (context_id)`,
    `CREATE INDEX gradebook_line_items_placement ON gradebook_line_items (placement_id) WHERE placement_id IS NOT NULL`,
    `CREATE TABLE gradebook_scores (
      line_item_id TEXT NOT NULL REFERENCES gradebook_line_items (id) ON DELETE CASCADE,
      user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      score_given DOUBLE PRECISION,
      score_maximum DOUBLE PRECISION,
      comment TEXT NOT NULL DEFAULT '',
      activity_progress TEXT NOT NULL,
      grading_progress TEXT NOT NULL,
      released INTEGER NOT NULL DEFAULT 1 CHECK (released IN (0, 1)),
      timestamp_us BIGINT NOT NULL,
      updated_at BIGINT NOT NULL,
      PRIMARY KEY (line_item_id, user_id)
    )`,
  ]),
  // Scores and the Sandbox LMS (issue 3, scores helper).
  portable('0002_scores_sandbox_lms', [
    // The last `submitted` handed out per member and location. It is reserved before publication, in
    // its own transaction, so the attempt row is written once with its final outcome and never updated,
    // while the timestamp the LMS received is the one recorded.
    `CREATE TABLE grade_attempt_clock (
      member_id TEXT NOT NULL REFERENCES members (id) ON DELETE CASCADE,
      location_id TEXT NOT NULL REFERENCES locations (id) ON DELETE CASCADE,
      last_us BIGINT NOT NULL,
      PRIMARY KEY (member_id, location_id)
    )`,
    // AGS line item properties the Sandbox LMS keeps as a client sent them.
    `ALTER TABLE gradebook_line_items ADD COLUMN resource_id TEXT`,
    `ALTER TABLE gradebook_line_items ADD COLUMN start_date_time TEXT`,
    `ALTER TABLE gradebook_line_items ADD COLUMN end_date_time TEXT`,
    `CREATE TABLE sandbox_lms_tokens (
      token_hash TEXT PRIMARY KEY,
      organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      scopes TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      expires_at BIGINT NOT NULL
    )`,
    `CREATE INDEX sandbox_lms_tokens_expires ON sandbox_lms_tokens (expires_at)`,
    // Client assertion IDs seen by the token endpoint, kept until the assertion expires (replay refusal).
    `CREATE TABLE sandbox_lms_assertions (
      client TEXT NOT NULL,
      jti TEXT NOT NULL,
      expires_at BIGINT NOT NULL,
      PRIMARY KEY (client, jti)
    )`,
    `CREATE INDEX sandbox_lms_assertions_expires ON sandbox_lms_assertions (expires_at)`,
  ]),
  // Files (issue 3, rows+files helper).
  portable('0003_service_secrets', [
    // Secrets every instance must share (the HMAC key of upload forms and download URLs), created once
    // by whichever instance needs one first. The value is stored as is: protecting the database
    // protects it, as for the signing keys.
    `CREATE TABLE service_secrets (
      name TEXT PRIMARY KEY,
      value TEXT NOT NULL,
      created_at BIGINT NOT NULL
    )`,
  ]),
  // The blob store several instances share (issue 7, `BLOB_STORE=postgres`; server/files/database-blob-store.ts).
  // A blob is a header row and its bytes in chunks; it is readable only once its header says `complete`,
  // so an upload cut short leaves rows nobody can see, which the store's sweep removes. Same tables in
  // both dialects so the migration list stays one list; only the bytes column type differs.
  {
    id: '0004_shared_blobs',
    sql: {
      sqlite: sharedBlobTables('BLOB'),
      postgres: [
        ...sharedBlobTables('BYTEA'),
        // Uploaded files are mostly compressed already (images, PDFs, archives): keep TOAST from trying
        // to compress every chunk again, and let reads fetch slices without decompressing.
        `ALTER TABLE blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL`,
      ],
    },
  },
  // The last picker answer per course (issue 4, server/placements/picker.ts; decision S-09).
  portable('0005_picker_answers', [
    `CREATE TABLE picker_answers (
      app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
      context_id TEXT NOT NULL REFERENCES contexts (id) ON DELETE CASCADE,
      answer TEXT NOT NULL,
      fetched_at BIGINT NOT NULL,
      PRIMARY KEY (app_id, context_id)
    )`,
  ]),
  // The placement a launch ticket opens, as a column, so a Sandbox reset deletes the unused tickets of
  // its placements by an indexed match instead of a LIKE on the payload (server/sandbox/reset.ts). Tickets
  // already issued get theirs from the payload; the JSON functions are each engine's own.
  {
    id: '0006_launch_ticket_placement',
    sql: {
      sqlite: [
        `ALTER TABLE launch_tickets ADD COLUMN placement_id TEXT`,
        `UPDATE launch_tickets SET placement_id = json_extract(payload, '$.placement_id')
         WHERE json_valid(payload) AND json_type(payload, '$.placement_id') = 'text'`,
        `CREATE INDEX launch_tickets_placement ON launch_tickets (placement_id)`,
      ],
      postgres: [
        `ALTER TABLE launch_tickets ADD COLUMN placement_id TEXT`,
        `UPDATE launch_tickets SET placement_id = payload::jsonb ->> 'placement_id'
         WHERE jsonb_typeof(payload::jsonb) = 'object' AND jsonb_typeof(payload::jsonb -> 'placement_id') = 'string'`,
        `CREATE INDEX launch_tickets_placement ON launch_tickets (placement_id)`,
      ],
    },
  },
  // The service as an LTI 1.3 tool toward real LMSes (issue 13; decisions LTI-03, LTI-08, LTI-09, LTI-13,
  // LTI-14, LTI-18): registrations and their deployments, logins in flight, used nonces, the LMS's resource
  // links bound to placements, and Deep Linking requests awaiting the picker's confirmation.
  portable('0010_lti_registrations', [
    `CREATE TABLE lti_registrations (
      id TEXT PRIMARY KEY,
      issuer TEXT NOT NULL,
      client_id TEXT NOT NULL,
      auth_url TEXT NOT NULL,
      token_url TEXT NOT NULL,
      jwks_url TEXT NOT NULL,
      token_audience TEXT,
      title TEXT NOT NULL,
      product_family_code TEXT,
      scopes TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('pending', 'active', 'inactive')),
      method TEXT NOT NULL CHECK (method IN ('dynamic', 'manual')),
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE UNIQUE INDEX lti_registrations_client ON lti_registrations (issuer, client_id)`,
    `CREATE TABLE lti_deployments (
      registration_id TEXT NOT NULL REFERENCES lti_registrations (id) ON DELETE CASCADE,
      deployment_id TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      PRIMARY KEY (registration_id, deployment_id)
    )`,
    `CREATE TABLE lti_logins (
      state TEXT PRIMARY KEY,
      nonce TEXT NOT NULL,
      registration_id TEXT NOT NULL REFERENCES lti_registrations (id) ON DELETE CASCADE,
      storage_target TEXT,
      expires_at BIGINT NOT NULL
    )`,
    `CREATE INDEX lti_logins_expires ON lti_logins (expires_at)`,
    `CREATE TABLE lti_nonces (
      registration_id TEXT NOT NULL REFERENCES lti_registrations (id) ON DELETE CASCADE,
      nonce TEXT NOT NULL,
      expires_at BIGINT NOT NULL,
      PRIMARY KEY (registration_id, nonce)
    )`,
    `CREATE INDEX lti_nonces_expires ON lti_nonces (expires_at)`,
    `CREATE TABLE lti_resource_links (
      organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      resource_link_id TEXT NOT NULL,
      placement_id TEXT NOT NULL REFERENCES placements (id) ON DELETE CASCADE,
      created_at BIGINT NOT NULL,
      PRIMARY KEY (organization_id, resource_link_id)
    )`,
    `CREATE TABLE lti_deep_links (
      id TEXT PRIMARY KEY,
      registration_id TEXT NOT NULL REFERENCES lti_registrations (id) ON DELETE CASCADE,
      organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      context_id TEXT NOT NULL REFERENCES contexts (id) ON DELETE CASCADE,
      member_id TEXT NOT NULL REFERENCES members (id) ON DELETE CASCADE,
      return_url TEXT,
      resource_link_id TEXT,
      data TEXT,
      accept_multiple INTEGER NOT NULL CHECK (accept_multiple IN (0, 1)),
      expires_at BIGINT NOT NULL
    )`,
    `CREATE INDEX lti_deep_links_expires ON lti_deep_links (expires_at)`,
  ]),
  // H-03: the points the service last set on a gradebook column (a `max_score`), so a later score
  // without one is published against them.
  portable('0040_column_points', [
    `CREATE TABLE column_points (
      placement_id TEXT PRIMARY KEY REFERENCES placements (id) ON DELETE CASCADE,
      points DOUBLE PRECISION NOT NULL CHECK (points > 0),
      set_at BIGINT NOT NULL
    )`,
  ]),
  // H-07: `Idempotency-Key` of score submissions, per tool, for 24 hours.
  portable('0041_score_idempotency', [
    `CREATE TABLE score_idempotency (
      app_id TEXT NOT NULL,
      idempotency_key TEXT NOT NULL,
      fingerprint TEXT NOT NULL,
      attempt_id TEXT,
      created_at BIGINT NOT NULL,
      PRIMARY KEY (app_id, idempotency_key)
    )`,
    `CREATE INDEX score_idempotency_created ON score_idempotency (created_at)`,
  ]),
  // H-05: failed authentications per client address and per credential prefix, per fixed window, in the
  // store so that every instance on one PostgreSQL database counts the same failures.
  portable('0042_auth_failures', [
    `CREATE TABLE auth_failures (
      bucket TEXT NOT NULL,
      window_start BIGINT NOT NULL,
      failures INTEGER NOT NULL,
      PRIMARY KEY (bucket, window_start)
    )`,
    `CREATE INDEX auth_failures_window ON auth_failures (window_start)`,
  ]),
  // Named operators of the platform team are builders of the `platform` role; revoking one keeps its row, so
  // the audit log keeps its name (decisions OPS-02, OPS-03). The log is append-only, read newest first.
  portable('0060_operators_audit_log', [
    `ALTER TABLE builders ADD COLUMN revoked_at BIGINT`,
    `CREATE TABLE audit_log (
      id TEXT PRIMARY KEY,
      at BIGINT NOT NULL,
      actor_kind TEXT NOT NULL CHECK (actor_kind IN ('operator', 'platform_token', 'builder')),
      actor_id TEXT,
      actor_name TEXT NOT NULL,
      action TEXT NOT NULL,
      target TEXT,
      app_id TEXT,
      detail TEXT NOT NULL
    )`,
    `CREATE INDEX audit_log_at ON audit_log (at, id)`,
    `CREATE INDEX audit_log_app ON audit_log (app_id, at, id)`,
  ]),
  // The deployment an OIDC login named, so the id_token it is answered with must name the same one (LTI-60).
  portable('0090_lti_login_deployment', [`ALTER TABLE lti_logins ADD COLUMN deployment_id TEXT`]),
  // PERF-20, PERF-21: one row every instance reads once per authenticated request instead of the
  // credential's rows and the throttle's counts. `generation` changes in the same transaction as any
  // change to a tool or an api.token (a rotated key, a suspension, a revoked token), so a process may keep
  // what a credential resolved to for as long as it reads the same generation; `failures_window` is the
  // latest window with a failed authentication anywhere, so a request is judged against the counts only
  // when some instance has counted a failure in the current window. Triggers, so no writer can forget.
  {
    id: '0100_credential_epoch',
    sql: {
      sqlite: [
        `CREATE TABLE credential_epoch (
          id INTEGER PRIMARY KEY CHECK (id = 1),
          generation BIGINT NOT NULL,
          failures_window BIGINT NOT NULL
        )`,
        `INSERT INTO credential_epoch (id, generation, failures_window) VALUES (1, 0, -1)`,
        ...['apps', 'api_tokens'].flatMap((table) =>
          ['UPDATE', 'DELETE'].map(
            (event) => `CREATE TRIGGER ${table}_${event.toLowerCase()}_credential_epoch AFTER ${event} ON ${table}
              BEGIN UPDATE credential_epoch SET generation = generation + 1 WHERE id = 1; END`,
          ),
        ),
        `CREATE TRIGGER auth_failures_insert_credential_epoch AFTER INSERT ON auth_failures
          BEGIN UPDATE credential_epoch SET failures_window = NEW.window_start WHERE id = 1 AND failures_window < NEW.window_start; END`,
      ],
      postgres: [
        `CREATE TABLE credential_epoch (
          id INTEGER PRIMARY KEY CHECK (id = 1),
          generation BIGINT NOT NULL,
          failures_window BIGINT NOT NULL
        )`,
        `INSERT INTO credential_epoch (id, generation, failures_window) VALUES (1, 0, -1)`,
        `CREATE FUNCTION credential_epoch_bump() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN UPDATE credential_epoch SET generation = generation + 1 WHERE id = 1; RETURN NULL; END $$`,
        ...['apps', 'api_tokens'].map(
          (table) => `CREATE TRIGGER ${table}_credential_epoch AFTER UPDATE OR DELETE ON ${table}
            FOR EACH STATEMENT EXECUTE FUNCTION credential_epoch_bump()`,
        ),
        `CREATE FUNCTION credential_epoch_failure() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN UPDATE credential_epoch SET failures_window = NEW.window_start WHERE id = 1 AND failures_window < NEW.window_start; RETURN NULL; END $$`,
        `CREATE TRIGGER auth_failures_credential_epoch AFTER INSERT ON auth_failures
          FOR EACH ROW EXECUTE FUNCTION credential_epoch_failure()`,
      ],
    },
  },
  // LTI-81: a claim on a piece of one-time work several instances could start at once (the registration
  // with the Sandbox LMS): a row per name, inserted by the instance that does it, gone when it is done;
  // `expires_at` lets another take over the claim of an instance that died while holding it.
  portable('0120_sandbox_lms_claims', [
    `CREATE TABLE sandbox_lms_claims (
      name TEXT PRIMARY KEY,
      holder TEXT NOT NULL,
      expires_at BIGINT NOT NULL
    )`,
  ]),
  // H-21: the audit log says from where, as the trusted proxies name the client; older entries say null.
  portable('0131_audit_client_address', [`ALTER TABLE audit_log ADD COLUMN client_address TEXT`]),
  // LTI-120, LTI-122: what the LMS said of a link's gradebook column when an instructor's launch opened
  // the picker (kept with the choice, so the placing launch carries grade.submit); and the claim on a
  // line item the service creates for a link (one per link, whichever instance or launch gets there).
  portable('0134_lti_link_line_items', [
    `ALTER TABLE lti_deep_links ADD COLUMN line_item_url TEXT`,
    `ALTER TABLE lti_deep_links ADD COLUMN line_items_url TEXT`,
    `CREATE TABLE lti_line_item_claims (
      organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      resource_link_id TEXT NOT NULL,
      holder TEXT NOT NULL,
      expires_at BIGINT NOT NULL,
      line_item_url TEXT,
      PRIMARY KEY (organization_id, resource_link_id)
    )`,
  ]),
  // LTI-126: refused logins, launches and Deep Linking messages, per registration ('' for none), kept
  // for diagnosis: the last 200 per registration, none older than 30 days.
  portable('0135_lti_refusals', [
    `CREATE TABLE lti_refusals (
      report_id TEXT PRIMARY KEY,
      registration_id TEXT NOT NULL,
      issuer TEXT,
      client_id TEXT,
      deployment_id TEXT,
      message TEXT NOT NULL,
      code TEXT NOT NULL,
      status INTEGER NOT NULL,
      reason TEXT NOT NULL,
      advice TEXT NOT NULL,
      detail TEXT NOT NULL,
      created_at BIGINT NOT NULL
    )`,
    `CREATE INDEX lti_refusals_registration ON lti_refusals (registration_id, created_at)`,
    `CREATE INDEX lti_refusals_created ON lti_refusals (created_at)`,
  ]),
];

function sharedBlobTables(bytesType: 'BLOB' | 'BYTEA'): string[] {
  return [
    `CREATE TABLE blobs (
      id TEXT PRIMARY KEY,
      size BIGINT NOT NULL CHECK (size >= 0),
      state TEXT NOT NULL CHECK (state IN ('writing', 'complete', 'deleted')),
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE INDEX blobs_state_updated ON blobs (state, updated_at)`,
    `CREATE TABLE blob_chunks (
      blob_id TEXT NOT NULL REFERENCES blobs (id) ON DELETE CASCADE,
      seq INTEGER NOT NULL CHECK (seq >= 0),
      data ${bytesType} NOT NULL,
      PRIMARY KEY (blob_id, seq)
    )`,
  ];
}

const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  id TEXT PRIMARY KEY,
  checksum TEXT NOT NULL,
  applied_at BIGINT NOT NULL
)`;

export function migrationChecksum(migration: Migration, dialect: Dialect): string {
  const hash = createHash('sha256');
  for (const statement of migration.sql[dialect]) hash.update(statement.trim()).update('\n;\n');
  return hash.digest('hex');
}

export interface MigrateResult {
  /** Migrations this call applied, in order; empty when the database was already current. */
  applied: string[];
}

/**
 * Brings the schema up to date. Safe to run from several processes at once: the whole run is one write
 * transaction (each migration a savepoint in it), so exactly one process applies an upgrade, entirely.
 *
 * On PostgreSQL, writers are not serialized as on SQLite and two concurrent `CREATE TABLE`s of one name
 * fail instead of waiting, so a run holds an advisory lock (one per schema) for its whole length, in one
 * transaction: DDL is transactional there, so an upgrade applies entirely or not at all, and a process
 * starting meanwhile waits, then finds the schema current.
 */
export async function migrate(
  db: Driver,
  clock: Clock,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<MigrateResult> {
  for (let i = 1; i < migrations.length; i += 1) {
    const prev = migrations[i - 1];
    const cur = migrations[i];
    if (prev && cur && prev.id >= cur.id) {
      throw new MigrationError(`migration ids must be strictly increasing: ${prev.id} then ${cur.id}`);
    }
  }
  if (db.dialect === 'postgres') {
    return db.transaction(async (tx) => {
      await lockMigrationsPostgres(tx);
      return applyMigrations(tx, clock, migrations);
    });
  }
  // One write transaction for the whole run on SQLite too: a commit now waits for its fsync off the event
  // loop (PERF-03), and between two migrations' transactions another process starting meanwhile would
  // otherwise take the write lock and apply the rest, so one upgrade would be split over processes.
  return db.transaction((tx) => applyMigrations(tx, clock, migrations));
}

/** Advisory lock key space of the migrations ("tis"); the second key is the schema's. */
const MIGRATION_LOCK_CLASS = 0x746973;
/** A migration of a large table may take long; the driver's short lock timeout does not apply here. */
const MIGRATION_LOCK_WAIT_MS = 600_000;

async function lockMigrationsPostgres(tx: Driver): Promise<void> {
  const saved = await tx.get<{ value: string }>("SELECT current_setting('lock_timeout') AS value");
  await tx.run(`SET LOCAL lock_timeout = ${MIGRATION_LOCK_WAIT_MS}`);
  await tx.get(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_CLASS}, hashtext(coalesce(current_schema(), '')))`);
  // The migrations' own DDL waits for table locks no longer than any other statement.
  await tx.get("SELECT set_config('lock_timeout', ?, true)", [saved?.value ?? '0']);
}

async function applyMigrations(db: Driver, clock: Clock, migrations: readonly Migration[]): Promise<MigrateResult> {
  await db.run(MIGRATIONS_TABLE);

  const known = new Set(migrations.map((m) => m.id));
  // One read of what is recorded (PERF-191): the run holds the write lock (SQLite) or the advisory lock
  // (PostgreSQL) throughout, so nothing records a migration between this read and the loop below, and a
  // start on a current schema costs one statement instead of a savepoint and a read per migration.
  const recorded = new Map(
    (await db.all<{ id: string; checksum: string }>('SELECT id, checksum FROM schema_migrations ORDER BY id')).map((r) => [r.id, r.checksum]),
  );
  const unknown = [...recorded.keys()].filter((id) => !known.has(id));
  if (unknown.length > 0) {
    throw new MigrationError(
      `the database has migrations this code does not know (${unknown.join(', ')}); it was migrated by a newer version`,
    );
  }

  const applied: string[] = [];
  for (const migration of migrations) {
    const checksum = migrationChecksum(migration, db.dialect);
    const existing = recorded.get(migration.id);
    if (existing !== undefined) {
      if (existing !== checksum) {
        throw new MigrationError(`migration ${migration.id} was edited after it was applied (checksum differs)`);
      }
      continue;
    }
    await db.transaction(async (tx) => {
      for (const statement of migration.sql[db.dialect]) await tx.run(statement);
      await tx.run('INSERT INTO schema_migrations (id, checksum, applied_at) VALUES (?, ?, ?)', [
        migration.id,
        checksum,
        clock.nowMs(),
      ]);
    });
    applied.push(migration.id);
  }
  return { applied };
}
