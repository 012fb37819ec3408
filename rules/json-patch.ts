// RFC 6902 JSON Patch for row PATCHes (all six operations, decision GAP-12). The input document
// is copied once and the copy is patched: a failing operation discards the copy, so the row is
// either fully patched or untouched without any undo bookkeeping.

import { schemas } from '../generated/2026-09-21/schemas.js';
import { formatPointer, isPrefixPointer, parseArrayIndex, parsePointer } from './json-pointer.js';
import {
  cloneJson,
  deleteMember,
  getMember,
  hasMember,
  isJsonObject,
  jsonEqual,
  setMember,
  type JsonArray,
  type JsonObject,
  type JsonValue,
} from './json-value.js';

export type { JsonValue, JsonObject, JsonArray } from './json-value.js';

export const PATCH_OPS = ['add', 'remove', 'replace', 'move', 'copy', 'test'] as const;
export type PatchOp = (typeof PATCH_OPS)[number];

export type PatchOperation =
  | { readonly op: 'add' | 'replace' | 'test'; readonly path: string; readonly value: JsonValue }
  | { readonly op: 'remove'; readonly path: string }
  | { readonly op: 'move' | 'copy'; readonly from: string; readonly path: string };

/** The wrapper message is the contract's own (decision GAP-13), as the spec words it (decision KIT-20). */
export const PATCH_WRAPPER_MESSAGE: string = schemas.RowPatch['x-messages'].wrapper;

export interface PatchError {
  /** `invalid`: the operation is malformed; `failed`: it is well formed but cannot apply. */
  readonly kind: 'invalid' | 'failed';
  /** Zero-based, like the `/patch/N` pointer into the request body. */
  readonly index: number;
  readonly op: string | null;
  readonly path: string | null;
  readonly reason: string;
  /** Contract-facing text, e.g. `patch operation 1 (replace /answers/q9) failed: path not found`. */
  readonly message: string;
  /** Pointer into the request body naming the offending member, for `errors[].path`. */
  readonly field: string;
}

export type PatchResult =
  | { readonly ok: true; readonly doc: JsonValue }
  | { readonly ok: false; readonly error: PatchError };

export interface ApplyPatchOptions {
  /**
   * The contract says "Missing intermediate objects are created by an add"; RFC 6902 says such an
   * add fails. On, an `add` whose path runs through absent members of objects creates them as
   * empty objects. It never creates array elements, never replaces an existing non-container,
   * and applies to `add` only (not to the add half of move or copy).
   */
  readonly createIntermediates?: boolean;
}

function describe(index: number, op: string | null, path: string | null): string {
  return op !== null && path !== null
    ? `patch operation ${index} (${op} ${path === '' ? '""' : path})`
    : `patch operation ${index}`;
}

function patchError(
  kind: PatchError['kind'],
  index: number,
  op: string | null,
  path: string | null,
  field: string,
  reason: string,
): PatchError {
  const verb = kind === 'invalid' ? 'is invalid' : 'failed';
  return {
    kind,
    index,
    op,
    path,
    reason,
    field: `/patch/${index}${field}`,
    message: `${describe(index, op, path)} ${verb}: ${reason}`,
  };
}

type ShapeCheck = { ok: true; operation: PatchOperation } | { ok: false; error: PatchError };

/** Checks one operation's members; unknown members are ignored as RFC 6902 section 4 requires. */
export function validateOperation(raw: unknown, index: number): ShapeCheck {
  const fail = (field: string, reason: string, op: string | null = null, path: string | null = null): ShapeCheck => ({
    ok: false,
    error: patchError('invalid', index, op, path, field, reason),
  });
  if (!isJsonObject(raw)) return fail('', 'an operation must be an object');
  const op = getMember(raw, 'op');
  if (typeof op !== 'string' || !(PATCH_OPS as readonly string[]).includes(op)) {
    return fail('/op', `op must be one of ${PATCH_OPS.join(', ')}`);
  }
  const path = getMember(raw, 'path');
  if (typeof path !== 'string') return fail('/path', 'path must be a string holding a JSON Pointer', op);
  const parsedPath = parsePointer(path);
  if (!parsedPath.ok) return fail('/path', `path is not a JSON Pointer: ${parsedPath.reason}`, op, path);
  switch (op as PatchOp) {
    case 'add':
    case 'replace':
    case 'test': {
      // `value: null` is a value; only an absent member is missing.
      const value = getMember(raw, 'value');
      if (value === undefined) return fail('/value', `value is required for ${op}`, op, path);
      return { ok: true, operation: { op: op as 'add' | 'replace' | 'test', path, value } };
    }
    case 'remove':
      return { ok: true, operation: { op: 'remove', path } };
    case 'move':
    case 'copy': {
      const from = getMember(raw, 'from');
      if (typeof from !== 'string') {
        return fail('/from', `from must be a string holding a JSON Pointer for ${op}`, op, path);
      }
      const parsedFrom = parsePointer(from);
      if (!parsedFrom.ok) return fail('/from', `from is not a JSON Pointer: ${parsedFrom.reason}`, op, path);
      return { ok: true, operation: { op: op as 'move' | 'copy', from, path } };
    }
  }
}

export type PatchShapeResult =
  | { readonly ok: true; readonly patch: readonly PatchOperation[] }
  | {
      readonly ok: false;
      readonly message: string;
      readonly errors: readonly { readonly path: string; readonly message: string }[];
    };

/**
 * Checks a PATCH body: exactly `{"patch": [...]}` (decision GAP-13), then every operation. The
 * message is the first problem; `errors` lists every malformed operation for the error envelope.
 */
export function validatePatchShape(body: unknown): PatchShapeResult {
  if (!isJsonObject(body) || Object.keys(body).length !== 1 || !hasMember(body, 'patch')) {
    return { ok: false, message: PATCH_WRAPPER_MESSAGE, errors: [{ path: '', message: PATCH_WRAPPER_MESSAGE }] };
  }
  const list = body['patch'];
  if (!Array.isArray(list)) {
    const message = 'patch must be an array of JSON Patch operations';
    return { ok: false, message, errors: [{ path: '/patch', message }] };
  }
  const patch: PatchOperation[] = [];
  const errors: { path: string; message: string }[] = [];
  list.forEach((raw, index) => {
    const checked = validateOperation(raw, index);
    if (checked.ok) patch.push(checked.operation);
    else errors.push({ path: checked.error.field, message: checked.error.message });
  });
  const first = errors[0];
  if (first) return { ok: false, message: first.message, errors };
  return { ok: true, patch };
}

/** A failure while applying one operation; turned into a PatchError by the caller. */
class OpFailure {
  constructor(
    readonly reason: string,
    readonly field: '/path' | '/from' = '/path',
  ) {}
}

type Container = JsonArray | JsonObject;

function kindOf(value: JsonValue): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * The working copy lives in a box so that operations on the root (`""`) can swap it.
 */
interface Box {
  root: JsonValue;
}

/** Walks to the container holding the last token; creates absent object members when asked. */
function parentOf(box: Box, tokens: readonly string[], field: '/path' | '/from', create: boolean): Container {
  let node: JsonValue = box.root;
  for (let i = 0; i < tokens.length - 1; i++) {
    const token = tokens[i] as string;
    const here = formatPointer(tokens.slice(0, i));
    if (Array.isArray(node)) {
      const index = parseArrayIndex(token);
      if (index === null) throw new OpFailure(`"${token}" is not an array index at ${here || '/'}`, field);
      if (index >= node.length) throw new OpFailure(`path not found: ${formatPointer(tokens.slice(0, i + 1))}`, field);
      node = node[index] as JsonValue;
    } else if (isJsonObject(node)) {
      const next = getMember(node, token);
      if (next === undefined) {
        if (!create) throw new OpFailure(`path not found: ${formatPointer(tokens.slice(0, i + 1))}`, field);
        const made: JsonObject = {};
        setMember(node, token, made);
        node = made;
      } else {
        node = next;
      }
    } else {
      throw new OpFailure(`path not found: ${here} is ${kindOf(node)}`, field);
    }
  }
  if (node === null || typeof node !== 'object') {
    throw new OpFailure(`path not found: ${formatPointer(tokens.slice(0, -1))} is ${kindOf(node)}`, field);
  }
  return node;
}

function existingIndex(arr: JsonArray, token: string, field: '/path' | '/from'): number {
  if (token === '-') throw new OpFailure('"-" names the end of the array, not an element; only add may use it', field);
  const index = parseArrayIndex(token);
  if (index === null) throw new OpFailure(`"${token}" is not an array index`, field);
  if (index >= arr.length) throw new OpFailure(`index ${index} is out of bounds (array length ${arr.length})`, field);
  return index;
}

function readAt(box: Box, tokens: readonly string[], field: '/path' | '/from'): JsonValue {
  if (tokens.length === 0) return box.root;
  const parent = parentOf(box, tokens, field, false);
  const last = tokens[tokens.length - 1] as string;
  if (Array.isArray(parent)) return parent[existingIndex(parent, last, field)] as JsonValue;
  const value = getMember(parent, last);
  if (value === undefined) throw new OpFailure(`${field === '/from' ? 'from' : 'path'} not found`, field);
  return value;
}

function addAt(box: Box, tokens: readonly string[], value: JsonValue, create: boolean): void {
  if (tokens.length === 0) {
    box.root = value;
    return;
  }
  const parent = parentOf(box, tokens, '/path', create);
  const last = tokens[tokens.length - 1] as string;
  if (Array.isArray(parent)) {
    if (last === '-') {
      parent.push(value);
      return;
    }
    const index = parseArrayIndex(last);
    if (index === null) throw new OpFailure(`"${last}" is not an array index`);
    if (index > parent.length) throw new OpFailure(`index ${index} is out of bounds (array length ${parent.length})`);
    parent.splice(index, 0, value);
    return;
  }
  setMember(parent, last, value);
}

function removeAt(box: Box, tokens: readonly string[], field: '/path' | '/from'): JsonValue {
  if (tokens.length === 0) throw new OpFailure('the whole document cannot be removed', field);
  const parent = parentOf(box, tokens, field, false);
  const last = tokens[tokens.length - 1] as string;
  if (Array.isArray(parent)) {
    return parent.splice(existingIndex(parent, last, field), 1)[0] as JsonValue;
  }
  const value = getMember(parent, last);
  if (value === undefined) throw new OpFailure(`${field === '/from' ? 'from' : 'path'} not found`, field);
  deleteMember(parent, last);
  return value;
}

function replaceAt(box: Box, tokens: readonly string[], value: JsonValue): void {
  if (tokens.length === 0) {
    box.root = value;
    return;
  }
  const parent = parentOf(box, tokens, '/path', false);
  const last = tokens[tokens.length - 1] as string;
  if (Array.isArray(parent)) {
    parent[existingIndex(parent, last, '/path')] = value;
    return;
  }
  if (!hasMember(parent, last)) throw new OpFailure('path not found');
  // In place, so a replaced member keeps its position in the row's key order.
  setMember(parent, last, value);
}

function tokensOf(pointer: string): readonly string[] {
  const parsed = parsePointer(pointer);
  // validateOperation has already refused malformed pointers.
  if (!parsed.ok) throw new OpFailure(parsed.reason);
  return parsed.tokens;
}

function applyOne(box: Box, operation: PatchOperation, options: ApplyPatchOptions): void {
  const path = tokensOf(operation.path);
  switch (operation.op) {
    case 'add':
      addAt(box, path, cloneJson(operation.value), options.createIntermediates === true);
      return;
    case 'replace':
      replaceAt(box, path, cloneJson(operation.value));
      return;
    case 'remove':
      removeAt(box, path, '/path');
      return;
    case 'test':
      if (!jsonEqual(readAt(box, path, '/path'), operation.value)) {
        throw new OpFailure('the value at path differs');
      }
      return;
    case 'copy': {
      const from = tokensOf(operation.from);
      addAt(box, path, cloneJson(readAt(box, from, '/from')), false);
      return;
    }
    case 'move': {
      const from = tokensOf(operation.from);
      if (operation.from === operation.path) {
        readAt(box, from, '/from');
        return;
      }
      if (isPrefixPointer(from, path)) throw new OpFailure('a value cannot be moved into one of its own children');
      // RFC 6902 4.4: remove first, then add, so array indexes in `path` see the shortened array.
      addAt(box, path, removeAt(box, from, '/from'), false);
      return;
    }
  }
}

/**
 * Applies a patch without touching `doc` or `ops`: the result shares no object with either.
 * Every operation is checked for shape before any is applied, so a malformed last operation is
 * reported even when an earlier one would also fail.
 */
export function applyPatch(doc: JsonValue, ops: unknown, options: ApplyPatchOptions = {}): PatchResult {
  if (!Array.isArray(ops)) {
    return {
      ok: false,
      error: {
        kind: 'invalid',
        index: 0,
        op: null,
        path: null,
        reason: 'patch must be an array of operations',
        field: '/patch',
        message: 'patch must be an array of JSON Patch operations',
      },
    };
  }
  const operations: PatchOperation[] = [];
  for (let i = 0; i < ops.length; i++) {
    const checked = validateOperation(ops[i], i);
    if (!checked.ok) return checked;
    operations.push(checked.operation);
  }
  const box: Box = { root: cloneJson(doc) };
  for (let i = 0; i < operations.length; i++) {
    const operation = operations[i] as PatchOperation;
    try {
      applyOne(box, operation, options);
    } catch (caught) {
      if (!(caught instanceof OpFailure)) throw caught;
      return {
        ok: false,
        error: patchError('failed', i, operation.op, operation.path, caught.field, caught.reason),
      };
    }
  }
  return { ok: true, doc: box.root };
}
