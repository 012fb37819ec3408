/**
 * What the dashboard's bodies need beyond their schema. The request validator checks fields, types,
 * lengths, enums and unknown fields against the spec (`validation.ts` words its failures); a logo URL's
 * scheme and credentials are URL rules no schema states.
 */
import { Problem } from '../http/problem.js';

export function unprocessable(code: string, detail: string): Problem {
  return new Problem(422, code, detail);
}

/** A logo is shown to instructors: an absolute https:// URL with no credentials, or null / "" to clear. */
export function logoUrl(value: string | null | undefined): string | null | undefined {
  if (value === undefined) return undefined;
  if (value === null || value === '') return null;
  const refused = unprocessable('url_not_https', 'logo_url must be an absolute https:// URL');
  if (/[\u0000-\u0020\u007f]/.test(value)) throw refused;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw refused;
  }
  if (parsed.protocol !== 'https:' || parsed.username !== '' || parsed.password !== '') throw refused;
  return parsed.href;
}
