// What the quiz offers: its activities (one per extid), their questions, and the picker's contents
// built from them with the kit's locations builder (the same rules the service applies).

import { locationsResponse, type LocationsResponseBuilder, type LocationType } from '../../client/tool/index.js';

export interface Question {
  id: string;
  prompt: string;
  choices: readonly string[];
  /** Index into `choices`. */
  answer: number;
}

export interface Activity {
  extid: string;
  type: Extract<LocationType, 'assessment' | 'practice'>;
  label: string;
  description: string;
  /** Gradebook points of an assessment (the service defaults to 100 when absent). */
  points?: number;
  questions: readonly Question[];
}

const activities: readonly Activity[] = [
  {
    extid: 'final-quiz',
    type: 'assessment',
    label: 'Final quiz',
    description: 'Three questions on the whole course. Graded.',
    points: 30,
    questions: [
      { id: 'q1', prompt: 'Which measure of centre is least affected by outliers?', choices: ['Mean', 'Median', 'Range'], answer: 1 },
      { id: 'q2', prompt: 'A p-value of 0.03 at the 5% level means…', choices: ['Reject the null hypothesis', 'Accept the null hypothesis', 'Nothing'], answer: 0 },
      { id: 'q3', prompt: 'The standard deviation of 2, 2, 2, 2 is…', choices: ['2', '1', '0'], answer: 2 },
    ],
  },
  {
    extid: 'unit-1-quiz',
    type: 'assessment',
    label: 'Unit 1 quiz',
    description: 'Describing data. Graded.',
    points: 20,
    questions: [
      { id: 'q1', prompt: 'The median of 1, 3, 9 is…', choices: ['3', '4.33', '9'], answer: 0 },
      { id: 'q2', prompt: 'A histogram shows…', choices: ['A distribution', 'A correlation', 'A trend over time'], answer: 0 },
    ],
  },
  {
    extid: 'unit-1-practice',
    type: 'practice',
    label: 'Unit 1 practice',
    description: 'Try as often as you like; not graded.',
    questions: [
      { id: 'q1', prompt: 'The mode of 4, 4, 5, 6 is…', choices: ['4', '5', '6'], answer: 0 },
      { id: 'q2', prompt: 'The range of 2, 7, 3 is…', choices: ['5', '7', '4'], answer: 0 },
    ],
  },
  {
    extid: 'unit-2-practice',
    type: 'practice',
    label: 'Unit 2 practice',
    description: 'Probability warm-up; not graded.',
    questions: [{ id: 'q1', prompt: 'The probability of heads with a fair coin is…', choices: ['0.25', '0.5', '1'], answer: 1 }],
  },
];

const byExtid = new Map(activities.map((a) => [a.extid, a]));

/** The activity behind a launch's `location.extid`; undefined for an extid the quiz no longer offers. */
export function activityFor(extid: string | null | undefined): Activity | undefined {
  return extid == null ? undefined : byExtid.get(extid);
}

function entry(extid: string): { type: Activity['type']; label: string; description: string; points?: number } {
  const activity = byExtid.get(extid);
  if (!activity) throw new Error(`no activity ${extid}`);
  return {
    type: activity.type,
    label: activity.label,
    description: activity.description,
    ...(activity.points !== undefined ? { points: activity.points } : {}),
  };
}

/**
 * The picker: the final quiz at the top, then one collapsible group per unit. The builder refuses,
 * with the service's own message, anything the service would refuse (rules/locations.ts).
 */
export function quizLocations(): LocationsResponseBuilder {
  return locationsResponse()
    .message('Pick the quizzes to add to this course. Practice items are never graded.')
    .location('final-quiz', entry('final-quiz'))
    .group('Unit 1: Describing data', (unit) =>
      unit.description('A graded quiz and its practice set.').location('unit-1-quiz', entry('unit-1-quiz')).location('unit-1-practice', entry('unit-1-practice')),
    )
    .group('Unit 2: Probability', (unit) => unit.location('unit-2-practice', entry('unit-2-practice')));
}

export interface Marked {
  correct: number;
  total: number;
  /** The fraction the gradebook receives, 0 to 1. */
  score: number;
  perQuestion: Record<string, { given: string | null; correct: string; right: boolean }>;
}

/** Marks the answers given (choice indexes by question ID); a question left blank is wrong. */
export function mark(activity: Activity, answers: Readonly<Record<string, number>>): Marked {
  const perQuestion: Marked['perQuestion'] = {};
  let correct = 0;
  for (const question of activity.questions) {
    const given = answers[question.id];
    const right = given === question.answer;
    if (right) correct += 1;
    perQuestion[question.id] = {
      given: given === undefined ? null : (question.choices[given] ?? null),
      correct: question.choices[question.answer] as string,
      right,
    };
  }
  const total = activity.questions.length;
  return { correct, total, score: total === 0 ? 0 : correct / total, perQuestion };
}
