/**
 * Reads the dashboard's JSON bodies and query strings with the spec's exact messages. The request
 * validator is given the dashboard spec without request schemas (see `mount.ts`): it keeps validating
 * responses, while every refusal of a request is worded here, in the order the spec's descriptions give
 * (a field refused at registration before an unknown one, a missing field before a blank one).
 */
import { Problem } from '../http/problem.js';

export type JsonObject = Record<string, unknown>;

export function unprocessable(code: string, detail: string): Problem {
  return new Problem(422, code, detail);
}

/** The body as an object; `undefined` (no body) is `{}` where the operation allows it. */
export function objectBody(body: unknown, options: { optional?: boolean } = {}): JsonObject {
  if (body === undefined && options.optional) return {};
  if (body === undefined) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw unprocessable('invalid_body', 'the request body must be a JSON object');
  }
  return body as JsonObject;
}

export function refuseUnknown(body: JsonObject, allowed: readonly string[], prefix = ''): void {
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) throw unprocessable('unknown_field', `unknown field: ${prefix}${key}`);
  }
}

const has = (body: JsonObject, key: string): boolean => Object.prototype.hasOwnProperty.call(body, key);

/** A required (or present optional) non-blank string of at most `max` characters. */
export function textField(body: JsonObject, key: string, options: { required: boolean; max: number; label?: string }): string | undefined {
  const name = options.label ?? key;
  if (!has(body, key) || body[key] === undefined) {
    if (options.required) throw unprocessable('field_required', `${name} is required`);
    return undefined;
  }
  const value = body[key];
  if (typeof value !== 'string') throw unprocessable('invalid_type', `${name} must be a string`);
  if (value.trim() === '') throw unprocessable('field_blank', `${name} cannot be blank`);
  if ([...value].length > options.max) throw unprocessable('too_long', `${name} must be at most ${options.max} characters`);
  return value;
}

/** An optional string that may be null; `undefined` when absent. */
export function nullableText(body: JsonObject, key: string, max: number): string | null | undefined {
  if (!has(body, key)) return undefined;
  const value = body[key];
  if (value === null) return null;
  if (typeof value !== 'string') throw unprocessable('invalid_type', `${key} must be a string or null`);
  if ([...value].length > max) throw unprocessable('too_long', `${key} must be at most ${max} characters`);
  return value;
}

export function enumField<T extends string>(body: JsonObject, key: string, values: readonly T[], options: { required: boolean }): T | undefined {
  if (!has(body, key) || body[key] === undefined) {
    if (options.required) throw unprocessable('field_required', `${key} is required`);
    return undefined;
  }
  const value = body[key];
  if (typeof value !== 'string' || !(values as readonly string[]).includes(value)) {
    throw unprocessable('invalid_enum', `${key} must be one of [${values.join(', ')}]`);
  }
  return value as T;
}

/** A logo is shown to instructors: an absolute https:// URL with no credentials, or null / "" to clear. */
export function logoUrlField(body: JsonObject): string | null | undefined {
  if (!has(body, 'logo_url')) return undefined;
  const value = body['logo_url'];
  if (value === null || value === '') return null;
  const refused = unprocessable('url_not_https', 'logo_url must be an absolute https:// URL');
  if (typeof value !== 'string' || /[\u0000-\u0020\u007f]/.test(value)) throw refused;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw refused;
  }
  if (parsed.protocol !== 'https:' || parsed.username !== '' || parsed.password !== '') throw refused;
  return parsed.href;
}

/** The pattern of `format: email` in the validator (ajv-formats), so an accepted address always validates. */
const EMAIL =
  /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i;

export function emailField(body: JsonObject): string {
  if (!has(body, 'email') || body['email'] === undefined) throw unprocessable('field_required', 'email is required');
  const value = body['email'];
  if (typeof value !== 'string' || value.length > 254 || !EMAIL.test(value.trim())) {
    throw unprocessable('invalid_email', 'email must be an email address');
  }
  return value.trim().toLowerCase();
}

/** Sandbox course IDs in bodies follow the path parameter pattern (L-09); anything else names no course. */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
