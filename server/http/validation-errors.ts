/**
 * Maps the request validator's failures to the contract's statuses and exact messages. The validator
 * answers every failure as 400 with its own wording; the contract wants 422 and its own words (score
 * rules, GAP-03, GAP-04, GAP-13, GAP-22, S-01). The mapping is data: a table of (operation, failing
 * pointer, keyword) → (status, code, message), first match wins, so adding a message is adding a row.
 *
 * A failure is addressed by a JSON Pointer into the request: `/body/score`, `/path/key`, `/query/x`.
 */
import { schemas } from '../../generated/2026-09-21/schemas.js';
import { PATCH_WRAPPER_MESSAGE, validatePatchShape } from '../../rules/json-patch.js';
import { Problem, PROBLEM_MAX_ERRORS } from './problem.js';
import type { ProblemFieldError } from './problem.js';
import type { OperationEntry } from './routes.js';
import { SCORE_BODY_MESSAGES } from '../scores/validate.js';
import { FILE_KEY_MESSAGE, UPLOAD_MESSAGES } from '../files/upload-request.js';

export interface ValidationFailure {
  path: string;
  /** Ajv keyword (`required`, `type`, `maximum`, `additionalProperties`, ...), or `unknown`. */
  keyword: string;
  message: string;
}

type OpMatcher = (op: OperationEntry) => boolean;

/** What a rule may read of the refused request, besides its failures (a message may name a value sent). */
export interface RefusedRequest {
  body: unknown;
  /** Path parameters as the URL carried them. */
  params: Readonly<Record<string, string>>;
  query: Readonly<Record<string, unknown>>;
}

interface MessageRule {
  kind: 'message';
  name: string;
  ops: OpMatcher;
  /** Pointer with `*` standing for one segment. */
  path: string;
  keywords?: readonly string[];
  status: number;
  code: string;
  message: string | ((failure: ValidationFailure, request: RefusedRequest) => string);
}

/** A rule that computes the whole problem itself (the patch shape has its own precise messages). */
interface ResolverRule {
  kind: 'resolver';
  name: string;
  ops: OpMatcher;
  path: string;
  resolve: (failures: readonly ValidationFailure[], request: RefusedRequest) => Problem | null;
}

export type MappingRule = MessageRule | ResolverRule;

const isScore: OpMatcher = (op) => op.tag === 'Scores';
const isRowPatch: OpMatcher = (op) => /^patch[A-Za-z]*Row$/.test(op.id);
const isRowPut: OpMatcher = (op) => /^put[A-Za-z]*Row$/.test(op.id);
const isFilePut: OpMatcher = (op) => /^put[A-Za-z]*File$/.test(op.id);
const isFileOp: OpMatcher = (op) => op.path.includes('{key}');
const isProvision: OpMatcher = (op) => op.tag === 'Provisioning';
const isDownload: OpMatcher = (op) => op.id === 'downloadFile';
const any: OpMatcher = () => true;

/** The last segment of the failing pointer: the field an `additionalProperties` failure names. */
const lastSegment = (f: ValidationFailure): string =>
  (f.path.split('/').pop() ?? '').replace(/~1/g, '/').replace(/~0/g, '~');

export { FILE_KEY_MESSAGE };

/**
 * Order matters twice: the first rule that matches a failure maps it, and among the failures of one
 * request the one whose rule comes first becomes the problem's `detail` (the contract's table order).
 */
export const MAPPING_RULES: readonly MappingRule[] = [
  // Score submissions (contract Errors table; GAP-22, NS-20).
  { kind: 'message', name: 'score range', ops: isScore, path: '/body/score', keywords: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'], status: 422, code: 'score_out_of_range', message: SCORE_BODY_MESSAGES.scoreOutOfRange },
  { kind: 'message', name: 'max_score positive', ops: isScore, path: '/body/max_score', keywords: ['exclusiveMinimum', 'minimum'], status: 422, code: 'max_score_not_positive', message: SCORE_BODY_MESSAGES.maxScoreNotPositive },
  { kind: 'message', name: 'activity_progress', ops: isScore, path: '/body/activity_progress', status: 422, code: 'invalid_activity_progress', message: SCORE_BODY_MESSAGES.activityProgress },
  { kind: 'message', name: 'grading_progress', ops: isScore, path: '/body/grading_progress', status: 422, code: 'invalid_grading_progress', message: SCORE_BODY_MESSAGES.gradingProgress },
  { kind: 'message', name: 'score required', ops: isScore, path: '/body/score', keywords: ['required'], status: 422, code: 'score_required', message: SCORE_BODY_MESSAGES.scoreRequired },
  { kind: 'message', name: 'score number', ops: isScore, path: '/body/score', keywords: ['type'], status: 422, code: 'score_not_a_number', message: SCORE_BODY_MESSAGES.scoreNotANumber },
  { kind: 'message', name: 'max_score number', ops: isScore, path: '/body/max_score', keywords: ['type'], status: 422, code: 'max_score_not_a_number', message: SCORE_BODY_MESSAGES.maxScoreNotANumber },
  { kind: 'message', name: 'comment string', ops: isScore, path: '/body/comment', status: 422, code: 'invalid_comment', message: SCORE_BODY_MESSAGES.commentNotAString },
  { kind: 'message', name: 'score unknown field', ops: isScore, path: '/body/*', keywords: ['additionalProperties'], status: 422, code: 'unknown_field', message: (f) => SCORE_BODY_MESSAGES.unknownField(lastSegment(f)) },
  // A missing body or a body that is not an object has no `score` to read.
  { kind: 'message', name: 'score body', ops: isScore, path: '/body', keywords: ['required'], status: 422, code: 'score_required', message: SCORE_BODY_MESSAGES.scoreRequired },
  { kind: 'message', name: 'score body object', ops: isScore, path: '/body', keywords: ['type'], status: 422, code: 'invalid_body', message: SCORE_BODY_MESSAGES.notAnObject },

  // Row PATCH: the wrapper (GAP-13) and each operation, in the words of the patch rules.
  {
    kind: 'resolver',
    name: 'row patch',
    ops: isRowPatch,
    path: '/body/**',
    resolve: (_failures, { body }) => {
      const shape = validatePatchShape(body);
      if (shape.ok) return null;
      return new Problem(422, 'invalid_patch', shape.message, {
        errors: shape.errors.map((e) => ({ path: `/body${e.path}`, message: e.message })),
      });
    },
  },
  { kind: 'message', name: 'row patch fallback', ops: isRowPatch, path: '/body/**', status: 422, code: 'invalid_patch', message: PATCH_WRAPPER_MESSAGE },
  { kind: 'message', name: 'row put object', ops: isRowPut, path: '/body', status: 422, code: 'invalid_row_body', message: schemas.Row['x-messages'].not_an_object },

  // Files (GAP-03, GAP-04, S-01).
  { kind: 'message', name: 'file key', ops: isFileOp, path: '/path/key', status: 422, code: 'invalid_file_key', message: FILE_KEY_MESSAGE },
  { kind: 'message', name: 'file size max', ops: isFilePut, path: '/body/size', keywords: ['maximum'], status: 422, code: 'file_too_large', message: UPLOAD_MESSAGES.sizeTooLarge },
  { kind: 'message', name: 'file size required', ops: isFilePut, path: '/body/size', keywords: ['required'], status: 422, code: 'size_required', message: UPLOAD_MESSAGES.sizeRequired },
  { kind: 'message', name: 'file size integer', ops: isFilePut, path: '/body/size', status: 422, code: 'invalid_size', message: UPLOAD_MESSAGES.sizeNotInteger },
  { kind: 'message', name: 'file mimetype', ops: isFilePut, path: '/body/mimetype', status: 422, code: 'invalid_mimetype', message: UPLOAD_MESSAGES.mimetype },
  { kind: 'message', name: 'file filename', ops: isFilePut, path: '/body/filename', status: 422, code: 'invalid_filename', message: UPLOAD_MESSAGES.filename },
  { kind: 'message', name: 'file attachment', ops: isFilePut, path: '/body/attachment', status: 422, code: 'invalid_attachment', message: UPLOAD_MESSAGES.attachment },
  { kind: 'message', name: 'file unknown field', ops: isFilePut, path: '/body/*', keywords: ['additionalProperties'], status: 422, code: 'unknown_field', message: (f) => UPLOAD_MESSAGES.unknownField(lastSegment(f)) },
  { kind: 'message', name: 'file body', ops: isFilePut, path: '/body', keywords: ['required'], status: 422, code: 'size_required', message: UPLOAD_MESSAGES.sizeRequired },
  { kind: 'message', name: 'file body object', ops: isFilePut, path: '/body', status: 422, code: 'invalid_body', message: 'the file request must be a JSON object' },

  // Provision PUTs (NS-09).
  { kind: 'message', name: 'provision body', ops: isProvision, path: '/body/**', status: 422, code: 'invalid_provision_body', message: schemas.ProvisionBody['x-messages'].not_an_object },

  // A download token that cannot even be a token is as good as a forged one (S-03).
  { kind: 'message', name: 'download token', ops: isDownload, path: '/path/download_token', status: 403, code: 'invalid_download_signature', message: schemas.DownloadToken['x-messages'].invalid },

  // Path segments the guard let through but the spec refuses name nothing (L-09 pattern).
  { kind: 'message', name: 'path segment', ops: any, path: '/path/*', status: 404, code: 'not_found', message: 'not found' },
  // Any other body failure: the contract answers 422 for a malformed body.
  { kind: 'message', name: 'body', ops: any, path: '/body/**', status: 422, code: 'invalid_body', message: (f) => `request body is invalid: ${f.path.slice('/body'.length) || '/'} ${f.message}` },
];

/** A rule's pointer split into segments, once per pattern (a body can bring tens of thousands of failures). */
const patternSegments = new Map<string, readonly string[]>();

function pathMatches(pattern: string, path: string, pathSegments: readonly string[]): boolean {
  if (pattern.endsWith('/**')) {
    const prefix = pattern.slice(0, -3);
    return path === prefix || path.startsWith(`${prefix}/`);
  }
  let p = patternSegments.get(pattern);
  if (!p) patternSegments.set(pattern, (p = pattern.split('/')));
  if (p.length !== pathSegments.length) return false;
  return p.every((seg, i) => seg === '*' || seg === pathSegments[i]);
}

/** Whether a rule that applies to the operation matches the failure. */
function ruleMatches(rule: MappingRule, failure: ValidationFailure, pathSegments: readonly string[]): boolean {
  if (!pathMatches(rule.path, failure.path, pathSegments)) return false;
  if (rule.kind === 'message' && rule.keywords && !rule.keywords.includes(failure.keyword)) return false;
  return true;
}

/**
 * Builds the one problem for all of a request's validation failures. Every failure counts toward the
 * answer's status and `detail`; `errors` keeps the first `PROBLEM_MAX_ERRORS` distinct ones (H-23), so a
 * body of 80,000 unknown fields costs one pass over the operation's rules per failure, not a rendered
 * message each and an answer five times its size.
 */
export function mapValidationFailures(
  op: OperationEntry,
  failures: readonly ValidationFailure[],
  request: RefusedRequest,
  rules: readonly MappingRule[] = MAPPING_RULES,
): Problem {
  // The operation's own rules, with their places in the table (first match wins), decided once per request.
  const applicable = rules.flatMap((rule, index) => (rule.ops(op) ? [{ rule, index }] : []));
  let best: { index: number; rule: MappingRule; failure: ValidationFailure } | null = null;
  const errors: ProblemFieldError[] = [];
  const seen = new Set<string>();
  for (const failure of failures) {
    const segments = failure.path.split('/');
    const found = applicable.find(({ rule }) => ruleMatches(rule, failure, segments));
    if (found && (best === null || found.index < best.index)) best = { index: found.index, rule: found.rule, failure };
    if (errors.length >= PROBLEM_MAX_ERRORS) continue;
    const rule = found?.rule;
    const message = rule?.kind === 'message' ? render(rule, failure, request) : failure.message;
    const key = `${failure.path}\u0000${message}`;
    if (!seen.has(key)) {
      seen.add(key);
      errors.push({ path: failure.path, message });
    }
  }
  if (best?.rule.kind === 'resolver') {
    const resolved = best.rule.resolve(failures, request);
    if (resolved) return resolved;
    const bestSegments = best.failure.path.split('/');
    const rule = applicable.find(({ rule: r, index }) => index > best.index && ruleMatches(r, best.failure, bestSegments))?.rule;
    if (rule?.kind === 'message') return new Problem(rule.status, rule.code, render(rule, best.failure, request), { errors });
  }
  if (best?.rule.kind === 'message') {
    return new Problem(best.rule.status, best.rule.code, render(best.rule, best.failure, request), { errors });
  }
  const first = failures[0];
  return new Problem(400, 'invalid_request', first ? `request is invalid: ${first.path} ${first.message}` : 'request is invalid', {
    errors,
  });
}

function render(rule: MessageRule, failure: ValidationFailure, request: RefusedRequest): string {
  return typeof rule.message === 'string' ? rule.message : rule.message(failure, request);
}

interface ValidatorErrorItem {
  path?: unknown;
  message?: unknown;
  errorCode?: unknown;
}

/** express-openapi-validator's error items: `/params/x` becomes `/path/x`; `errorCode` holds the keyword. */
export function failuresFromValidatorError(err: { errors?: unknown }): ValidationFailure[] {
  const items = Array.isArray(err.errors) ? (err.errors as ValidatorErrorItem[]) : [];
  return items.map((item) => {
    const rawPath = typeof item.path === 'string' ? item.path : '';
    const path = rawPath.startsWith('/params/') ? `/path/${rawPath.slice('/params/'.length)}` : rawPath;
    const code = typeof item.errorCode === 'string' ? item.errorCode : '';
    const keyword = code.endsWith('.openapi.validation') ? code.slice(0, -'.openapi.validation'.length) : 'unknown';
    return { path, keyword, message: typeof item.message === 'string' ? item.message : 'is invalid' };
  });
}
