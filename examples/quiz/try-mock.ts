// One student attempt against the Prism mock (`npm run mock`), on day one, before any service runs:
// the same openAttempt/submitAttempt a launch runs, on the URLs a launch would carry. Prism sends no
// launches, so the URLs are built from the IDs the spec's examples use, on the mock's origin. Prism is
// stateless: it answers each call with the spec's example, so what is checked here is that every call
// the quiz makes is one the contract allows (no `sl-violations`), not what the rows end up holding.

import type { ToolRequestOptions } from '../../client/tool/index.js';
import { openAttempt, submitAttempt, type Attempt } from './attempts.js';
import { activityFor } from './questions.js';

/** The IDs of the spec's examples (a student at the Week 3 quiz of STAT 101). */
const EXAMPLE = {
  context: 'ctx_7k2m9q4r8t1v5w3x6y0z',
  app: 'app_3f9c2a7d1e5b8h4j6k0m',
  location: 'loc_5n8p2r6t9v1x4z7b3d0f',
  member: 'mem_2c6e9g3j7l1n5q8s4u0w',
  token: 'tis_at_Qm7vX2pL9kR4tW8yB1nC6dF3gH5jK0sZ2aE7uV9xY4c',
  /** The origin in the examples' URLs (the upload form's `url`, download URLs). */
  origin: 'https://tis.example.edu',
};

export async function tryAgainstMock(mockUrl: string): Promise<number> {
  const mock = new URL(mockUrl).origin;
  const activity = activityFor('unit-1-quiz');
  if (!activity) throw new Error('unit-1-quiz is missing');
  const member = `${mock}/v1/contexts/${EXAMPLE.context}/apps/${EXAMPLE.app}/locations/${EXAMPLE.location}/members/${EXAMPLE.member}`;
  // What attemptFrom(claims) keeps from a student's launch of this quiz.
  const attempt: Attempt = {
    activity,
    rowUrl: `${member}/storage`,
    filesUrl: `${member}/files`,
    gradeSubmitUrl: `${member}/scores`,
    token: EXAMPLE.token,
    name: null,
    staff: false,
  };

  const violations: string[] = [];
  const options: ToolRequestOptions = {
    // The mock answers with the examples' URLs (the signed upload form names https://tis.example.edu):
    // send those to the mock too, and report what Prism thought of each call.
    async fetch(input, init) {
      const request = new Request(input, init);
      const url = request.url.startsWith(EXAMPLE.origin) ? mock + request.url.slice(EXAMPLE.origin.length) : request.url;
      const response = await fetch(new Request(url, request));
      const path = new URL(url).pathname;
      console.log(`${request.method.padEnd(6)} ${path} -> ${response.status}`);
      const found = response.headers.get('sl-violations');
      if (found) {
        violations.push(`${request.method} ${path}: ${found}`);
        console.log(`       violations: ${found}`);
      }
      return response;
    },
  };

  try {
    const row = await openAttempt(attempt, options);
    console.log(`row opened: ${JSON.stringify(row)}`);
    const result = await submitAttempt(attempt, { q1: 0, q2: 1 }, options);
    console.log(`submitted: ${result.marked.correct} of ${result.marked.total}, gradebook: ${result.gradebook}`);
  } catch (err) {
    console.error(`the attempt failed: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
  if (violations.length > 0) {
    console.error(`${violations.length} call(s) broke the contract:\n${violations.join('\n')}`);
    return 1;
  }
  console.log('every call the quiz made is one the contract allows');
  return 0;
}
