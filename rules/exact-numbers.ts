// Whether a JSON text's numbers survive the trip through an IEEE-754 double: a row is stored and read
// back as `JSON.stringify(JSON.parse(text))`, so a literal the double cannot hold (`1e400` becomes
// Infinity, then `null`; 2^53 + 1 becomes 2^53) would be changed silently. The rule judges each literal
// by what a read gives back: kept exactly when the double's shortest decimal form is the same decimal
// number as the literal (`0.1`, `1.50`, `15e-1` are kept; `1e400`, `9007199254740993`, `1e-400` are not).
// Zero keeps no sign: `-0` reads back as `0`, the same JSON number.

import { formatPointer } from './json-pointer.js';

export interface InexactNumber {
  /** JSON Pointer of the number in the document. */
  pointer: string;
  /** The literal as written. */
  literal: string;
  reason: 'out_of_range' | 'not_exact';
}

/** A decimal as significant digits (no leading or trailing zeros) and the exponent of its last digit. */
function decimal(literal: string): { digits: string; exponent: number } {
  const m = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal);
  if (!m) return { digits: '', exponent: 0 };
  const intPart = m[1] ?? '';
  const frac = m[2] ?? '';
  let digits = (intPart + frac).replace(/^0+/, '');
  let exponent = Number(m[3] ?? '0') - frac.length;
  const trimmed = digits.replace(/0+$/, '');
  exponent += digits.length - trimmed.length;
  digits = trimmed;
  if (digits === '') return { digits: '', exponent: 0 };
  return { digits, exponent };
}

/** Why the literal is not kept exactly, or null when it is. */
export function judgeNumber(literal: string): InexactNumber['reason'] | null {
  // Fast path: up to 15 significant digits and no exponent always round-trip (DBL_DIG is 15).
  if (literal.length <= 15 && !/[eE]/.test(literal)) return null;
  const value = Number(literal);
  if (!Number.isFinite(value)) return 'out_of_range';
  const written = decimal(literal);
  if (value === 0) return written.digits === '' ? null : 'out_of_range';
  const read = decimal(String(value));
  if (read.digits !== written.digits || read.exponent !== written.exponent) return 'not_exact';
  return null;
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);

/**
 * The first number in `text` (valid JSON, already parsed once) that a double cannot keep exactly, with
 * its pointer; null when there is none. One pass, iterative, with the pointer built only on a finding.
 */
export function firstInexactNumber(text: string): InexactNumber | null {
  // Per open container: its pointer token so far (object key or array index) and its kind.
  const keys: Array<string | number> = [];
  const kinds: Array<'object' | 'array'> = [];
  let expectKey = false;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const ch = text.charCodeAt(i);
    if (WS.has(ch) || ch === 0x3a /* : */) {
      i += 1;
      continue;
    }
    if (ch === 0x7b /* { */ || ch === 0x5b /* [ */) {
      kinds.push(ch === 0x7b ? 'object' : 'array');
      keys.push(ch === 0x7b ? '' : 0);
      expectKey = ch === 0x7b;
      i += 1;
      continue;
    }
    if (ch === 0x7d || ch === 0x5d) {
      kinds.pop();
      keys.pop();
      expectKey = false;
      i += 1;
      continue;
    }
    if (ch === 0x2c /* , */) {
      const top = kinds.length - 1;
      if (kinds[top] === 'array') keys[top] = (keys[top] as number) + 1;
      else expectKey = true;
      i += 1;
      continue;
    }
    if (ch === 0x22 /* " */) {
      let j = i + 1;
      let escaped = false;
      while (j < n) {
        const c = text.charCodeAt(j);
        if (c === 0x5c) {
          escaped = true;
          j += 2;
          continue;
        }
        if (c === 0x22) break;
        j += 1;
      }
      if (expectKey) {
        const raw = text.slice(i + 1, j);
        keys[keys.length - 1] = escaped ? (JSON.parse(text.slice(i, j + 1)) as string) : raw;
        expectKey = false;
      }
      i = j + 1;
      continue;
    }
    if (ch === 0x2d || (ch >= 0x30 && ch <= 0x39)) {
      let j = i + 1;
      while (j < n) {
        const c = text.charCodeAt(j);
        if ((c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d) j += 1;
        else break;
      }
      const literal = text.slice(i, j);
      const reason = judgeNumber(literal);
      if (reason) return { pointer: formatPointer(keys), literal, reason };
      i = j;
      continue;
    }
    // true, false, null
    i += 1;
  }
  return null;
}
