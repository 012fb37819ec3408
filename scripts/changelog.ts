/**
 * What changed between two contract versions, computed from their bundled specs (generated/<v>/openapi.json)
 * rather than written by hand, so the changelog cannot drift from the specs.
 *
 * A property rename is declared by the spec authors with `x-replaces: <dotted old path>` on the NEW property
 * (e.g. `resource_link` has `x-replaces: resource_link_id`). The old path is read relative to the schema
 * being compared (`user.role` in LaunchClaims), or, when it names no property there, as a sibling of the
 * new property (so the same `x-replaces: user.role` also reads right in a nested `UserClaim` component).
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

export interface OperationRef {
  /** Upper case, e.g. `POST`. */
  method: string;
  path: string;
  operationId: string | null;
  summary: string | null;
}

export interface WebhookRef {
  name: string;
  method: string;
  operationId: string | null;
  summary: string | null;
}

export interface Rename {
  from: string;
  to: string;
}

export interface SchemaChange {
  /** The component name under `components.schemas`. */
  name: string;
  /**
   * Dotted property paths; `[]` marks array items, e.g. `locations[].extid`. A subtree added or removed as a
   * whole is listed by its top path only.
   */
  added: string[];
  removed: string[];
  renamed: Rename[];
}

export interface ContractDiff {
  older: { title: string; version: string };
  newer: { title: string; version: string };
  operations: {
    /** By method and path. */
    added: OperationRef[];
    removed: OperationRef[];
  };
  operationIds: {
    added: string[];
    removed: string[];
  };
  webhooks: {
    added: WebhookRef[];
    removed: WebhookRef[];
  };
  schemas: {
    /** Component names only in the newer document. */
    added: string[];
    /** Component names only in the older document. */
    removed: string[];
    /** Components in both whose properties changed, in the newer document's order. */
    changed: SchemaChange[];
  };
}

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function str(value: Json | undefined): string | null {
  return typeof value === 'string' ? value : null;
}

function listPathOperations(doc: JsonObject): OperationRef[] {
  const paths = isObject(doc['paths']) ? doc['paths'] : {};
  const out: OperationRef[] = [];
  for (const [path, item] of Object.entries(paths)) {
    if (!isObject(item)) continue;
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      out.push({ method: method.toUpperCase(), path, operationId: str(op['operationId']), summary: str(op['summary']) });
    }
  }
  return out;
}

function listWebhooks(doc: JsonObject): WebhookRef[] {
  const hooks = isObject(doc['webhooks']) ? doc['webhooks'] : {};
  const out: WebhookRef[] = [];
  for (const [name, item] of Object.entries(hooks)) {
    if (!isObject(item)) continue;
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      out.push({ name, method: method.toUpperCase(), operationId: str(op['operationId']), summary: str(op['summary']) });
    }
  }
  return out;
}

/** Follows a local `#/...` reference inside `doc`. */
function resolveLocal(doc: JsonObject, ref: string): Json | undefined {
  if (!ref.startsWith('#/')) return undefined;
  let node: Json | undefined = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(node)) node = node[Number(key)];
    else if (isObject(node)) node = node[key];
    else return undefined;
  }
  return node;
}

interface PropertyInfo {
  /** `x-replaces` of the property, as written (one path or several). */
  replaces: string[];
}

/**
 * Every property path reachable from `schema`: `properties` (nested objects give dotted paths), array `items`
 * (`[]`), and the branches of `allOf`, `oneOf` and `anyOf` (a nullable claim is usually `oneOf` with null).
 * `$ref`s are followed inside the same document; a schema already on the walk is not entered twice.
 */
function collectProperties(doc: JsonObject, schema: Json | undefined): Map<string, PropertyInfo> {
  const found = new Map<string, PropertyInfo>();
  const walk = (node: Json | undefined, prefix: string, onStack: Set<string>): void => {
    if (!isObject(node)) return;
    const ref = str(node['$ref']);
    if (ref !== null) {
      if (onStack.has(ref)) return;
      walk(resolveLocal(doc, ref), prefix, new Set(onStack).add(ref));
      // In OpenAPI 3.1 a $ref may have siblings; fall through to read them too.
    }
    for (const key of ['allOf', 'oneOf', 'anyOf'] as const) {
      const branches = node[key];
      if (Array.isArray(branches)) for (const branch of branches) walk(branch, prefix, onStack);
    }
    const items = node['items'];
    if (isObject(items)) walk(items, `${prefix}[]`, onStack);
    const properties = node['properties'];
    if (isObject(properties)) {
      for (const [name, child] of Object.entries(properties)) {
        const path = prefix === '' ? name : `${prefix}.${name}`;
        const info = found.get(path) ?? { replaces: [] };
        const replaces = isObject(child) ? child['x-replaces'] : undefined;
        if (typeof replaces === 'string') info.replaces.push(replaces);
        if (Array.isArray(replaces)) for (const r of replaces) if (typeof r === 'string') info.replaces.push(r);
        found.set(path, info);
        walk(child, path, onStack);
      }
    }
  };
  walk(schema, '', new Set());
  return found;
}

function parentOf(path: string): string {
  const cut = path.lastIndexOf('.');
  return cut < 0 ? '' : path.slice(0, cut);
}

function lastSegment(path: string): string {
  const cut = path.lastIndexOf('.');
  return cut < 0 ? path : path.slice(cut + 1);
}

/** Where an `x-replaces` value points in the older schema, or null when it names nothing there. */
function resolveReplaces(replaces: string, newPath: string, olderPaths: ReadonlySet<string>): string | null {
  if (olderPaths.has(replaces)) return replaces;
  const parent = parentOf(newPath);
  const sibling = parent === '' ? lastSegment(replaces) : `${parent}.${lastSegment(replaces)}`;
  return olderPaths.has(sibling) ? sibling : null;
}

export function diffSchema(name: string, olderDoc: JsonObject, older: Json, newerDoc: JsonObject, newer: Json): SchemaChange {
  const before = collectProperties(olderDoc, older);
  const after = collectProperties(newerDoc, newer);
  const beforePaths = new Set(before.keys());
  let added = [...after.keys()].filter((p) => !before.has(p));
  let removed = [...before.keys()].filter((p) => !after.has(p));
  const renamed: Rename[] = [];
  for (const to of [...added]) {
    for (const replaces of after.get(to)?.replaces ?? []) {
      const from = resolveReplaces(replaces, to, beforePaths);
      // A rename is only a rename when the old path is gone; if it is still there, the new property is an
      // addition beside it and `x-replaces` documents intent only.
      if (from === null || after.has(from)) continue;
      renamed.push({ from, to });
      added = added.filter((p) => p !== to);
      removed = removed.filter((p) => p !== from);
      // Children carried over under the new name are part of the rename, not additions and removals.
      for (const child of removed.filter((p) => p.startsWith(`${from}.`) || p.startsWith(`${from}[]`))) {
        const moved = `${to}${child.slice(from.length)}`;
        if (added.includes(moved)) {
          added = added.filter((p) => p !== moved);
          removed = removed.filter((p) => p !== child);
        }
      }
      break;
    }
  }
  // A property added (or removed) with its whole subtree is one change: list the top of the subtree only.
  const topmost = (paths: string[]): string[] =>
    paths.filter((p) => !paths.some((q) => q !== p && (p.startsWith(`${q}.`) || p.startsWith(`${q}[]`))));
  return { name, added: topmost(added), removed: topmost(removed), renamed };
}

function docInfo(doc: JsonObject): { title: string; version: string } {
  const info = isObject(doc['info']) ? doc['info'] : {};
  return { title: str(info['title']) ?? '', version: str(info['version']) ?? '' };
}

/**
 * The difference from `older` to `newer`, two bundled OpenAPI documents. Pure: reads its arguments only.
 */
export function diffContracts(older: JsonObject, newer: JsonObject): ContractDiff {
  const opKey = (op: OperationRef): string => `${op.method} ${op.path}`;
  const olderOps = listPathOperations(older);
  const newerOps = listPathOperations(newer);
  const olderOpKeys = new Set(olderOps.map(opKey));
  const newerOpKeys = new Set(newerOps.map(opKey));
  const ids = (ops: OperationRef[]): string[] => ops.map((o) => o.operationId).filter((id): id is string => id !== null);
  const olderIds = new Set(ids(olderOps));
  const newerIds = new Set(ids(newerOps));

  const hookKey = (h: WebhookRef): string => `${h.method} ${h.name}`;
  const olderHooks = listWebhooks(older);
  const newerHooks = listWebhooks(newer);
  const olderHookKeys = new Set(olderHooks.map(hookKey));
  const newerHookKeys = new Set(newerHooks.map(hookKey));

  const schemasOf = (doc: JsonObject): JsonObject => {
    const components = doc['components'];
    return isObject(components) && isObject(components['schemas']) ? components['schemas'] : {};
  };
  const olderSchemas = schemasOf(older);
  const newerSchemas = schemasOf(newer);
  const changed: SchemaChange[] = [];
  for (const [name, schema] of Object.entries(newerSchemas)) {
    const before = olderSchemas[name];
    if (before === undefined) continue;
    const change = diffSchema(name, older, before, newer, schema);
    if (change.added.length + change.removed.length + change.renamed.length > 0) changed.push(change);
  }

  return {
    older: docInfo(older),
    newer: docInfo(newer),
    operations: {
      added: newerOps.filter((o) => !olderOpKeys.has(opKey(o))),
      removed: olderOps.filter((o) => !newerOpKeys.has(opKey(o))),
    },
    operationIds: {
      added: [...newerIds].filter((id) => !olderIds.has(id)),
      removed: [...olderIds].filter((id) => !newerIds.has(id)),
    },
    webhooks: {
      added: newerHooks.filter((h) => !olderHookKeys.has(hookKey(h))),
      removed: olderHooks.filter((h) => !newerHookKeys.has(hookKey(h))),
    },
    schemas: {
      added: Object.keys(newerSchemas).filter((n) => !(n in olderSchemas)),
      removed: Object.keys(olderSchemas).filter((n) => !(n in newerSchemas)),
      changed,
    },
  };
}

/** Whether the diff records nothing at all. */
export function isEmptyDiff(diff: ContractDiff): boolean {
  return (
    diff.operations.added.length +
      diff.operations.removed.length +
      diff.operationIds.added.length +
      diff.operationIds.removed.length +
      diff.webhooks.added.length +
      diff.webhooks.removed.length +
      diff.schemas.added.length +
      diff.schemas.removed.length +
      diff.schemas.changed.length ===
    0
  );
}
