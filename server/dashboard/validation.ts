/**
 * The dashboard's words for the request validator's failures (`ContractDefinition.validationRules`): the
 * validator checks bodies and queries against the dashboard spec, and these rules give each failure the
 * message the spec's descriptions name (decisions S-07, S-08, S-13, GAP-30, GAP-31). What a schema cannot
 * say (URL rules, state, the team) stays in the handlers.
 *
 * The validator reports every fault of a request; the first rule that matches one gives the answer. So
 * within one operation the rules are in the order a body with several faults is judged: a field refused
 * outright (an endpoint URL at registration, `status`, `hosting`) before any other unknown field, then the
 * fields in the order listed here, a missing field before a blank one.
 */
import type { OperationEntry } from '../http/routes.js';
import type { MappingRule, RefusedRequest, ValidationFailure } from '../http/validation-errors.js';
import { Problem } from '../http/problem.js';

type Field =
  /** A string that cannot be blank: required, type, blank (`minLength`, `pattern: \S`), length. */
  | { kind: 'text'; name: string; label?: string }
  /** A string or null. */
  | { kind: 'nullable'; name: string }
  /** One of the values of a spec enum schema (the message lists them). */
  | { kind: 'enum'; name: string; schema: string; code?: string }
  | { kind: 'email'; name: string }
  /** Any failure of the field answers one message. */
  | { kind: 'fixed'; name: string; code: string; message: string }
  /** A location's extid: blank and too long in the words of any text; other characters have their own. */
  | { kind: 'extid'; name: string }
  /** A Sandbox course ID: one that cannot be an ID names no course of the tool (404). */
  | { kind: 'sandbox_context'; name: string };

interface OperationRules {
  /** A required body that is absent: the answer an empty object would get. */
  absent?: { code: string; message: string };
  /** Fields the operation refuses with their own message (checked before unknown fields). */
  refused?: ReadonlyArray<{ name: string; code: string; message: string }>;
  fields: readonly Field[];
  /** Query parameters, in the order the handler reads them. */
  query?: readonly Field[];
}

const BLANK = ['minLength', 'pattern'];
const lengthOf = (f: ValidationFailure): string => /(\d+)/.exec(f.message)?.[1] ?? '';
const segment = (f: ValidationFailure): string => (f.path.split('/').pop() ?? '').replace(/~1/g, '/').replace(/~0/g, '~');

/** The refused value as the request carried it (a repeated query parameter: its last value). */
function valueSent(request: RefusedRequest, where: 'body' | 'query', name: string): unknown {
  const source = (where === 'body' ? request.body : request.query) as Record<string, unknown> | undefined;
  const value = source?.[name];
  return Array.isArray(value) && where === 'query' ? value[value.length - 1] : value;
}

type SpecObject = Record<string, unknown>;

function enumOf(spec: SpecObject, schema: string): string {
  const schemas = ((spec['components'] as SpecObject | undefined)?.['schemas'] ?? {}) as Record<string, { enum?: unknown[] }>;
  const values = schemas[schema]?.enum;
  if (!values) throw new Error(`dashboard spec: no enum schema ${schema}`);
  return `[${values.join(', ')}]`;
}

function fieldRules(spec: SpecObject, name: string, ops: (op: OperationEntry) => boolean, where: 'body' | 'query', field: Field, queryStatus: number): MappingRule[] {
  const path = `/${where}/${field.name}`;
  const label = field.kind === 'text' ? (field.label ?? field.name) : field.name;
  const base = { kind: 'message' as const, name: `${name} ${label}`, ops, path };
  const status = where === 'query' ? queryStatus : 422;
  switch (field.kind) {
    case 'text':
      return [
        { ...base, keywords: ['required'], status, code: 'field_required', message: `${label} is required` },
        { ...base, keywords: ['type'], status, code: 'invalid_type', message: `${label} must be a string` },
        { ...base, keywords: BLANK, status, code: 'field_blank', message: `${label} cannot be blank` },
        { ...base, keywords: ['maxLength'], status, code: 'too_long', message: (f) => `${label} must be at most ${lengthOf(f)} characters` },
      ];
    case 'nullable':
      return [
        { ...base, keywords: ['type'], status, code: 'invalid_type', message: `${label} must be a string or null` },
        { ...base, keywords: ['maxLength'], status, code: 'too_long', message: (f) => `${label} must be at most ${lengthOf(f)} characters` },
      ];
    case 'enum':
      return [
        { ...base, keywords: ['required'], status, code: 'field_required', message: `${label} is required` },
        { ...base, status, code: field.code ?? 'invalid_enum', message: `${label} must be one of ${enumOf(spec, field.schema)}` },
      ];
    case 'email':
      return [
        { ...base, keywords: ['required'], status, code: 'field_required', message: `${label} is required` },
        { ...base, status, code: 'invalid_email', message: `${label} must be an email address` },
      ];
    case 'fixed':
      return [{ ...base, status, code: field.code, message: field.message }];
    case 'extid':
      return [
        { ...base, keywords: ['required'], status, code: 'field_required', message: `${label} is required` },
        { ...base, keywords: ['type'], status, code: 'invalid_type', message: `${label} must be a string` },
        {
          kind: 'resolver',
          name: `${name} ${label} blank or long`,
          ops,
          path,
          resolve: (_failures, { body }) => {
            const value = (body as Record<string, unknown> | undefined)?.[field.name];
            if (typeof value !== 'string') return null;
            if (value.trim() === '') return new Problem(status, 'field_blank', `${label} cannot be blank`);
            if ([...value].length > 128) return new Problem(status, 'too_long', `${label} must be at most 128 characters`);
            return null;
          },
        },
        // What the resolver leaves (a character no extid has) falls through to the next rule.
        { ...base, status, code: 'invalid_extid', message: `${label} must be 1 to 128 letters, digits, '_' or '-'` },
      ];
    case 'sandbox_context':
      return [
        {
          ...base,
          status: 404,
          code: 'sandbox_context_not_found',
          message: (_failure, request) =>
            `context ${String(valueSent(request, where, field.name))} is not a Sandbox course of app ${request.params['app_id'] ?? ''}`,
        },
      ];
  }
}

const URL_FIELDS = ['callback_url', 'provision_url', 'locations_url'] as const;
const LOGO: Field = { kind: 'fixed', name: 'logo_url', code: 'url_not_https', message: 'logo_url must be an absolute https:// URL' };
const ID_QUERY = (name: string): Field => ({ kind: 'fixed', name, code: 'invalid_query', message: `${name} must be 1 to 64 letters, digits, '_' or '-'` });
const PAGE: readonly Field[] = [
  { kind: 'fixed', name: 'limit', code: 'invalid_limit', message: 'limit must be an integer from 1 to 100' },
  { kind: 'fixed', name: 'cursor', code: 'invalid_cursor', message: 'cursor is not valid for this list' },
];

const OPERATIONS: Readonly<Record<string, OperationRules>> = {
  listBuilders: { fields: [], query: PAGE },
  createBuilder: {
    absent: { code: 'field_required', message: 'name is required' },
    fields: [
      { kind: 'text', name: 'name' },
      { kind: 'email', name: 'email' },
    ],
  },
  createOperator: {
    absent: { code: 'field_required', message: 'name is required' },
    fields: [
      { kind: 'text', name: 'name' },
      { kind: 'email', name: 'email' },
    ],
  },
  listAuditLog: { fields: [], query: [ID_QUERY('app_id'), ...PAGE] },
  createSandboxSignedLaunch: {
    absent: { code: 'field_required', message: 'as is required' },
    fields: [{ kind: 'enum', name: 'as', schema: 'SandboxRole' }],
  },
  listApps: {
    fields: [],
    query: [{ kind: 'enum', name: 'status', schema: 'AppStatus', code: 'invalid_status' }, ...PAGE],
  },
  registerApp: {
    absent: { code: 'field_required', message: 'name is required' },
    // Decision GAP-31: endpoint URLs are set in the settings, and the refusal says so.
    refused: URL_FIELDS.map((name) => ({
      name,
      code: 'endpoint_url_at_registration',
      message: `${name} is not accepted at registration; set it in the tool's settings`,
    })),
    fields: [
      { kind: 'text', name: 'name' },
      { kind: 'enum', name: 'hosting', schema: 'Hosting' },
      { kind: 'enum', name: 'contract_version', schema: 'ContractVersion' },
      { kind: 'nullable', name: 'description' },
      LOGO,
    ],
  },
  updateAppSettings: {
    absent: { code: 'invalid_body', message: 'the request body must be a JSON object' },
    // Decision GAP-30.
    refused: [
      { name: 'status', code: 'status_read_only', message: 'status is changed only by the platform team' },
      { name: 'hosting', code: 'hosting_permanent', message: 'hosting mode is permanent' },
    ],
    fields: [
      { kind: 'text', name: 'name' },
      { kind: 'nullable', name: 'description' },
      LOGO,
      { kind: 'enum', name: 'contract_version', schema: 'ContractVersion' },
      // Not a string: the first URL rule (absolute https://) already fails.
      ...URL_FIELDS.map((name): Field => ({ kind: 'fixed', name, code: 'url_not_https', message: `${name} must be an absolute https:// URL` })),
    ],
  },
  addAppBuilder: {
    absent: { code: 'field_required', message: 'email is required' },
    fields: [{ kind: 'email', name: 'email' }],
  },
  listAppGrades: { fields: [], query: [ID_QUERY('context_id'), ID_QUERY('location_id'), ID_QUERY('member_id'), ...PAGE] },
  putSandboxSchool: {
    absent: { code: 'invalid_type', message: 'grants_line_item_scope must be a boolean' },
    fields: [{ kind: 'fixed', name: 'grants_line_item_scope', code: 'invalid_type', message: 'grants_line_item_scope must be a boolean' }],
  },
  openSandboxPicker: { fields: [{ kind: 'sandbox_context', name: 'context_id' }] },
  listSandboxPlacements: { fields: [], query: [{ kind: 'sandbox_context', name: 'context_id' }] },
  createSandboxPlacement: {
    absent: { code: 'field_required', message: 'extid is required' },
    fields: [
      { kind: 'extid', name: 'extid' },
      { kind: 'text', name: 'label' },
      { kind: 'sandbox_context', name: 'context_id' },
    ],
  },
  createSandboxLaunch: {
    absent: { code: 'field_required', message: 'as is required' },
    fields: [{ kind: 'enum', name: 'as', schema: 'SandboxRole' }],
  },
  createSandboxCopy: {
    fields: [
      { kind: 'fixed', name: 'course', code: 'invalid_type', message: 'course must be an object' },
      { kind: 'text', name: 'course/name', label: 'course.name' },
      { kind: 'fixed', name: 'course/label', code: 'invalid_type', message: 'course.label must be a string of at most 200 characters or null' },
      { kind: 'sandbox_context', name: 'parent_context' },
    ],
  },
  getSandboxGradebook: { fields: [], query: [{ kind: 'sandbox_context', name: 'context_id' }] },
};

/** Tried before the shared table; `spec` is the served dashboard spec (enum values are read from it). */
export function dashboardValidationRules(spec: SpecObject): readonly MappingRule[] {
  const rules: MappingRule[] = [];
  for (const [id, op] of Object.entries(OPERATIONS)) {
    const ops = (entry: OperationEntry): boolean => entry.id === id;
    rules.push({ kind: 'message', name: `${id} body`, ops, path: '/body', keywords: ['type'], status: 422, code: 'invalid_body', message: 'the request body must be a JSON object' });
    if (op.absent) {
      rules.push({ kind: 'message', name: `${id} absent`, ops, path: '/body', keywords: ['required'], status: 422, ...op.absent });
    }
    for (const refused of op.refused ?? []) {
      rules.push({ kind: 'message', name: `${id} ${refused.name}`, ops, path: `/body/${refused.name}`, keywords: ['additionalProperties'], status: 422, code: refused.code, message: refused.message });
    }
    rules.push({ kind: 'message', name: `${id} unknown`, ops, path: '/body/*', keywords: ['additionalProperties'], status: 422, code: 'unknown_field', message: (f) => `unknown field: ${segment(f)}` });
    rules.push({ kind: 'message', name: `${id} unknown nested`, ops, path: '/body/*/*', keywords: ['additionalProperties'], status: 422, code: 'unknown_field', message: (f) => `unknown field: ${f.path.split('/').slice(2).join('.')}` });
    for (const field of op.fields) rules.push(...fieldRules(spec, id, ops, 'body', field, 422));
    for (const field of op.query ?? []) rules.push(...fieldRules(spec, id, ops, 'query', field, 400));
  }
  return rules;
}
