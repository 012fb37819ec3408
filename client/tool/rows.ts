// A storage row (decision L-02) through the URL a launch or provision request gave:
// GET reads the object, PUT replaces it, PATCH applies an RFC 6902 patch atomically.

import type { PatchOperation } from '../../rules/json-patch.js';
import type { components } from '../../generated/2026-09-21/types.js';
import { callJson, requireToken, requireUrl, type ToolRequestOptions, type ToolResult } from './http.js';

export type { PatchOperation, JsonValue, JsonObject, JsonArray } from '../../rules/json-patch.js';

/** A row as the spec describes it: any JSON object. */
export type Row = components['schemas']['Row'];

export interface RowClient<T extends object = Row> {
  /** The storage URL, exactly as given. */
  readonly url: string;
  /** The row's object exactly as last written; `{}` for a row never written. */
  get(): Promise<ToolResult<T>>;
  /** Replaces the whole row (204). Over the row's size limit the service answers 422 and keeps the old row. */
  put(row: T): Promise<ToolResult<undefined>>;
  /**
   * Applies the operations atomically (204), sent as `{"patch": [...]}`. Paths begin with the
   * top-level key (`/answers/q1`); an `add` creates missing intermediate objects (decision S-17).
   */
  patch(operations: readonly PatchOperation[]): Promise<ToolResult<undefined>>;
}

/**
 * The row behind `storageUrl` (one of the `storage` claim's URLs), called with `token` (the
 * claims' `api.token`). `T` is the shape the tool keeps in the row; the service does not check it.
 */
export function rows<T extends object = Row>(storageUrl: string, token: string, options: ToolRequestOptions = {}): RowClient<T> {
  const url = requireUrl(storageUrl, 'storageUrl');
  const bearer = requireToken(token, 'token');
  return {
    url,
    get: () => callJson<T>(url, { method: 'GET', token: bearer }, options),
    put: (row) => {
      if (typeof row !== 'object' || row === null || Array.isArray(row)) {
        throw new TypeError('a row is a JSON object');
      }
      return callJson<undefined>(url, { method: 'PUT', token: bearer, json: row }, options);
    },
    patch: (operations) => {
      if (!Array.isArray(operations)) throw new TypeError('patch takes an array of RFC 6902 operations');
      return callJson<undefined>(url, { method: 'PATCH', token: bearer, json: { patch: operations } }, options);
    },
  };
}
