// A JSON parser that keeps object members in the order they were written. JSON.parse builds
// ordinary objects, whose own keys list integer-like keys first in ascending order; the picker
// must show locations in the order the tool sent them, digit-only extids included.
//
// It accepts exactly what JSON.parse accepts (RFC 8259, no byte order mark) and, for a repeated
// key, behaves like JSON.parse: the last value wins and the key keeps its first position.
// It is iterative so that hostile nesting cannot exhaust the call stack.

export type OrderedJson = null | boolean | number | string | OrderedJson[] | OrderedObject;

export class OrderedObject {
  readonly #index = new Map<string, number>();
  readonly #entries: Array<[string, OrderedJson]> = [];

  set(key: string, value: OrderedJson): void {
    const at = this.#index.get(key);
    if (at === undefined) {
      this.#index.set(key, this.#entries.length);
      this.#entries.push([key, value]);
    } else {
      (this.#entries[at] as [string, OrderedJson])[1] = value;
    }
  }

  has(key: string): boolean {
    return this.#index.has(key);
  }

  get(key: string): OrderedJson | undefined {
    const at = this.#index.get(key);
    return at === undefined ? undefined : (this.#entries[at] as [string, OrderedJson])[1];
  }

  /** Members in written order. */
  entries(): ReadonlyArray<readonly [string, OrderedJson]> {
    return this.#entries;
  }

  get size(): number {
    return this.#entries.length;
  }
}

export type OrderedParse =
  | { readonly ok: true; readonly value: OrderedJson }
  | { readonly ok: false; readonly reason: string; readonly position: number };

class SyntaxFailure {
  constructor(
    readonly reason: string,
    readonly position: number,
  ) {}
}

type Frame = { kind: 'array'; items: OrderedJson[] } | { kind: 'object'; members: OrderedObject; key: string };

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

export function parseOrderedJson(text: string): OrderedParse {
  let i = 0;
  const n = text.length;

  const fail = (reason: string, at = i): never => {
    throw new SyntaxFailure(reason, at);
  };
  const describeAt = (): string => (i >= n ? 'end of input' : `${JSON.stringify(text[i])}`);

  const skipWhitespace = (): void => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else break;
    }
  };

  const readString = (): string => {
    // Caller has checked the opening quote.
    i++;
    let out = '';
    let start = i;
    while (true) {
      if (i >= n) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(start, i);
        i++;
        return out;
      }
      if (c < 0x20) fail('control character in string');
      if (c === 0x5c) {
        out += text.slice(start, i);
        const e = text[i + 1];
        if (e === 'u') {
          const hex = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('invalid \\u escape');
          // Lone surrogates are kept, as JSON.parse keeps them.
          out += String.fromCharCode(parseInt(hex, 16));
          i += 6;
        } else if (e !== undefined && Object.prototype.hasOwnProperty.call(ESCAPES, e)) {
          out += ESCAPES[e];
          i += 2;
        } else {
          fail('invalid escape in string');
        }
        start = i;
        continue;
      }
      i++;
    }
  };

  const readKey = (): string => {
    skipWhitespace();
    if (text[i] !== '"') fail(`expected a member name but found ${describeAt()}`);
    const key = readString();
    skipWhitespace();
    if (text[i] !== ':') fail(`expected ":" but found ${describeAt()}`);
    i++;
    return key;
  };

  const readScalar = (): OrderedJson => {
    const c = text[i];
    if (c === '"') return readString();
    if (text.startsWith('true', i)) {
      i += 4;
      return true;
    }
    if (text.startsWith('false', i)) {
      i += 5;
      return false;
    }
    if (text.startsWith('null', i)) {
      i += 4;
      return null;
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m) {
      i += m[0].length;
      // Number() rounds exactly as JSON.parse does, 1e400 becoming Infinity included.
      return Number(m[0]);
    }
    return fail(`unexpected ${describeAt()}`);
  };

  try {
    const stack: Frame[] = [];
    let result: OrderedJson | undefined;
    parsing: while (true) {
      skipWhitespace();
      if (i >= n) fail('unexpected end of input');
      let value: OrderedJson;
      const c = text[i];
      if (c === '{') {
        i++;
        skipWhitespace();
        if (text[i] === '}') {
          i++;
          value = new OrderedObject();
        } else {
          stack.push({ kind: 'object', members: new OrderedObject(), key: readKey() });
          continue;
        }
      } else if (c === '[') {
        i++;
        skipWhitespace();
        if (text[i] === ']') {
          i++;
          value = [];
        } else {
          stack.push({ kind: 'array', items: [] });
          continue;
        }
      } else {
        value = readScalar();
      }
      // Attach the finished value to its container, closing as many containers as end here.
      while (true) {
        const top = stack[stack.length - 1];
        if (!top) {
          result = value;
          break parsing;
        }
        if (top.kind === 'array') top.items.push(value);
        else top.members.set(top.key, value);
        skipWhitespace();
        const next = text[i];
        if (next === ',') {
          i++;
          if (top.kind === 'object') top.key = readKey();
          continue parsing;
        }
        if ((top.kind === 'array' && next === ']') || (top.kind === 'object' && next === '}')) {
          i++;
          stack.pop();
          value = top.kind === 'array' ? top.items : top.members;
          continue;
        }
        fail(`expected "," or "${top.kind === 'array' ? ']' : '}'}" but found ${describeAt()}`);
      }
    }
    skipWhitespace();
    if (i < n) fail(`unexpected ${describeAt()} after the JSON value`);
    return { ok: true, value: result };
  } catch (caught) {
    if (caught instanceof SyntaxFailure) return { ok: false, reason: caught.reason, position: caught.position };
    throw caught;
  }
}

/** Plain JavaScript value of a parse, as JSON.parse would have built it (key order aside). */
export function toPlain(root: OrderedJson): unknown {
  const fresh = (value: OrderedJson): unknown => (value instanceof OrderedObject ? {} : Array.isArray(value) ? [] : value);
  const top = fresh(root);
  const work: Array<[OrderedJson, unknown]> = [[root, top]];
  for (let pair = work.pop(); pair; pair = work.pop()) {
    const [src, dst] = pair;
    const place = (key: string | null, item: OrderedJson): void => {
      const out = fresh(item);
      if (out !== item) work.push([item, out]);
      if (key === null) (dst as unknown[]).push(out);
      // defineProperty: a "__proto__" member must stay data, as JSON.parse leaves it.
      else Object.defineProperty(dst, key, { value: out, writable: true, enumerable: true, configurable: true });
    };
    if (src instanceof OrderedObject) for (const [key, item] of src.entries()) place(key, item);
    else if (Array.isArray(src)) for (const item of src) place(null, item);
  }
  return top;
}

/** Serialises with members in their recorded order, which JSON.stringify of a plain object cannot. */
export function stringifyOrdered(root: OrderedJson): string {
  if (root instanceof OrderedObject) {
    return '{' + root.entries().map(([k, v]) => JSON.stringify(k) + ':' + stringifyOrdered(v)).join(',') + '}';
  }
  if (Array.isArray(root)) return '[' + root.map(stringifyOrdered).join(',') + ']';
  return JSON.stringify(root);
}
