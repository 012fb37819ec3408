/**
 * The reference LMS's own store (decision LTI-30): one SQLite database through better-sqlite3, a file when
 * the LMS must outlive a restart (`LMS_DB_FILE`, the Sandbox's `DATA_DIR/lms.sqlite`) or in memory for a
 * test. It shares nothing with the service's store: the platform and the tool only meet over HTTP.
 *
 * better-sqlite3 is synchronous; each LMS request is a handful of statements, so the LMS calls it directly.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS platform_keys (
  kid TEXT PRIMARY KEY,
  private_jwk TEXT NOT NULL,
  public_jwk TEXT NOT NULL,
  created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS settings (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS registration_tokens (
  token TEXT PRIMARY KEY,
  expires INTEGER NOT NULL,
  client_id TEXT
);
CREATE TABLE IF NOT EXISTS registrations (
  client_id TEXT PRIMARY KEY,
  client_name TEXT NOT NULL,
  initiate_login_uri TEXT NOT NULL,
  redirect_uris TEXT NOT NULL,
  jwks_uri TEXT NOT NULL,
  target_link_uri TEXT NOT NULL,
  domain TEXT NOT NULL,
  scopes TEXT NOT NULL,
  grants_line_item_scope INTEGER NOT NULL DEFAULT 1,
  custom_parameters TEXT NOT NULL,
  messages TEXT NOT NULL,
  claims TEXT NOT NULL,
  document TEXT NOT NULL,
  created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS deployments (
  deployment_id TEXT PRIMARY KEY,
  client_id TEXT NOT NULL REFERENCES registrations(client_id),
  title TEXT NOT NULL,
  created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS users (
  sub TEXT PRIMARY KEY,
  given_name TEXT NOT NULL,
  family_name TEXT NOT NULL,
  email TEXT NOT NULL,
  created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS courses (
  id TEXT PRIMARY KEY,
  deployment_id TEXT NOT NULL REFERENCES deployments(deployment_id),
  title TEXT NOT NULL,
  label TEXT NOT NULL,
  history TEXT NOT NULL,
  created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS enrolments (
  course_id TEXT NOT NULL REFERENCES courses(id),
  sub TEXT NOT NULL REFERENCES users(sub),
  roles TEXT NOT NULL,
  PRIMARY KEY (course_id, sub)
);
CREATE TABLE IF NOT EXISTS resource_links (
  id TEXT PRIMARY KEY,
  course_id TEXT NOT NULL REFERENCES courses(id),
  title TEXT NOT NULL,
  url TEXT,
  custom TEXT NOT NULL,
  created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS line_items (
  id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL,
  course_id TEXT NOT NULL REFERENCES courses(id),
  label TEXT NOT NULL,
  score_maximum REAL NOT NULL,
  resource_id TEXT,
  resource_link_id TEXT,
  tag TEXT,
  start_date_time TEXT,
  end_date_time TEXT,
  refuses_scores_with INTEGER,
  created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS scores (
  line_item_id TEXT NOT NULL REFERENCES line_items(id),
  sub TEXT NOT NULL,
  score_given REAL,
  score_maximum REAL,
  comment TEXT,
  activity_progress TEXT NOT NULL,
  grading_progress TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  timestamp_us INTEGER NOT NULL,
  received INTEGER NOT NULL,
  PRIMARY KEY (line_item_id, sub)
);
CREATE TABLE IF NOT EXISTS messages (
  hint TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  client_id TEXT NOT NULL,
  deployment_id TEXT NOT NULL,
  course_id TEXT NOT NULL,
  resource_link_id TEXT,
  sub TEXT NOT NULL,
  target_link_uri TEXT NOT NULL,
  storage_target TEXT,
  return_url TEXT,
  data TEXT,
  expires INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS deep_link_requests (
  data TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  deployment_id TEXT NOT NULL,
  course_id TEXT NOT NULL,
  expires INTEGER NOT NULL,
  answered INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS access_tokens (
  token_hash TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  scopes TEXT NOT NULL,
  expires INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS used_assertions (
  client_id TEXT NOT NULL,
  jti TEXT NOT NULL,
  expires INTEGER NOT NULL,
  PRIMARY KEY (client_id, jti)
);
CREATE TABLE IF NOT EXISTS counters (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
`;

export type LmsDatabase = Database.Database;

/** Opens (and creates) the LMS database: `:memory:` or a file whose directory is made if missing. */
export function openLmsDatabase(file: string): LmsDatabase {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  if (file !== ':memory:') db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  db.exec(SCHEMA);
  return db;
}

/** The next value of a named counter: small integers where a profile wants them (Moodle's IDs). */
export function nextCounter(db: LmsDatabase, name: string): number {
  const row = db
    .prepare('INSERT INTO counters (name, value) VALUES (?, 1) ON CONFLICT(name) DO UPDATE SET value = value + 1 RETURNING value')
    .get(name) as { value: number };
  return row.value;
}

export function getSetting(db: LmsDatabase, name: string): string | null {
  const row = db.prepare('SELECT value FROM settings WHERE name = ?').get(name) as { value: string } | undefined;
  return row?.value ?? null;
}

export function putSetting(db: LmsDatabase, name: string, value: string): void {
  db.prepare('INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value').run(name, value);
}

export interface RegistrationRow {
  client_id: string;
  client_name: string;
  initiate_login_uri: string;
  redirect_uris: string;
  jwks_uri: string;
  target_link_uri: string;
  domain: string;
  scopes: string;
  grants_line_item_scope: number;
  custom_parameters: string;
  messages: string;
  claims: string;
  document: string;
  created: number;
}

export interface DeploymentRow {
  deployment_id: string;
  client_id: string;
  title: string;
  created: number;
}

export interface UserRow {
  sub: string;
  given_name: string;
  family_name: string;
  email: string;
  created: number;
}

export interface CourseRow {
  id: string;
  deployment_id: string;
  title: string;
  label: string;
  history: string;
  created: number;
}

export interface ResourceLinkRow {
  id: string;
  course_id: string;
  title: string;
  url: string | null;
  custom: string;
  created: number;
}

export interface LineItemRow {
  id: string;
  seq: number;
  course_id: string;
  label: string;
  score_maximum: number;
  resource_id: string | null;
  resource_link_id: string | null;
  tag: string | null;
  start_date_time: string | null;
  end_date_time: string | null;
  refuses_scores_with: number | null;
  created: number;
}

export interface ScoreRow {
  line_item_id: string;
  sub: string;
  score_given: number | null;
  score_maximum: number | null;
  comment: string | null;
  activity_progress: string;
  grading_progress: string;
  timestamp: string;
  timestamp_us: number;
  received: number;
}

export interface MessageRow {
  hint: string;
  kind: 'LtiResourceLinkRequest' | 'LtiDeepLinkingRequest';
  client_id: string;
  deployment_id: string;
  course_id: string;
  resource_link_id: string | null;
  sub: string;
  target_link_uri: string;
  storage_target: string | null;
  return_url: string | null;
  data: string | null;
  expires: number;
}

export function registrationOf(db: LmsDatabase, clientId: string): RegistrationRow | null {
  return (db.prepare('SELECT * FROM registrations WHERE client_id = ?').get(clientId) as RegistrationRow | undefined) ?? null;
}

export function deploymentOf(db: LmsDatabase, deploymentId: string): DeploymentRow | null {
  return (db.prepare('SELECT * FROM deployments WHERE deployment_id = ?').get(deploymentId) as DeploymentRow | undefined) ?? null;
}

export function userOf(db: LmsDatabase, sub: string): UserRow | null {
  return (db.prepare('SELECT * FROM users WHERE sub = ?').get(sub) as UserRow | undefined) ?? null;
}

export function courseOf(db: LmsDatabase, id: string): CourseRow | null {
  return (db.prepare('SELECT * FROM courses WHERE id = ?').get(id) as CourseRow | undefined) ?? null;
}

export function resourceLinkOf(db: LmsDatabase, id: string): ResourceLinkRow | null {
  return (db.prepare('SELECT * FROM resource_links WHERE id = ?').get(id) as ResourceLinkRow | undefined) ?? null;
}

export function lineItemOf(db: LmsDatabase, id: string): LineItemRow | null {
  return (db.prepare('SELECT * FROM line_items WHERE id = ?').get(id) as LineItemRow | undefined) ?? null;
}

export function enrolmentRoles(db: LmsDatabase, courseId: string, sub: string): string[] | null {
  const row = db.prepare('SELECT roles FROM enrolments WHERE course_id = ? AND sub = ?').get(courseId, sub) as { roles: string } | undefined;
  return row ? (JSON.parse(row.roles) as string[]) : null;
}
