/**
 * What every part of the reference LMS shares: its store, keys, profile, issuer and clock, its settings
 * (token lifetimes, the one control that is global), and the URLs it publishes.
 */
import type { PlatformKeys } from './keys.js';
import type { LmsProfile } from './profiles.js';
import type { LmsDb } from './store.js';
import { getSetting, putSetting } from './store.js';

export interface LmsClock {
  nowMs(): number;
}

/** How the LMS calls tools (their JWKS): `fetch`, or a test's, so nothing leaves loopback. */
export type LmsFetch = (url: string, init?: RequestInit) => Promise<Response>;

export interface Platform {
  /** The store, or inside a transaction that transaction (a copy of the platform with `db` replaced). */
  readonly db: LmsDb;
  readonly keys: PlatformKeys;
  readonly profile: LmsProfile;
  /** The LMS's URL, no trailing slash: its `iss`, and the prefix of every URL it publishes. */
  readonly issuer: string;
  readonly clock: LmsClock;
  readonly fetch: LmsFetch;
  readonly controlToken: string;
}

export interface LmsSettings {
  /** Lifetime of an AGS access token. */
  access_token_ttl_seconds: number;
  /** Lifetime of an id_token (and of the Deep Linking request it opens). */
  id_token_ttl_seconds: number;
  /** How long a launch URL (and its login hint) may wait before the browser opens it. */
  launch_ttl_seconds: number;
  /**
   * Whether launches offer platform storage (`lti_storage_target`): the launch opens the tool in a frame
   * of an LMS page that answers `lti.put_data` and `lti.get_data`, for browsers that block the tool's cookies.
   */
  platform_storage: boolean;
}

export const DEFAULT_SETTINGS: Readonly<LmsSettings> = {
  access_token_ttl_seconds: 3600,
  id_token_ttl_seconds: 300,
  launch_ttl_seconds: 300,
  platform_storage: false,
};

/** Read at each use, never cached: another process sharing the store may have changed them. */
export async function settingsOf(platform: Pick<Platform, 'db'>): Promise<LmsSettings> {
  return settingsFrom(await getSetting(platform.db, 'lifetimes'));
}

/** The settings from their stored JSON (`lms_settings` row `lifetimes`), or the defaults without one. */
export function settingsFrom(raw: string | null): LmsSettings {
  return raw ? { ...DEFAULT_SETTINGS, ...(JSON.parse(raw) as Partial<LmsSettings>) } : { ...DEFAULT_SETTINGS };
}

export async function putSettings(platform: Pick<Platform, 'db'>, settings: LmsSettings): Promise<void> {
  await putSetting(platform.db, 'lifetimes', JSON.stringify(settings));
}

export const LTI_CLAIM = 'https://purl.imsglobal.org/spec/lti/claim/';
export const AGS_CLAIM = 'https://purl.imsglobal.org/spec/lti-ags/claim/endpoint';
export const DL_CLAIM = 'https://purl.imsglobal.org/spec/lti-dl/claim/';
export const TOOL_CONFIGURATION = 'https://purl.imsglobal.org/spec/lti-tool-configuration';
export const PLATFORM_CONFIGURATION = 'https://purl.imsglobal.org/spec/lti-platform-configuration';

export const AGS_SCOPES = {
  lineItem: 'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem',
  lineItemReadonly: 'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly',
  resultReadonly: 'https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly',
  score: 'https://purl.imsglobal.org/spec/lti-ags/scope/score',
} as const;
export const ALL_AGS_SCOPES: readonly string[] = Object.values(AGS_SCOPES);
/** What a registration "without the line-item scope" withholds (decision S-23): everything but scores. */
export const LINE_ITEM_SCOPES: readonly string[] = [AGS_SCOPES.lineItem, AGS_SCOPES.lineItemReadonly, AGS_SCOPES.resultReadonly];

export const AGS_MEDIA_TYPES = {
  lineItem: 'application/vnd.ims.lis.v2.lineitem+json',
  lineItemContainer: 'application/vnd.ims.lis.v2.lineitemcontainer+json',
  score: 'application/vnd.ims.lis.v1.score+json',
  resultContainer: 'application/vnd.ims.lis.v2.resultcontainer+json',
} as const;

export const LIS_ROLES = {
  instructor: 'http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor',
  student: 'http://purl.imsglobal.org/vocab/lis/v2/membership#Learner',
  assistant: 'http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant',
  mentor: 'http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor',
  content_developer: 'http://purl.imsglobal.org/vocab/lis/v2/membership#ContentDeveloper',
  manager: 'http://purl.imsglobal.org/vocab/lis/v2/membership#Manager',
  administrator: 'http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator',
} as const;

export const PATHS = {
  openidConfiguration: '/.well-known/openid-configuration',
  jwks: '/jwks',
  registration: '/register',
  authorization: '/auth',
  token: '/token',
  deepLinkingReturn: '/deep-linking/return',
  launch: '/launch/',
  platformStorage: '/platform-storage',
  registrationPage: '/admin/register',
} as const;

export function urlOf(platform: Pick<Platform, 'issuer'>, path: string): string {
  return `${platform.issuer}${path}`;
}

/** The AGS scopes a registration asked for (and the LMS knows). */
export function askedScopes(registration: { scopes: string }): string[] {
  return (JSON.parse(registration.scopes) as string[]).filter((s) => ALL_AGS_SCOPES.includes(s));
}

/** The scopes a registration holds now: what it asked for, less the line-item scopes it is denied. */
export function grantedScopes(registration: { scopes: string; grants_line_item_scope: number }): string[] {
  return askedScopes(registration).filter((s) => registration.grants_line_item_scope === 1 || !LINE_ITEM_SCOPES.includes(s));
}
