// JSON values as rows hold them, with the prototype-safe primitives every rule that writes
// tool-supplied keys needs. Keys such as `__proto__`, `constructor` and `prototype` are ordinary
// data: JSON.parse already makes `__proto__` an own property, and a plain assignment would instead
// call the inherited setter and swap the object's prototype.
//
// Clone and equality are iterative because a row of 1 MB can nest far deeper than the call stack.

export type JsonPrimitive = null | boolean | number | string;
export type JsonArray = JsonValue[];
export interface JsonObject {
  [key: string]: JsonValue;
}
export type JsonValue = JsonPrimitive | JsonArray | JsonObject;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function hasMember(obj: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

/** Reads an own member only, so `constructor` on `{}` is absent rather than `Object`. */
export function getMember(obj: JsonObject, key: string): JsonValue | undefined {
  return hasMember(obj, key) ? obj[key] : undefined;
}

/** Writes an own, enumerable data member; an existing member keeps its place in key order. */
export function setMember(obj: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}

export function deleteMember(obj: JsonObject, key: string): void {
  if (hasMember(obj, key)) delete obj[key];
}

function emptyLike(value: JsonArray | JsonObject): JsonArray | JsonObject {
  return Array.isArray(value) ? [] : {};
}

/** Deep copy sharing nothing with its input. */
export function cloneJson<T extends JsonValue>(root: T): T {
  if (root === null || typeof root !== 'object') return root;
  const top = emptyLike(root);
  const work: Array<[JsonArray | JsonObject, JsonArray | JsonObject]> = [[root, top]];
  for (let pair = work.pop(); pair; pair = work.pop()) {
    const [src, dst] = pair;
    if (Array.isArray(src)) {
      const out = dst as JsonArray;
      for (const item of src) {
        if (item !== null && typeof item === 'object') {
          const copy = emptyLike(item);
          out.push(copy);
          work.push([item, copy]);
        } else {
          out.push(item);
        }
      }
    } else {
      const out = dst as JsonObject;
      for (const key of Object.keys(src)) {
        const item = src[key] as JsonValue;
        if (item !== null && typeof item === 'object') {
          const copy = emptyLike(item);
          setMember(out, key, copy);
          work.push([item, copy]);
        } else {
          setMember(out, key, item);
        }
      }
    }
  }
  return top as T;
}

/**
 * JSON equality as RFC 6902 `test` defines it: same type, numbers by value (so `10` is not
 * `"10"`), arrays element by element, objects by member set whatever their key order.
 */
export function jsonEqual(a: JsonValue, b: JsonValue): boolean {
  const work: Array<[JsonValue, JsonValue]> = [[a, b]];
  for (let pair = work.pop(); pair; pair = work.pop()) {
    const [x, y] = pair;
    if (x === null || y === null || typeof x !== 'object' || typeof y !== 'object') {
      if (x !== y) return false;
      continue;
    }
    if (Array.isArray(x) !== Array.isArray(y)) return false;
    if (Array.isArray(x) && Array.isArray(y)) {
      if (x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) work.push([x[i] as JsonValue, y[i] as JsonValue]);
      continue;
    }
    const xo = x as JsonObject;
    const yo = y as JsonObject;
    const keys = Object.keys(xo);
    if (keys.length !== Object.keys(yo).length) return false;
    for (const key of keys) {
      if (!hasMember(yo, key)) return false;
      work.push([xo[key] as JsonValue, yo[key] as JsonValue]);
    }
  }
  return true;
}
