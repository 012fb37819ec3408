/**
 * The mapping from validator failures to the contract's statuses and messages: one case per rule of
 * the table, and a check that no rule is left without one.
 */
import { describe, expect, it } from 'vitest';
import { operations } from '../../../generated/2026-09-21/operations.js';
import type { OperationEntry } from '../../../server/http/routes.js';
import type { ValidationFailure } from '../../../server/http/validation-errors.js';
import { failuresFromValidatorError, FILE_KEY_MESSAGE, MAPPING_RULES, mapValidationFailures } from '../../../server/http/validation-errors.js';
import type { RefusedRequest } from '../../../server/http/validation-errors.js';

const op = (id: keyof typeof operations): OperationEntry => operations[id];
const f = (path: string, keyword: string, message = 'validator says no'): ValidationFailure => ({ path, keyword, message });

interface Case {
  rule: string;
  op: OperationEntry;
  failures: ValidationFailure[];
  body?: unknown;
  status: number;
  code: string;
  detail: string;
}

const cases: Case[] = [
  { rule: 'score range', op: op('submitScore'), failures: [f('/body/score', 'maximum')], status: 422, code: 'score_out_of_range', detail: 'score must be between 0 and 1' },
  { rule: 'max_score positive', op: op('submitScoreAsUser'), failures: [f('/body/max_score', 'exclusiveMinimum')], status: 422, code: 'max_score_not_positive', detail: 'max_score must be greater than 0' },
  { rule: 'activity_progress', op: op('submitScore'), failures: [f('/body/activity_progress', 'enum')], status: 422, code: 'invalid_activity_progress', detail: 'activity_progress must be one of [Completed, Submitted]' },
  { rule: 'grading_progress', op: op('submitScore'), failures: [f('/body/grading_progress', 'enum')], status: 422, code: 'invalid_grading_progress', detail: 'grading_progress must be one of [FullyGraded, Pending]' },
  { rule: 'score required', op: op('submitScore'), failures: [f('/body/score', 'required')], status: 422, code: 'score_required', detail: 'score is required' },
  { rule: 'score number', op: op('submitScore'), failures: [f('/body/score', 'type')], status: 422, code: 'score_not_a_number', detail: 'score must be a number' },
  { rule: 'max_score number', op: op('submitScore'), failures: [f('/body/max_score', 'type')], status: 422, code: 'max_score_not_a_number', detail: 'max_score must be a number' },
  { rule: 'comment string', op: op('submitScore'), failures: [f('/body/comment', 'type')], status: 422, code: 'invalid_comment', detail: 'comment must be a string' },
  { rule: 'score unknown field', op: op('submitScore'), failures: [f('/body/points', 'additionalProperties')], status: 422, code: 'unknown_field', detail: 'unknown field: points' },
  { rule: 'score body', op: op('submitScore'), failures: [f('/body', 'required')], status: 422, code: 'score_required', detail: 'score is required' },
  { rule: 'score body object', op: op('submitScore'), failures: [f('/body', 'type')], status: 422, code: 'invalid_body', detail: 'the score submission must be a JSON object' },
  { rule: 'row patch', op: op('patchMemberRow'), failures: [f('/body/other', 'additionalProperties')], body: { patch: [], other: 1 }, status: 422, code: 'invalid_patch', detail: 'PATCH body must be an object with the single key "patch"' },
  { rule: 'row patch fallback', op: op('patchContextRow'), failures: [f('/body/patch/0', 'oneOf')], body: { patch: [{ op: 'add', path: '/a', value: 1 }] }, status: 422, code: 'invalid_patch', detail: 'PATCH body must be an object with the single key "patch"' },
  { rule: 'row put object', op: op('putLocationRow'), failures: [f('/body', 'type')], status: 422, code: 'invalid_row_body', detail: 'a row holds one JSON object: the body must be a JSON object' },
  { rule: 'file key', op: op('deleteMemberFile'), failures: [f('/path/key', 'pattern')], status: 422, code: 'invalid_file_key', detail: FILE_KEY_MESSAGE },
  { rule: 'file size max', op: op('putContextFile'), failures: [f('/body/size', 'maximum')], status: 422, code: 'file_too_large', detail: 'size must be at most 26214400 bytes (25 MB)' },
  { rule: 'file size required', op: op('putContextFile'), failures: [f('/body/size', 'required')], status: 422, code: 'size_required', detail: 'size is required' },
  { rule: 'file size integer', op: op('putMemberLocationFile'), failures: [f('/body/size', 'type'), f('/body/size', 'minimum')], status: 422, code: 'invalid_size', detail: 'size must be a non-negative integer' },
  { rule: 'file mimetype', op: op('putContextFile'), failures: [f('/body/mimetype', 'pattern')], status: 422, code: 'invalid_mimetype', detail: 'mimetype must be a media type such as text/plain' },
  { rule: 'file filename', op: op('putContextFile'), failures: [f('/body/filename', 'maxLength')], status: 422, code: 'invalid_filename', detail: "filename must be at most 255 characters with no control characters, '/' or '\\'" },
  { rule: 'file attachment', op: op('putContextFile'), failures: [f('/body/attachment', 'type')], status: 422, code: 'invalid_attachment', detail: 'attachment must be true or false' },
  { rule: 'file unknown field', op: op('putContextFile'), failures: [f('/body/expires', 'additionalProperties')], status: 422, code: 'unknown_field', detail: 'unknown field: expires' },
  { rule: 'file body', op: op('putLocationFile'), failures: [f('/body', 'required')], status: 422, code: 'size_required', detail: 'size is required' },
  { rule: 'file body object', op: op('putLocationFile'), failures: [f('/body', 'type')], status: 422, code: 'invalid_body', detail: 'the file request must be a JSON object' },
  { rule: 'provision body', op: op('provisionLocation'), failures: [f('/body', 'type')], status: 422, code: 'invalid_provision_body', detail: 'provision body must be empty or a JSON object' },
  { rule: 'download token', op: op('downloadFile'), failures: [f('/path/download_token', 'maxLength')], status: 403, code: 'invalid_download_signature', detail: 'invalid download signature' },
  { rule: 'path segment', op: op('getMemberRow'), failures: [f('/path/member_id', 'pattern')], status: 404, code: 'not_found', detail: 'not found' },
  { rule: 'body', op: op('putContextRow'), failures: [f('/body/x', 'type', 'must be string')], status: 422, code: 'invalid_body', detail: 'request body is invalid: /x must be string' },
];

/** A refused request with only a body (no rule of the contracts' table reads the URL or the query). */
const refused = (body: unknown): RefusedRequest => ({ body, params: {}, query: {} });

describe('validator failures → contract problems', () => {
  it.each(cases)('$rule', (c) => {
    const problem = mapValidationFailures(c.op, c.failures, refused(c.body));
    expect({ status: problem.status, code: problem.code, detail: problem.detail }).toEqual({
      status: c.status,
      code: c.code,
      detail: c.detail,
    });
    expect(problem.errors?.length).toBeGreaterThan(0);
  });

  it('has a case for every rule of the table', () => {
    const covered = new Set(cases.map((c) => c.rule));
    expect(MAPPING_RULES.map((r) => r.name).filter((name) => !covered.has(name))).toEqual([]);
  });

  it('lists every failure in `errors` and takes the detail from the first rule of the table', () => {
    const problem = mapValidationFailures(
      op('submitScore'),
      [f('/body/foo', 'additionalProperties'), f('/body/grading_progress', 'enum'), f('/body/score', 'maximum'), f('/body/max_score', 'exclusiveMinimum')],
      refused(undefined),
    );
    expect(problem.detail).toBe('score must be between 0 and 1');
    expect(problem.errors).toEqual([
      { path: '/body/foo', message: 'unknown field: foo' },
      { path: '/body/grading_progress', message: 'grading_progress must be one of [FullyGraded, Pending]' },
      { path: '/body/score', message: 'score must be between 0 and 1' },
      { path: '/body/max_score', message: 'max_score must be greater than 0' },
    ]);
  });

  it('names each malformed patch operation with its index (the patch rules\' own messages)', () => {
    const body = { patch: [{ op: 'add', path: '/a', value: 1 }, { op: 'bogus', path: '/b' }, { op: 'move', path: '/c' }] };
    const problem = mapValidationFailures(op('patchMemberLocationRow'), [f('/body/patch/1/op', 'enum'), f('/body/patch/2', 'oneOf')], refused(body));
    expect(problem.status).toBe(422);
    expect(problem.code).toBe('invalid_patch');
    expect(problem.detail).toMatch(/^patch operation 1 /);
    expect(problem.errors?.map((e) => e.path)).toEqual(['/body/patch/1/op', '/body/patch/2/from']);
  });

  it('answers 400 for a failure no rule knows', () => {
    const problem = mapValidationFailures(op('getContextRow'), [f('/query/x', 'unknown', "Unknown query parameter 'x'")], refused(undefined));
    expect(problem.status).toBe(400);
    expect(problem.code).toBe('invalid_request');
  });

  it('reads the validator\'s error items (`/params/` becomes `/path/`)', () => {
    const failures = failuresFromValidatorError({
      errors: [
        { path: '/params/key', message: 'must match pattern', errorCode: 'pattern.openapi.validation' },
        { path: '/query/x', message: "Unknown query parameter 'x'" },
      ],
    });
    expect(failures).toEqual([
      { path: '/path/key', keyword: 'pattern', message: 'must match pattern' },
      { path: '/query/x', keyword: 'unknown', message: "Unknown query parameter 'x'" },
    ]);
  });
});
