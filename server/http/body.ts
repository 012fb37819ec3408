/**
 * Reads a JSON request body after the guard has run (so an unauthorized caller's body is never read),
 * with the service's own answers: 415 for another media type (GAP-14), 413 over the HTTP limit, 422 for
 * bytes that are not JSON (400 where the operation's spec declares it, H-02), 422 for a number a double
 * cannot keep exactly (H-01). An empty body is "no body", never `{}`: an empty PUT must not wipe a row.
 */
import type { Request } from 'express';
import { responses } from '../../generated/2026-09-21/schemas.js';
import { firstInexactNumber } from '../../rules/exact-numbers.js';
import { fillMessage } from '../../rules/messages.js';
import { Problem } from './problem.js';

export const JSON_CONTENT_TYPE_MESSAGE = 'Content-Type must be application/json';

/** Whether the request announces a body at all (RFC 9112 §6.3). */
export function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  if (req.headers['transfer-encoding'] !== undefined) return true;
  return length !== undefined && length !== '0';
}

/** `type` (e.g. `application/json`), optionally with `charset=utf-8` (JSON is UTF-8 by RFC 8259). */
export function isMediaType(header: string | undefined, type: string): boolean {
  if (header === undefined) return false;
  const [base, ...params] = header.split(';');
  if (base?.trim().toLowerCase() !== type) return false;
  for (const param of params) {
    const [name, value] = param.split('=').map((s) => s.trim().toLowerCase().replace(/"/g, ''));
    if (name === 'charset' && value !== undefined && value !== 'utf-8' && value !== 'utf8') return false;
  }
  return true;
}

export function isJsonContentType(header: string | undefined): boolean {
  return isMediaType(header, 'application/json');
}

export function unsupportedMediaType(message = JSON_CONTENT_TYPE_MESSAGE): Problem {
  return new Problem(415, 'unsupported_media_type', message);
}

export function bodyTooLarge(limit: number): Problem {
  // The connection is closed after this answer: the rest of the body is not worth reading.
  return new Problem(413, 'body_too_large', fillMessage(responses.BodyTooLarge['x-messages'].too_large, { limit }), {
    headers: { Connection: 'close' },
  });
}

/**
 * The bodies of requests that may be run again from their start, should their credential epoch be found
 * stale after the body was read (PERF-216): the stream cannot be read twice.
 */
const keptBodies = new WeakMap<Request, Buffer>();

/**
 * Reads the raw bytes, refusing early on a declared or actual size over `limit`. With `keep`, the bytes stay
 * with the request, and a second read of it (the request run again) answers them.
 */
export async function readRawBody(req: Request, limit: number, { keep = false }: { keep?: boolean } = {}): Promise<Buffer> {
  const kept = keptBodies.get(req);
  if (kept) return kept;
  const body = await readBodyStream(req, limit);
  if (keep) keptBodies.set(req, body);
  return body;
}

async function readBodyStream(req: Request, limit: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > limit) throw bodyTooLarge(limit);
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity') {
    throw new Problem(415, 'unsupported_content_encoding', `Content-Encoding ${encoding} is not supported; send the body uncompressed`);
  }
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err: Problem | null, value?: Buffer): void => {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
      if (err) {
        // Stop buffering what is left; the connection closes after the answer.
        req.pause();
        reject(err);
      } else resolve(value ?? Buffer.alloc(0));
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) finish(bodyTooLarge(limit));
      else chunks.push(chunk);
    };
    const onEnd = (): void => finish(null, Buffer.concat(chunks, size));
    const onError = (): void => finish(new Problem(400, 'body_unreadable', 'the request body could not be read'));
    const onAborted = (): void => finish(new Problem(400, 'body_unreadable', 'the request body could not be read'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Deepest nesting of arrays and objects a body may have. Far beyond any real row, and far below what
 * would exhaust the stack of the recursive code JSON meets later (stringify, validation, patching).
 */
export const MAX_JSON_DEPTH = 512;

/** The nesting depth of JSON text, counted outside strings, in one pass without parsing. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i += 1; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      depth += 1;
      if (depth > max) max = depth;
    } else if (ch === 0x5d || ch === 0x7d) depth -= 1;
  }
  return max;
}

export const NOT_JSON_MESSAGE = 'request body is not valid JSON';

export interface JsonBodyOptions {
  /**
   * The status of a body that is not JSON: 400 where the operation's spec declares a 400 for it, else 422,
   * the contract's status for a malformed body (H-02).
   */
  notJsonStatus?: 400 | 422;
}

function notJson(status: 400 | 422, reason: string): Problem {
  return new Problem(status, 'malformed_json', `${NOT_JSON_MESSAGE}: ${reason}`);
}

const MAX_LITERAL_SHOWN = 40;

/** The 422 for a number that would read back differently from how it was written (H-01). */
export function inexactNumber(pointer: string, literal: string, reason: 'out_of_range' | 'not_exact'): Problem {
  const shown = literal.length > MAX_LITERAL_SHOWN ? `${literal.slice(0, MAX_LITERAL_SHOWN)}...` : literal;
  const why =
    reason === 'out_of_range'
      ? 'it is outside the range of an IEEE-754 double'
      : `an IEEE-754 double holds it only as ${String(Number(literal))}`;
  const where = pointer === '' ? 'the request body' : pointer;
  return new Problem(422, 'inexact_number', `the number ${shown} at ${where} cannot be stored exactly: ${why}`, {
    errors: [{ path: `/body${pointer}`, message: `number cannot be stored exactly: ${why}` }],
  });
}

/** Parses the bytes as JSON; empty (or only white space) is "no body" (`undefined`). */
export function parseJsonBody(raw: Buffer, options: JsonBodyOptions = {}): unknown {
  const status = options.notJsonStatus ?? 400;
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw notJson(status, 'it is not UTF-8 text');
  }
  if (text.trim() === '') return undefined;
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    throw new Problem(422, 'body_too_deep', `request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (err) {
    throw notJson(status, err instanceof Error ? err.message : 'syntax error');
  }
  const inexact = firstInexactNumber(text);
  if (inexact) throw inexactNumber(inexact.pointer, inexact.literal, inexact.reason);
  return value;
}

/** `application/x-www-form-urlencoded` as an object of strings (the last of repeated fields wins). */
export function parseFormBody(raw: Buffer): Record<string, string> | undefined {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new Problem(400, 'malformed_form', 'request body is not valid form data: it is not UTF-8 text');
  }
  if (text.trim() === '') return undefined;
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of new URLSearchParams(text)) out[name] = value;
  return { ...out };
}
