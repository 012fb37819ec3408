/**
 * Breaking changes between two bundles of one published contract (decision KIT-06). No maintained npm tool
 * reads OpenAPI 3.1 for this (oasdiff is a Go binary; openapi-diff stops at 3.0), so the rules are here, on
 * the bundled specs `npm run generate` writes, and they are the ones a tool notices:
 *
 *   what a tool sends (request parameters and bodies; a webhook's answer, which the tool writes)
 *     may not become stricter: no new required field or parameter, no narrower type, enum, limit or pattern,
 *     no property dropped where unknown properties are refused;
 *   what a tool receives (responses; a webhook's request, which the tool reads)
 *     may not become looser or lose anything: no property or success status dropped, no field that stops
 *     being required, no new enum value, no wider type;
 *   and no operation, webhook or content type disappears.
 *
 * Additions that keep old tools working (a new operation, an optional request field, a new response field,
 * a new error status) pass. Each finding names the place, so the answer to one is a new contract version
 * (a new folder in openapi/), not an edit to a published one.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** `request`: the tool writes it, so the contract may only accept more. `response`: the tool reads it. */
type Direction = 'request' | 'response';

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

function resolve(doc: JsonObject, value: Json | undefined): Json | undefined {
  let current = value;
  for (let hops = 0; isObject(current) && typeof current.$ref === 'string' && hops < 32; hops += 1) {
    const ref = current.$ref;
    if (!ref.startsWith('#/')) return current;
    let target: Json | undefined = doc;
    for (const token of ref.slice(2).split('/')) {
      const key = token.replace(/~1/g, '/').replace(/~0/g, '~');
      target = isObject(target) ? target[key] : undefined;
    }
    current = target;
  }
  return current;
}

function typesOf(schema: JsonObject): Set<string> | undefined {
  const type = schema.type;
  if (typeof type === 'string') return new Set(type === 'integer' ? ['integer'] : [type]);
  if (Array.isArray(type)) return new Set(type.filter((t): t is string => typeof t === 'string'));
  if ('const' in schema) return undefined;
  return undefined;
}

/** Every value of `a` is allowed by `b` (integer counts as allowed by number). */
function typesWithin(a: Set<string>, b: Set<string>): boolean {
  return [...a].every((t) => b.has(t) || (t === 'integer' && b.has('number')));
}

const LOWER_BOUNDS = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties'] as const;
const UPPER_BOUNDS = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties'] as const;

class Differ {
  readonly findings: string[] = [];
  private readonly seen = new Set<string>();

  constructor(
    private readonly before: JsonObject,
    private readonly after: JsonObject,
  ) {}

  private report(where: string, what: string): void {
    this.findings.push(`${where}: ${what}`);
  }

  schema(where: string, beforeRaw: Json | undefined, afterRaw: Json | undefined, direction: Direction): void {
    // A pair of $refs compared once per direction: recursive schemas end, and a shared schema is reported once.
    const refs = `${isObject(beforeRaw) ? String(beforeRaw.$ref ?? '') : ''}|${isObject(afterRaw) ? String(afterRaw.$ref ?? '') : ''}`;
    if (refs !== '|') {
      const key = `${direction}:${refs}`;
      if (this.seen.has(key)) return;
      this.seen.add(key);
    }
    const before = resolve(this.before, beforeRaw);
    const after = resolve(this.after, afterRaw);
    if (!isObject(before) || !isObject(after)) return;
    const here = refs !== '|' && isObject(afterRaw) && typeof afterRaw.$ref === 'string' ? afterRaw.$ref.replace('#/components/schemas/', '') : where;

    const beforeTypes = typesOf(before);
    const afterTypes = typesOf(after);
    if (beforeTypes && afterTypes) {
      if (direction === 'request' && !typesWithin(beforeTypes, afterTypes)) {
        this.report(here, `type narrowed from ${[...beforeTypes].join('|')} to ${[...afterTypes].join('|')}`);
      }
      if (direction === 'response' && !typesWithin(afterTypes, beforeTypes)) {
        this.report(here, `type widened from ${[...beforeTypes].join('|')} to ${[...afterTypes].join('|')}`);
      }
    } else if (direction === 'request' && !beforeTypes && afterTypes) {
      this.report(here, `type restricted to ${[...afterTypes].join('|')}`);
    }

    const beforeEnum = Array.isArray(before.enum) ? before.enum.map((v) => JSON.stringify(v)) : undefined;
    const afterEnum = Array.isArray(after.enum) ? after.enum.map((v) => JSON.stringify(v)) : undefined;
    if (direction === 'request') {
      if (afterEnum && !beforeEnum) this.report(here, `values restricted to ${afterEnum.join(', ')}`);
      if (afterEnum && beforeEnum) {
        const removed = beforeEnum.filter((v) => !afterEnum.includes(v));
        if (removed.length > 0) this.report(here, `enum values no longer accepted: ${removed.join(', ')}`);
      }
    } else if (beforeEnum) {
      const added = afterEnum ? afterEnum.filter((v) => !beforeEnum.includes(v)) : ['any value'];
      if (added.length > 0) this.report(here, `new enum values a tool may receive: ${added.join(', ')}`);
    }
    if ('const' in before || 'const' in after) {
      if (JSON.stringify(before.const) !== JSON.stringify(after.const)) this.report(here, 'const changed');
    }

    // Limits: a request may not get tighter; a response may not get looser.
    for (const key of LOWER_BOUNDS) {
      const b = before[key];
      const a = after[key];
      const tighter = typeof a === 'number' && (typeof b !== 'number' || a > b);
      const looser = typeof b === 'number' && (typeof a !== 'number' || a < b);
      if (direction === 'request' && tighter) this.report(here, `${key} raised to ${String(a)}`);
      if (direction === 'response' && looser) this.report(here, `${key} lowered from ${String(b)}`);
    }
    for (const key of UPPER_BOUNDS) {
      const b = before[key];
      const a = after[key];
      const tighter = typeof a === 'number' && (typeof b !== 'number' || a < b);
      const looser = typeof b === 'number' && (typeof a !== 'number' || a > b);
      if (direction === 'request' && tighter) this.report(here, `${key} lowered to ${String(a)}`);
      if (direction === 'response' && looser) this.report(here, `${key} raised from ${String(b)}`);
    }
    if (before.pattern !== after.pattern && (direction === 'request' ? after.pattern !== undefined : before.pattern !== undefined)) {
      this.report(here, `pattern changed from ${JSON.stringify(before.pattern ?? null)} to ${JSON.stringify(after.pattern ?? null)}`);
    }
    if (before.format !== after.format && (direction === 'request' ? after.format !== undefined : before.format !== undefined)) {
      this.report(here, `format changed from ${String(before.format ?? 'none')} to ${String(after.format ?? 'none')}`);
    }

    // Object members.
    const beforeProps = isObject(before.properties) ? before.properties : {};
    const afterProps = isObject(after.properties) ? after.properties : {};
    const beforeRequired = new Set(Array.isArray(before.required) ? (before.required as string[]) : []);
    const afterRequired = new Set(Array.isArray(after.required) ? (after.required as string[]) : []);
    const closed = (schema: JsonObject): boolean => schema.additionalProperties === false || schema.unevaluatedProperties === false;
    for (const name of Object.keys(beforeProps)) {
      if (!(name in afterProps)) {
        if (direction === 'response') this.report(`${here}.${name}`, 'property removed');
        else if (closed(after)) this.report(`${here}.${name}`, 'property removed and unknown properties are refused');
      }
    }
    for (const name of afterRequired) {
      if (direction === 'request' && !beforeRequired.has(name)) this.report(`${here}.${name}`, 'now required');
    }
    for (const name of beforeRequired) {
      if (direction === 'response' && !afterRequired.has(name)) this.report(`${here}.${name}`, 'no longer always present');
    }
    if (direction === 'request' && closed(after) && !closed(before)) this.report(here, 'unknown properties now refused');
    for (const [name, schema] of Object.entries(afterProps)) {
      if (name in beforeProps) this.schema(`${here}.${name}`, beforeProps[name], schema, direction);
    }
    if (isObject(before.additionalProperties) && isObject(after.additionalProperties)) {
      this.schema(`${here}.*`, before.additionalProperties, after.additionalProperties, direction);
    }
    if (before.items !== undefined && after.items !== undefined) this.schema(`${here}[]`, before.items, after.items, direction);

    // Compositions: members compared by position; a changed count is reported rather than guessed at.
    for (const key of ['allOf', 'oneOf', 'anyOf'] as const) {
      const b = Array.isArray(before[key]) ? (before[key] as Json[]) : [];
      const a = Array.isArray(after[key]) ? (after[key] as Json[]) : [];
      if (b.length === 0 && a.length === 0) continue;
      const fewer = key === 'allOf' ? (direction === 'request' ? a.length > b.length : a.length < b.length) : direction === 'request' ? a.length < b.length : a.length > b.length;
      if (a.length !== b.length && fewer) this.report(here, `${key} changed from ${b.length} to ${a.length} members`);
      for (let i = 0; i < Math.min(a.length, b.length); i += 1) this.schema(`${here}.${key}[${i}]`, b[i], a[i], direction);
    }
  }

  content(where: string, before: Json | undefined, after: Json | undefined, direction: Direction): void {
    const b = resolve(this.before, before);
    const a = resolve(this.after, after);
    const beforeContent = isObject(b) && isObject(b.content) ? b.content : {};
    const afterContent = isObject(a) && isObject(a.content) ? a.content : {};
    for (const [type, media] of Object.entries(beforeContent)) {
      const next = afterContent[type];
      if (next === undefined) {
        this.report(where, `content type ${type} removed`);
        continue;
      }
      this.schema(`${where} ${type}`, isObject(media) ? media.schema : undefined, isObject(next) ? next.schema : undefined, direction);
    }
  }

  /** One operation. `sends` is what the tool writes (an operation's request; a webhook's response). */
  operation(where: string, before: JsonObject, after: JsonObject, webhook: boolean): void {
    const sends: Direction = webhook ? 'response' : 'request';
    const reads: Direction = webhook ? 'request' : 'response';
    if (!webhook) {
      const params = (op: JsonObject, doc: JsonObject): Map<string, JsonObject> => {
        const found = new Map<string, JsonObject>();
        for (const raw of Array.isArray(op.parameters) ? op.parameters : []) {
          const p = resolve(doc, raw);
          if (isObject(p) && typeof p.name === 'string' && typeof p.in === 'string') found.set(`${p.in} ${p.name}`, p);
        }
        return found;
      };
      const beforeParams = params(before, this.before);
      const afterParams = params(after, this.after);
      for (const [key, p] of afterParams) {
        const old = beforeParams.get(key);
        if (p.required === true && old?.required !== true) this.report(`${where} parameter ${key}`, old ? 'now required' : 'new required parameter');
        if (old) this.schema(`${where} parameter ${key}`, old.schema, p.schema, 'request');
      }
      const bodyBefore = resolve(this.before, before.requestBody);
      const bodyAfter = resolve(this.after, after.requestBody);
      if (isObject(bodyAfter) && bodyAfter.required === true && !(isObject(bodyBefore) && bodyBefore.required === true)) {
        this.report(`${where} request body`, 'now required');
      }
      this.content(`${where} request body`, before.requestBody, after.requestBody, 'request');
    } else {
      this.content(`${where} request`, before.requestBody, after.requestBody, reads);
    }
    const beforeResponses = isObject(before.responses) ? before.responses : {};
    const afterResponses = isObject(after.responses) ? after.responses : {};
    for (const [status, response] of Object.entries(beforeResponses)) {
      const next = afterResponses[status];
      if (next === undefined) {
        if (status.startsWith('2')) this.report(`${where} ${status}`, 'success response removed');
        continue;
      }
      this.content(`${where} ${status}`, response, next, webhook ? sends : reads);
    }
  }

  paths(section: 'paths' | 'webhooks'): void {
    const before = isObject(this.before[section]) ? this.before[section] : {};
    const after = isObject(this.after[section]) ? this.after[section] : {};
    for (const [path, itemRaw] of Object.entries(before)) {
      const item = resolve(this.before, itemRaw);
      const next = resolve(this.after, after[path]);
      for (const method of METHODS) {
        const op = isObject(item) ? item[method] : undefined;
        if (!isObject(op)) continue;
        const where = `${section === 'webhooks' ? 'webhook ' : ''}${method.toUpperCase()} ${path}`;
        const nextOp = isObject(next) ? next[method] : undefined;
        if (!isObject(nextOp)) {
          this.report(where, section === 'webhooks' ? 'webhook removed' : 'operation removed');
          continue;
        }
        this.operation(where, op, nextOp, section === 'webhooks');
      }
    }
  }
}

/** The breaking changes from `before` to `after` (two bundles of the same contract), one line each. */
export function breakingChanges(before: unknown, after: unknown): string[] {
  if (!isObject(before) || !isObject(after)) throw new TypeError('breakingChanges takes two OpenAPI documents');
  const differ = new Differ(before, after);
  differ.paths('paths');
  differ.paths('webhooks');
  return [...new Set(differ.findings)];
}
