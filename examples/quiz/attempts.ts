// What the quiz does with a launch: the student's answers live in the launch's `member_location` row,
// each submission also stores the marked answer sheet as a JSON file beside that row, and a graded
// activity sends the score to `grade.submit`. Everything goes through the kit's helpers, on the URLs
// exactly as the launch gave them, with the launch's `api.token`.

import {
  files,
  rows,
  submitScore,
  type LaunchClaims,
  type Problem,
  type ToolRequestOptions,
} from '../../client/tool/index.js';
import { mark, type Activity, type Marked } from './questions.js';

/** The key of the answer sheet in the member_location row's files; each submission replaces it. */
export const ANSWER_SHEET_KEY = 'answer-sheet.json';

/** What the quiz keeps in the member_location row. */
export interface QuizRow {
  quiz: string;
  /** Choice index per question ID, as last submitted. */
  answers: Record<string, number>;
  attempts: number;
  last?: {
    score: number;
    correct: number;
    total: number;
    submitted_at: string;
    /** What became of the score: `sent`, `refused by the LMS`, `not graded`, or the service's refusal. */
    gradebook: string;
  };
}

/** The part of a launch the quiz needs after the launch token itself has been used up. */
export interface Attempt {
  activity: Activity;
  rowUrl: string;
  filesUrl: string;
  gradeSubmitUrl: string | null;
  /** The launch's `api.token`, named `token` as everywhere in the kit (decision KIT-03). */
  token: string;
  /** Display only; students' launches carry no names. */
  name: string | null;
  staff: boolean;
}

const STAFF_GROUPS = new Set(['instructor', 'manager', 'assistant']);

export function attemptFrom(claims: LaunchClaims, activity: Activity): Attempt {
  const token = claims.api.token;
  if (token === null) throw new Error('a launch carries an api.token');
  return {
    activity,
    rowUrl: claims.storage.member_location,
    filesUrl: claims.files.member_location,
    gradeSubmitUrl: claims.grade.submit,
    token,
    name: claims.user.full_name ?? null,
    staff: claims.user.groups.some((group) => STAFF_GROUPS.has(group)),
  };
}

/** A refusal from the service, with its envelope, for the page to show and the log to keep. */
export class ServiceRefusal extends Error {
  override readonly name = 'ServiceRefusal';
  constructor(
    readonly step: string,
    readonly problem: Problem,
  ) {
    super(`${step}: ${problem.status} ${problem.code}: ${problem.detail}`);
  }
}

function isQuizRow(value: unknown, extid: string): value is QuizRow {
  const row = value as Partial<QuizRow> | null;
  return typeof row === 'object' && row !== null && row.quiz === extid && typeof row.answers === 'object' && typeof row.attempts === 'number';
}

/**
 * The row as the launch finds it. A first launch finds `{}` (never written) and writes the quiz's empty
 * state with a PUT, so every later change can be a small PATCH.
 */
export async function openAttempt(attempt: Attempt, options: ToolRequestOptions = {}): Promise<QuizRow> {
  const row = rows<QuizRow | Record<string, never>>(attempt.rowUrl, attempt.token, options);
  const read = await row.get();
  if (read.error) throw new ServiceRefusal('reading your answers', read.error);
  if (isQuizRow(read.data, attempt.activity.extid)) return read.data;
  const fresh: QuizRow = { quiz: attempt.activity.extid, answers: {}, attempts: 0 };
  const written = await row.put(fresh);
  if (written.error) throw new ServiceRefusal('starting the quiz', written.error);
  return fresh;
}

export interface Submitted {
  marked: Marked;
  row: QuizRow;
  /** The signed download URL of the answer sheet (valid a few minutes). */
  sheetUrl: string;
  gradebook: string;
}

/** Keeps the answers, stores the answer sheet, and sends the score of a graded activity. */
export async function submitAttempt(
  attempt: Attempt,
  answers: Readonly<Record<string, number>>,
  options: ToolRequestOptions = {},
): Promise<Submitted> {
  const { activity } = attempt;
  const marked = mark(activity, answers);
  const row = rows<QuizRow>(attempt.rowUrl, attempt.token, options);
  const before = await row.get();
  if (before.error) throw new ServiceRefusal('reading your answers', before.error);
  const attempts = (isQuizRow(before.data, activity.extid) ? before.data.attempts : 0) + 1;
  const submittedAt = new Date().toISOString();

  // The score goes first: what the gradebook said is part of what the row records.
  let gradebook: string;
  const comment = `${marked.correct} of ${marked.total} correct`;
  const sent = await submitScore(attempt.gradeSubmitUrl, attempt.token, { score: marked.score, comment }, options);
  if (sent.skipped) gradebook = 'not graded';
  else if (sent.error) gradebook = `refused: ${sent.error.detail}`;
  else gradebook = sent.data.status === 'success' ? 'sent' : `refused by the LMS: ${sent.data.data.error}`;

  const last: NonNullable<QuizRow['last']> = {
    score: marked.score,
    correct: marked.correct,
    total: marked.total,
    submitted_at: submittedAt,
    gradebook,
  };
  // `add` replaces a member that exists and creates one that does not, so this works on any row state.
  const patched = await row.patch([
    { op: 'add', path: '/quiz', value: activity.extid },
    { op: 'add', path: '/answers', value: { ...answers } },
    { op: 'add', path: '/attempts', value: attempts },
    { op: 'add', path: '/last', value: { ...last } },
  ]);
  if (patched.error) throw new ServiceRefusal('saving your answers', patched.error);

  const sheet = {
    quiz: activity.extid,
    label: activity.label,
    attempt: attempts,
    submitted_at: submittedAt,
    score: marked.score,
    correct: marked.correct,
    total: marked.total,
    questions: activity.questions.map((q) => ({ id: q.id, prompt: q.prompt, ...marked.perQuestion[q.id] })),
  };
  const store = files(attempt.filesUrl, attempt.token, options);
  const uploaded = await store.upload(ANSWER_SHEET_KEY, Buffer.from(`${JSON.stringify(sheet, null, 2)}\n`), {
    mimetype: 'application/json',
    filename: `${activity.extid}-answers.json`,
  });
  if (uploaded.error) throw new ServiceRefusal('storing your answer sheet', uploaded.error);
  const stored = await store.read(ANSWER_SHEET_KEY);
  if (stored.error) throw new ServiceRefusal('reading your answer sheet', stored.error);

  return {
    marked,
    row: { quiz: activity.extid, answers: { ...answers }, attempts, last },
    sheetUrl: stored.data.url,
    gradebook,
  };
}
