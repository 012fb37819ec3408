import type { Driver, SqlParam } from '../driver.js';
import type { Clock } from '../time.js';

/** What every repository is built from: the driver it talks through (root or transaction) and the clock. */
export interface RepoContext {
  readonly db: Driver;
  readonly clock: Clock;
}

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export function bool(value: unknown): boolean {
  return value === 1 || value === true || value === '1';
}

export function parseJson<T>(text: string | null | undefined, fallback: T): T {
  if (text === null || text === undefined || text === '') return fallback;
  return JSON.parse(text) as T;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The four storage rows of a tool in a course (decision L-02). */
export type RowKind = 'context' | 'location' | 'member' | 'member_location';

export type RowKey =
  | { appId: string; contextId: string; kind: 'context' }
  | { appId: string; contextId: string; kind: 'location'; locationId: string }
  | { appId: string; contextId: string; kind: 'member'; memberId: string }
  | { appId: string; contextId: string; kind: 'member_location'; locationId: string; memberId: string };

/** Column values of a row key; absent parts are '' (see the schema). */
export function rowKeyParams(key: RowKey): [string, string, RowKind, string, string] {
  const locationId = key.kind === 'location' || key.kind === 'member_location' ? key.locationId : '';
  const memberId = key.kind === 'member' || key.kind === 'member_location' ? key.memberId : '';
  if ((key.kind === 'location' || key.kind === 'member_location') && !locationId) {
    throw new TypeError(`a ${key.kind} row needs a locationId`);
  }
  if ((key.kind === 'member' || key.kind === 'member_location') && !memberId) {
    throw new TypeError(`a ${key.kind} row needs a memberId`);
  }
  return [key.appId, key.contextId, key.kind, locationId, memberId];
}

export const ROW_KEY_WHERE = 'app_id = ? AND context_id = ? AND kind = ? AND location_id = ? AND member_id = ?';

/** Sets `column = ?` for each defined entry of `patch`; `undefined` means "leave as is". */
export function updateSet(
  patch: Record<string, SqlParam | undefined>,
  columns: Record<string, string>,
): { sql: string; params: SqlParam[] } {
  const parts: string[] = [];
  const params: SqlParam[] = [];
  for (const [field, column] of Object.entries(columns)) {
    const value = patch[field];
    if (value === undefined) continue;
    parts.push(`${column} = ?`);
    params.push(value);
  }
  return { sql: parts.join(', '), params };
}

/** Opaque pagination cursor: clients must not parse it, so its encoding may change. */
export function encodeCursor(parts: ReadonlyArray<string | number>): string {
  return Buffer.from(JSON.stringify(parts), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): unknown[] | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    return Array.isArray(value) ? (value as unknown[]) : null;
  } catch {
    return null;
  }
}
