/**
 * The archived contracts' own words for their management and grade operations (decisions S-14, S-15,
 * GAP-40 to GAP-43), and the validator-failure table that answers with them. The request validator sees a
 * bad body first; the handlers check the same rules again with the same messages before anything is
 * written, so a body is never acted on under a looser reading than the table's.
 */
import { schemas as archived0825 } from '../../../generated/2026-08-25/schemas.js';
import { schemas as archived0819 } from '../../../generated/2026-08-19/schemas.js';
import { fillMessage } from '../../../rules/messages.js';
import { Problem } from '../../http/problem.js';
import type { MappingRule, ValidationFailure } from '../../http/validation-errors.js';
import { MAPPING_RULES } from '../../http/validation-errors.js';
import type { OperationEntry } from '../../http/routes.js';
import type { ArchivedVersion } from './version.js';

// Both archived contracts state the same location types; a spec edit that parts them fails to compile here.
export const LOCATION_TYPES: typeof archived0819.LocationType.enum = archived0825.LocationType.enum;

// The archived contracts' messages are `x-messages` of their spec elements (decision KIT-23). Where both
// contracts state a message, they must state it alike, since one table answers for both: a spec edit that
// parts them fails to compile here. The extid messages exist only in 2026-08-25, `params` and `order` only in
// 2026-08-19, so those are read from the one contract that has the field.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const app = archived0825.AppUpdate['x-messages'];
const location = archived0825.LegacyLocation['x-messages'];
const grade = archived0825.GradeRecord['x-messages'];
const gradeBody = archived0825.GradeSubmission['x-messages'];
const extid = { ...archived0825.LocationCreate['x-messages'], ...archived0825.LocationUpdate['x-messages'] };
const legacyLocationFields = archived0819.LocationCreate['x-messages'];
const ORDER = archived0819.LocationCreate.properties.order;
export const SAME_IN_BOTH_CONTRACTS: readonly true[] = [
  true satisfies Same<typeof app, typeof archived0819.AppUpdate['x-messages']>,
  true satisfies Same<typeof location, typeof archived0819.LegacyLocation['x-messages']>,
  true satisfies Same<typeof grade, typeof archived0819.GradeRecord['x-messages']>,
  true satisfies Same<typeof gradeBody, typeof archived0819.GradeSubmission['x-messages']>,
  true satisfies Same<(typeof extid)['location_type'], (typeof legacyLocationFields)['location_type']>,
];

export const ARCHIVED_MESSAGES = {
  notAnObject: app.not_an_object,
  nameBlank: app.name_blank,
  notAString: (field: string) => fillMessage(app.not_a_string, { name: field }),
  notHttps: (field: string) => fillMessage(app.not_https, { name: field }),
  notPublic: (field: string) => fillMessage(app.not_public, { name: field }),
  gradesReleased: app.grades_released,
  readOnly: (field: string) => fillMessage(app.read_only, { name: field }),
  unknownField: (field: string) => fillMessage(app.unknown_field, { name: field }),
  extidRequired: extid.extid_required,
  extidInvalid: extid.extid_invalid,
  extidTaken: (value: string) => fillMessage(extid.extid_taken, { extid: value }),
  extidPermanent: extid.extid_permanent,
  locationType: fillMessage(extid.location_type, { values: LOCATION_TYPES.join(', ') }),
  params: legacyLocationFields.params,
  order: legacyLocationFields.order_not_integer,
  orderRange: fillMessage(legacyLocationFields.order_range, { minimum: ORDER.minimum, maximum: ORDER.maximum }),
  homeLocation: location.home_location,
  locationNotFound: location.not_found,
  launchIdRequired: gradeBody.launch_id_required,
  launchIdNotAString: gradeBody.launch_id_not_a_string,
  launchNotFound: gradeBody.launch_not_found,
  gradeNotFound: grade.not_found,
  notAssessment: gradeBody.not_assessment,
  noGradePassback: gradeBody.no_grade_passback,
} as const;

export const EXTID_PATTERN = new RegExp(archived0825.LocationCreate.properties.extid.pattern);

/** Fields of the app object that exist but cannot be written (S-14, GAP-41). */
export const APP_READ_ONLY = ['id', 'status', 'api_key_hint', 'locations', 'created'] as const;
/** Location fields that exist but cannot be written; `is_default` exists only in 2026-08-19. */
export const LOCATION_READ_ONLY = ['id', 'is_default'] as const;

export function unprocessable(code: string, detail: string, field?: string): Problem {
  return new Problem(422, code, detail, field === undefined ? {} : { errors: [{ path: `/body/${field}`, message: detail }] });
}

/** `NAME is read-only` for a field of the resource, `unknown field: NAME` for anything else. */
export function extraFieldProblem(field: string, readOnly: readonly string[]): Problem {
  return readOnly.includes(field)
    ? unprocessable('read_only_field', ARCHIVED_MESSAGES.readOnly(field), field)
    : unprocessable('unknown_field', ARCHIVED_MESSAGES.unknownField(field), field);
}

// --- the validator's failures ----------------------------------------------------------------------

const isGrade = (op: OperationEntry): boolean => op.tag === 'Grades';
const isManagement = (op: OperationEntry): boolean => op.tag === 'Management';
const isAppOp = (op: OperationEntry): boolean => op.path === '/v1/apps/me';
const isLocationOp = (op: OperationEntry): boolean => isManagement(op) && op.path.startsWith('/v1/apps/me/locations');

const fieldOf = (f: ValidationFailure): string => (f.path.split('/')[2] ?? '').replace(/~1/g, '/').replace(/~0/g, '~');

/** The score rules of the current contract's table, which the grade body shares word for word (NS-20). */
const SCORE_RULE_NAMES = new Set([
  'score range',
  'max_score positive',
  'activity_progress',
  'grading_progress',
  'score required',
  'score number',
  'max_score number',
  'comment string',
  'score unknown field',
  'score body object',
]);
const gradeScoreRules: MappingRule[] = MAPPING_RULES.filter((rule) => SCORE_RULE_NAMES.has(rule.name)).map((rule) => ({
  ...rule,
  name: `grade ${rule.name}`,
  ops: isGrade,
}));

/**
 * A field the body may not carry: `NAME is read-only` for a field of the resource, `unknown field: NAME`
 * for anything else. First in the table, so a field-specific rule never words an extra field.
 */
function extraFieldRules(name: string, ops: (op: OperationEntry) => boolean, readOnly: readonly string[]): MappingRule[] {
  return [
    ...readOnly.map(
      (field): MappingRule => ({
        kind: 'message',
        name: `${name} ${field}`,
        ops,
        path: `/body/${field}`,
        keywords: ['additionalProperties'],
        status: 422,
        code: 'read_only_field',
        message: ARCHIVED_MESSAGES.readOnly(field),
      }),
    ),
    {
      kind: 'message',
      name: `${name} unknown`,
      ops,
      path: '/body/*',
      keywords: ['additionalProperties'],
      status: 422,
      code: 'unknown_field',
      message: (f) => ARCHIVED_MESSAGES.unknownField(fieldOf(f)),
    },
  ];
}

/** `is_default` is a field only of 2026-08-19 locations; in 2026-08-25 it is simply unknown. */
export function locationReadOnly(version: ArchivedVersion): readonly string[] {
  return version === '2026-08-19' ? LOCATION_READ_ONLY : LOCATION_READ_ONLY.filter((f) => f !== 'is_default');
}

/** Tried before the shared table (`ContractDefinition.validationRules`). */
export function archivedValidationRules(version: ArchivedVersion): readonly MappingRule[] {
  return [
    ...extraFieldRules('app extra field', isAppOp, APP_READ_ONLY),
    ...extraFieldRules('location extra field', isLocationOp, locationReadOnly(version)),
    // Grades: the launch first (it says what is graded), then the score table.
    { kind: 'message', name: 'launch_id required', ops: isGrade, path: '/body/launch_id', keywords: ['required', 'minLength'], status: 422, code: 'launch_id_required', message: ARCHIVED_MESSAGES.launchIdRequired },
    { kind: 'message', name: 'launch_id string', ops: isGrade, path: '/body/launch_id', status: 422, code: 'invalid_launch_id', message: ARCHIVED_MESSAGES.launchIdNotAString },
    ...gradeScoreRules,
    { kind: 'message', name: 'grade body', ops: isGrade, path: '/body', keywords: ['required'], status: 422, code: 'launch_id_required', message: ARCHIVED_MESSAGES.launchIdRequired },

    // Management: the app object.
    { kind: 'message', name: 'name blank', ops: isAppOp, path: '/body/name', keywords: ['minLength', 'pattern'], status: 422, code: 'name_blank', message: ARCHIVED_MESSAGES.nameBlank },
    {
      kind: 'message',
      name: 'url fields',
      ops: isAppOp,
      path: '/body/*',
      keywords: ['pattern'],
      status: 422,
      code: 'invalid_url',
      message: (f) => ARCHIVED_MESSAGES.notHttps(fieldOf(f)),
    },
    { kind: 'message', name: 'grades_released', ops: isAppOp, path: '/body/grades_released', status: 422, code: 'invalid_field', message: ARCHIVED_MESSAGES.gradesReleased },

    // Management: stored locations.
    { kind: 'message', name: 'extid required', ops: isLocationOp, path: '/body/extid', keywords: ['required'], status: 422, code: 'extid_required', message: ARCHIVED_MESSAGES.extidRequired },
    { kind: 'message', name: 'extid', ops: isLocationOp, path: '/body/extid', status: 422, code: 'invalid_extid', message: ARCHIVED_MESSAGES.extidInvalid },
    { kind: 'message', name: 'location type', ops: isLocationOp, path: '/body/type', status: 422, code: 'invalid_location_type', message: ARCHIVED_MESSAGES.locationType },
    { kind: 'message', name: 'params', ops: isLocationOp, path: '/body/params/**', status: 422, code: 'invalid_params', message: ARCHIVED_MESSAGES.params },
    { kind: 'message', name: 'order range', ops: isLocationOp, path: '/body/order', keywords: ['minimum', 'maximum'], status: 422, code: 'order_out_of_range', message: ARCHIVED_MESSAGES.orderRange },
    { kind: 'message', name: 'order', ops: isLocationOp, path: '/body/order', status: 422, code: 'order_not_integer', message: ARCHIVED_MESSAGES.order },

    // Either: a string field of another type, or a body that is not an object.
    { kind: 'message', name: 'string field', ops: isManagement, path: '/body/*', keywords: ['type'], status: 422, code: 'invalid_field', message: (f) => ARCHIVED_MESSAGES.notAString(fieldOf(f)) },
    { kind: 'message', name: 'management body', ops: isManagement, path: '/body', status: 422, code: 'invalid_body', message: ARCHIVED_MESSAGES.notAnObject },
  ];
}
