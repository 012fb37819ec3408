// The breaking-change rules of `npm run check` (scripts/lib/breaking.ts, decision KIT-06), applied to edits of
// the real bundle of the current contract: each edit a tool would notice is named, each it would not is let
// through, and every published contract is unchanged against the commit the check compares with.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { breakingChanges } from '../../scripts/lib/breaking.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = any;
const published: Doc = JSON.parse(readFileSync(path.join(repoRoot, 'generated', '2026-09-21', 'openapi.json'), 'utf8'));
const edited = (edit: (doc: Doc) => void): Doc => {
  const copy = structuredClone(published);
  edit(copy);
  return copy;
};
const scorePath = '/v1/contexts/{context_id}/apps/{app_id}/locations/{location_id}/members/{member_id}/scores';

describe('breaking changes to a published contract', () => {
  it('finds none between a bundle and itself', () => {
    expect(breakingChanges(published, structuredClone(published))).toEqual([]);
  });

  it.each<[string, (doc: Doc) => void, RegExp]>([
    ['an operation removed', (d) => delete d.paths[scorePath].post, /POST .*\/scores: operation removed/],
    ['a request enum value dropped', (d) => d.components.schemas.ActivityProgress.enum.pop(), /ActivityProgress: enum values no longer accepted/],
    ['a new required request field', (d) => d.components.schemas.ScoreSubmission.required.push('comment'), /ScoreSubmission\.comment: now required/],
    ['a request limit tightened', (d) => (d.components.schemas.ScoreFraction.maximum = 0.5), /ScoreFraction: maximum lowered to 0\.5/],
    ['a response property dropped', (d) => delete d.components.schemas.GradeAttempt.properties.status, /GradeAttempt\.status: property removed/],
    ['a response enum value added', (d) => d.components.schemas.GradeAttempt.properties.status.enum.push('queued'), /GradeAttempt\.status: new enum values a tool may receive: "queued"/],
    ['a webhook removed', (d) => delete d.webhooks.locations, /webhook POST locations: webhook removed/],
    // Schemas a response echoes are held to both directions: a tool reads them back.
    ['a value added to an enum a response echoes', (d) => d.components.schemas.ActivityProgress.enum.push('Started'), /ActivityProgress: new enum values a tool may receive: "Started"/],
    ['a limit loosened on a schema a response echoes', (d) => (d.components.schemas.FileKey.maxLength = 1000), /FileKey: maxLength raised from 128/],
    ['a success response removed', (d) => delete d.paths[scorePath].post.responses['200'], /POST .*\/scores 200: success response removed/],
  ])('names %s', (_what, edit, expected) => {
    const found = breakingChanges(published, edited(edit));
    expect(found.some((line) => expected.test(line)), found.join('\n')).toBe(true);
  });

  it.each<[string, (doc: Doc) => void]>([
    ['a new optional request field', (d) => (d.components.schemas.ScoreSubmission.properties.note = { type: 'string' })],
    ['a request body opened to unknown fields', (d) => delete d.components.schemas.ScoreSubmission.additionalProperties],
    ['a new response field', (d) => (d.components.schemas.GradeAttempt.properties.published_at = { type: 'integer' })],
    ['a new operation', (d) => (d.paths['/v1/ping'] = { get: { responses: { '200': { description: 'ok' } } } })],
    ['a request limit loosened', (d) => delete d.components.schemas.ScoreSubmission.properties.max_score.exclusiveMinimum],
    ['a description reworded', (d) => (d.components.schemas.ScoreSubmission.description = 'Reworded.')],
  ])('lets through %s', (_what, edit) => {
    expect(breakingChanges(published, edited(edit))).toEqual([]);
  });
});
