// RFC 6901 JSON Pointer syntax, kept apart from JSON Patch because row paths, validation
// errors (`errors[].path`) and the locations detail all speak pointers.

export type PointerParse =
  | { readonly ok: true; readonly tokens: readonly string[] }
  | { readonly ok: false; readonly reason: string };

/** Splits a pointer into unescaped reference tokens; `""` is the whole document. */
export function parsePointer(pointer: string): PointerParse {
  if (pointer === '') return { ok: true, tokens: [] };
  if (!pointer.startsWith('/')) {
    return { ok: false, reason: 'a JSON Pointer must be empty or start with "/"' };
  }
  const tokens: string[] = [];
  for (const raw of pointer.slice(1).split('/')) {
    // RFC 6901 allows only ~0 and ~1; anything else is a syntax error, not a literal tilde.
    const bad = /~(?![01])/.exec(raw);
    if (bad) return { ok: false, reason: `"~" must be followed by 0 or 1 (token "${raw}")` };
    // ~1 before ~0, so that "~01" decodes to "~1" and not to "/" (RFC 6901 section 4).
    tokens.push(raw.replace(/~1/g, '/').replace(/~0/g, '~'));
  }
  return { ok: true, tokens };
}

export function escapeToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

export function formatPointer(tokens: readonly (string | number)[]): string {
  return tokens.map((t) => '/' + escapeToken(String(t))).join('');
}

/**
 * Reads a token as an array index. Leading zeros, signs, exponents and "-" are refused: RFC 6901
 * admits only `0` or a digit string without a leading zero, so "01" and "1e0" name no element.
 */
export function parseArrayIndex(token: string): number | null {
  if (!/^(0|[1-9][0-9]*)$/.test(token)) return null;
  const n = Number(token);
  return Number.isSafeInteger(n) ? n : Number.MAX_SAFE_INTEGER;
}

/** True when `inner` names `outer` itself or something inside it. */
export function isPrefixPointer(outer: readonly string[], inner: readonly string[]): boolean {
  if (outer.length > inner.length) return false;
  return outer.every((t, i) => inner[i] === t);
}
