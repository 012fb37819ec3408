/**
 * Cursor pagination of the dashboard lists (decision S-13): `limit` 1 to 100 (default 20) and opaque
 * cursors that belong to one list with one set of filters and live 24 hours. A cursor carries the list it
 * was cut from and when; anything else is `cursor is not valid for this list`.
 */
import type { Request } from 'express';
import { Problem } from '../http/problem.js';

export const DEFAULT_LIMIT = 20;
export const CURSOR_TTL_MS = 24 * 3600 * 1000;

interface CursorBody {
  /** The list and its filters. */
  l: string;
  /** Where the next page starts, in the list's own terms. */
  p: unknown;
  /** Issued at (ms). */
  t: number;
}

export interface ListQuery {
  limit: number;
  /** The position the cursor carries; undefined for the first page. */
  position: unknown;
}

export function queryString(req: Request, name: string): string | undefined {
  const value = (req.query as Record<string, unknown>)[name];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? String(value[value.length - 1]) : String(value);
}

/** The answer to a cursor this list cannot read (S-13). */
export function invalidCursor(): Problem {
  return new Problem(400, 'invalid_cursor', 'cursor is not valid for this list');
}

/** `limit` and `cursor` as the validator let them through (S-13: 1 to 100, a cursor of 1 to 512 characters). */
export function readListQuery(req: Request, listKey: string, nowMs: number): ListQuery {
  const rawLimit = queryString(req, 'limit');
  const limit = rawLimit === undefined ? DEFAULT_LIMIT : Number(rawLimit);
  const rawCursor = queryString(req, 'cursor');
  if (rawCursor === undefined) return { limit, position: undefined };
  // What the cursor says is for this list alone to judge: its list, its age, its position.
  const invalid = invalidCursor();
  let decoded: CursorBody;
  try {
    decoded = JSON.parse(Buffer.from(rawCursor, 'base64url').toString('utf8')) as CursorBody;
  } catch {
    throw invalid;
  }
  if (typeof decoded !== 'object' || decoded === null || decoded.l !== listKey || typeof decoded.t !== 'number') throw invalid;
  if (decoded.t > nowMs + 60_000 || nowMs - decoded.t > CURSOR_TTL_MS || decoded.p === undefined) throw invalid;
  return { limit, position: decoded.p };
}

export function makeCursor(listKey: string, position: unknown, nowMs: number): string {
  const body: CursorBody = { l: listKey, p: position, t: nowMs };
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
}

/** One page of an in-memory list already in its order, keyed by a position of [createdAt, id]. */
export function pageOf<T>(
  items: readonly T[],
  key: (item: T) => [number, string],
  query: ListQuery,
  listKey: string,
  nowMs: number,
): { page: T[]; nextCursor: string | null } {
  let start = 0;
  if (query.position !== undefined) {
    const p = query.position;
    if (!Array.isArray(p) || typeof p[0] !== 'number' || typeof p[1] !== 'string') {
      throw invalidCursor();
    }
    const index = items.findIndex((item) => {
      const [c, id] = key(item);
      return c === p[0] && id === p[1];
    });
    // The item the cursor names is gone (a builder left a team): the cursor no longer fits this list.
    if (index === -1) throw invalidCursor();
    start = index + 1;
  }
  const page = items.slice(start, start + query.limit);
  const last = page[page.length - 1];
  const more = start + query.limit < items.length;
  return { page, nextCursor: more && last ? makeCursor(listKey, key(last), nowMs) : null };
}
