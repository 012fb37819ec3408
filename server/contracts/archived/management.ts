/**
 * The archived management API (`/v1/apps/me...`), once for both archived contracts: the app object, its
 * settings and its stored locations, with each version's fields and rules (decisions NS-02, S-14, GAP-40
 * to GAP-42). Version differences are data here (which fields exist, how locations are listed); the
 * typed handlers in each contract's folder call these functions.
 *
 * Every update is checked whole before anything is written, and written in one statement, so a refused
 * request changes nothing.
 */
import type { components as Components0819 } from '../../../generated/2026-08-19/types.js';
import type { components as Components0825 } from '../../../generated/2026-08-25/types.js';
import { Problem } from '../../http/problem.js';
import type { GuardContext } from '../../http/registry.js';
import type { Services } from '../../http/services.js';
import type { EndpointField } from '../../outbound/index.js';
import type { AppRecord, AppSettingsPatch, LocationRecord, LocationType, StoredLocationPatch } from '../../store/index.js';
import { DefaultLocationError, DuplicateExtidError, ExtidPermanentError } from '../../store/index.js';
import { isoFromMs } from '../../store/time.js';
import {
  APP_READ_ONLY,
  ARCHIVED_MESSAGES as M,
  EXTID_PATTERN,
  extraFieldProblem,
  LOCATION_TYPES,
  locationReadOnly,
  unprocessable,
} from './messages.js';
import { storedLocations } from '../../placements/stored-order.js';
import type { ArchivedVersion } from './version.js';
import { callingApp } from './version.js';

export type App0825 = Components0825['schemas']['App'];
export type App0819 = Components0819['schemas']['App'];
export type Location0825 = Components0825['schemas']['LegacyLocation'];
export type Location0819 = Components0819['schemas']['LegacyLocation'];
export type RotatedKey = Components0825['schemas']['RotatedKey'];

/** PostgreSQL's INTEGER, where `order` is kept; a wider value could not be stored (S-38). */
const ORDER_MIN = -2_147_483_648;
const ORDER_MAX = 2_147_483_647;

const APP_FIELDS: Readonly<Record<ArchivedVersion, readonly string[]>> = {
  '2026-08-25': ['name', 'description', 'logo_url', 'callback_url', 'provision_url', 'locations_url', 'grades_released'],
  '2026-08-19': ['name', 'description', 'logo_url', 'callback_url', 'grades_released'],
};
const LOCATION_FIELDS: Readonly<Record<ArchivedVersion, readonly string[]>> = {
  '2026-08-25': ['extid', 'type', 'label'],
  '2026-08-19': ['type', 'label', 'params', 'order'],
};

// --- JSON of each version -------------------------------------------------------------------------

/**
 * A location as 2026-08-25 shows it. A location stored through 2026-08-19 has no extid; its ID stands in,
 * as in the launches of such a location (it matches the extid pattern and never changes).
 */
export function location0825(location: LocationRecord): Location0825 {
  return { id: location.id, extid: location.extid ?? location.id, type: location.type, label: location.label };
}

export function location0819(location: LocationRecord): Location0819 {
  return {
    id: location.id,
    is_default: location.isDefault,
    order: location.order ?? 0,
    type: location.type,
    label: location.label,
    params: { ...(location.params ?? {}) },
  };
}

function appBase(app: AppRecord) {
  return {
    id: app.id,
    name: app.name,
    description: app.description ?? '',
    logo_url: app.logoUrl ?? '',
    callback_url: app.callbackUrl ?? '',
    grades_released: app.gradesReleased,
    status: app.status,
    // Only a tool with a key reaches these operations; hosted tools have none (NS-01).
    api_key_hint: app.apiKeyHint ?? '',
    created: isoFromMs(app.createdAt),
  };
}

export async function app0825(services: Services, app: AppRecord): Promise<App0825> {
  const locations = await storedLocations(services, app.id, '2026-08-25');
  return {
    ...appBase(app),
    provision_url: app.provisionUrl ?? '',
    locations_url: app.locationsUrl ?? '',
    locations: locations.map(location0825),
  };
}

export async function app0819(services: Services, app: AppRecord): Promise<App0819> {
  const locations = await storedLocations(services, app.id, '2026-08-19');
  return { ...appBase(app), locations: locations.map(location0819) };
}

// --- reading bodies -------------------------------------------------------------------------------

function objectBody(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw unprocessable('invalid_body', M.notAnObject);
  return body as Record<string, unknown>;
}

function refuseExtraFields(body: Record<string, unknown>, allowed: readonly string[], readOnly: readonly string[]): void {
  const extra = Object.keys(body).find((key) => !allowed.includes(key));
  if (extra !== undefined) throw extraFieldProblem(extra, readOnly);
}

function stringField(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw unprocessable('invalid_field', M.notAString(field), field);
  return value;
}

/** The endpoint URL rules at write time, in the archived contracts' words (S-14). */
async function checkedUrl(services: Services, field: EndpointField, value: string): Promise<string> {
  const check = await services.outbound.check(value, field);
  if (check.ok) return check.url;
  switch (check.rule) {
    case 'absolute_https':
      throw unprocessable('invalid_url', M.notHttps(field), field);
    case 'no_credentials':
      throw unprocessable('invalid_url', check.message, field);
    case 'public_address':
    case 'resolvable':
      throw unprocessable('invalid_url', M.notPublic(field), field);
  }
}

function locationType(body: Record<string, unknown>): LocationType | undefined {
  const value = body['type'];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !(LOCATION_TYPES as readonly string[]).includes(value)) {
    throw unprocessable('invalid_location_type', M.locationType, 'type');
  }
  return value as LocationType;
}

function extidField(body: Record<string, unknown>, required: boolean): string | undefined {
  const value = body['extid'];
  if (value === undefined) {
    if (required) throw unprocessable('extid_required', M.extidRequired, 'extid');
    return undefined;
  }
  if (typeof value !== 'string' || !EXTID_PATTERN.test(value)) throw unprocessable('invalid_extid', M.extidInvalid, 'extid');
  return value;
}

function paramsField(body: Record<string, unknown>): Record<string, string> | undefined {
  const value = body['params'];
  if (value === undefined) return undefined;
  const valid =
    typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === 'string');
  if (!valid) throw unprocessable('invalid_params', M.params, 'params');
  return { ...(value as Record<string, string>) };
}

function orderField(body: Record<string, unknown>): number | undefined {
  const value = body['order'];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value)) throw unprocessable('order_not_integer', M.order, 'order');
  if (value < ORDER_MIN || value > ORDER_MAX) {
    throw unprocessable('order_out_of_range', M.orderRange, 'order');
  }
  return value;
}

// --- the operations -------------------------------------------------------------------------------

/** PATCH /v1/apps/me: every field checked, then one write. */
export async function updateApp(services: Services, app: AppRecord, rawBody: unknown, version: ArchivedVersion): Promise<AppRecord> {
  const body = objectBody(rawBody);
  refuseExtraFields(body, APP_FIELDS[version], APP_READ_ONLY);
  const patch: AppSettingsPatch = {};
  const name = stringField(body, 'name');
  if (name !== undefined) {
    if (name.trim() === '') throw unprocessable('name_blank', M.nameBlank, 'name');
    patch.name = name;
  }
  const description = stringField(body, 'description');
  if (description !== undefined) patch.description = description === '' ? null : description;
  const logoUrl = stringField(body, 'logo_url');
  if (logoUrl !== undefined) patch.logoUrl = logoUrl === '' ? null : logoUrl;
  const callbackUrl = stringField(body, 'callback_url');
  // The callback URL cannot be cleared: an empty one fails the rules like any other non-URL.
  if (callbackUrl !== undefined) patch.callbackUrl = await checkedUrl(services, 'callback_url', callbackUrl);
  for (const [field, key] of [
    ['provision_url', 'provisionUrl'],
    ['locations_url', 'locationsUrl'],
  ] as const) {
    if (!APP_FIELDS[version].includes(field)) continue;
    const value = stringField(body, field);
    // An empty string clears the setting (contract, App object 2026-08-25).
    if (value !== undefined) patch[key] = value === '' ? null : await checkedUrl(services, field, value);
  }
  const released = body['grades_released'];
  if (released !== undefined) {
    if (typeof released !== 'boolean') throw unprocessable('invalid_field', M.gradesReleased, 'grades_released');
    patch.gradesReleased = released;
  }
  const updated = await services.store.apps.update(app.id, patch);
  if (!updated) throw new Problem(404, 'app_not_found', `no tool ${app.id}`);
  return updated;
}

/** The guard of the one-location operations: a location the calling tool stored, or 404 (GAP-23). */
export async function storedLocationGuard(ctx: GuardContext<unknown>): Promise<LocationRecord> {
  const app = callingApp(ctx.principal);
  const id = (ctx.params as { location_id?: string }).location_id ?? '';
  const location = await ctx.services.store.locations.getForApp(app.id, id);
  // A location the tool serves from its locations URL is not a stored one: not found here either.
  if (!location || !location.stored) throw new Problem(404, 'location_not_found', M.locationNotFound);
  return location;
}

function storeRefusal(err: unknown): never {
  if (err instanceof DuplicateExtidError) throw unprocessable('extid_taken', M.extidTaken(err.extid), 'extid');
  if (err instanceof ExtidPermanentError) throw unprocessable('extid_permanent', M.extidPermanent, 'extid');
  throw err;
}

/** The end of the picker order for a new 2026-08-19 location; equal positions keep creation order. */
async function endOfOrder(services: Services, appId: string): Promise<number> {
  const orders = (await services.store.locations.listStored(appId)).map((l) => l.order ?? 0);
  return orders.length === 0 ? 0 : Math.min(Math.max(...orders) + 1, ORDER_MAX);
}

export async function createLocation(services: Services, app: AppRecord, rawBody: unknown, version: ArchivedVersion): Promise<LocationRecord> {
  const body = objectBody(rawBody);
  refuseExtraFields(body, LOCATION_FIELDS[version], locationReadOnly(version));
  const extid = version === '2026-08-25' ? extidField(body, true) : undefined;
  const type = locationType(body) ?? 'content';
  const label = stringField(body, 'label') ?? '';
  const params = version === '2026-08-19' ? (paramsField(body) ?? {}) : undefined;
  const order = version === '2026-08-19' ? (orderField(body) ?? (await endOfOrder(services, app.id))) : undefined;
  try {
    return await services.store.locations.createStored(app.id, {
      ...(extid !== undefined ? { extid } : {}),
      type,
      label,
      ...(params !== undefined ? { params } : {}),
      ...(order !== undefined ? { order } : {}),
    });
  } catch (err) {
    return storeRefusal(err);
  }
}

export async function updateLocation(
  services: Services,
  app: AppRecord,
  location: LocationRecord,
  rawBody: unknown,
  version: ArchivedVersion,
): Promise<LocationRecord> {
  const body = objectBody(rawBody);
  refuseExtraFields(body, LOCATION_FIELDS[version], locationReadOnly(version));
  const patch: StoredLocationPatch = {};
  const extid = version === '2026-08-25' ? extidField(body, false) : undefined;
  if (extid !== undefined) patch.extid = extid;
  const type = locationType(body);
  if (type !== undefined) patch.type = type;
  const label = stringField(body, 'label');
  if (label !== undefined) patch.label = label;
  if (version === '2026-08-19') {
    // `params` replaces the whole set (contract, 2026-08-19 update).
    const params = paramsField(body);
    if (params !== undefined) patch.params = params;
    const order = orderField(body);
    if (order !== undefined) patch.order = order;
  }
  let updated: LocationRecord | null;
  try {
    updated = await services.store.locations.updateStored(app.id, location.id, patch);
  } catch (err) {
    return storeRefusal(err);
  }
  if (!updated) throw new Problem(404, 'location_not_found', M.locationNotFound);
  return updated;
}

export async function deleteLocation(services: Services, app: AppRecord, location: LocationRecord): Promise<{ deleted: string }> {
  let deleted: boolean;
  try {
    deleted = await services.store.locations.deleteStored(app.id, location.id);
  } catch (err) {
    if (err instanceof DefaultLocationError) throw unprocessable('home_location_permanent', M.homeLocation);
    throw err;
  }
  if (!deleted) throw new Problem(404, 'location_not_found', M.locationNotFound);
  return { deleted: location.id };
}

/** 2026-08-25 key rotation: the old key, the calling one included, stops working with this write. */
export async function rotateKey(services: Services, app: AppRecord): Promise<RotatedKey> {
  const rotated = await services.store.apps.rotateApiKey(app.id);
  if (!rotated) throw new Problem(404, 'app_not_found', `no tool ${app.id}`);
  return {
    app_id: app.id,
    api_key: rotated.apiKey,
    api_key_hint: rotated.apiKeyHint,
    message: 'Store this API key now: it is shown only once. The previous key, including the one that made this call, no longer works.',
  };
}
