// The quiz's HTML: the question form a launch shows, and the result of a submission. Every value
// that came from elsewhere is escaped; the pages load nothing but themselves.

import type { QuizRow, Submitted } from './attempts.js';
import type { Activity } from './questions.js';

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Inline styles only, and forms that post back to the quiz and nowhere else. */
export const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors *; base-uri 'none'";

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; padding: 0 1rem; color: #1d2733; }
  fieldset { border: 1px solid #c8d0da; border-radius: 6px; margin: 0 0 1rem; }
  legend { font-weight: 600; }
  .note { color: #52606d; }
  button { font: inherit; padding: .4rem 1.2rem; }
</style>
</head>
<body>
${body}
</body>
</html>
`;
}

export function quizPage(activity: Activity, row: QuizRow, attempt: { name: string | null; staff: boolean; action: string; graded: boolean }): string {
  const greeting = attempt.name ? `Hello ${escapeHtml(attempt.name)}.` : 'Hello.';
  const previous = row.last
    ? `<p class="note" id="previous">Attempt ${row.attempts} scored ${row.last.correct} of ${row.last.total} (gradebook: ${escapeHtml(row.last.gradebook)}).</p>`
    : '';
  const questions = activity.questions
    .map((q) => {
      const choices = q.choices
        .map((choice, index) => {
          const checked = row.answers[q.id] === index ? ' checked' : '';
          return `<label><input type="radio" name="${escapeHtml(q.id)}" value="${index}"${checked}> ${escapeHtml(choice)}</label><br>`;
        })
        .join('\n');
      return `<fieldset><legend>${escapeHtml(q.prompt)}</legend>\n${choices}\n</fieldset>`;
    })
    .join('\n');
  const kind = attempt.graded ? 'Your score goes to the gradebook.' : 'This activity is not graded.';
  const staff = attempt.staff ? '<p class="note">You are course staff: your own answers are kept like a student\'s.</p>' : '';
  return page(
    activity.label,
    `<h1>${escapeHtml(activity.label)}</h1>
<p>${greeting} ${escapeHtml(activity.description)} ${kind}</p>
${staff}${previous}
<form method="post" action="${escapeHtml(attempt.action)}" id="quiz">
${questions}
<button type="submit">Submit answers</button>
</form>`,
  );
}

export function resultPage(activity: Activity, result: Submitted): string {
  const { marked } = result;
  const lines = activity.questions
    .map((q) => {
      const r = marked.perQuestion[q.id];
      const verdict = r?.right ? 'right' : `wrong (answer: ${escapeHtml(r?.correct ?? '')})`;
      return `<li data-question="${escapeHtml(q.id)}">${escapeHtml(q.prompt)} ${verdict}</li>`;
    })
    .join('\n');
  return page(
    `${activity.label}: result`,
    `<h1>${escapeHtml(activity.label)}: result</h1>
<p id="score" data-score="${marked.score}">${marked.correct} of ${marked.total} correct.</p>
<p id="gradebook">Gradebook: ${escapeHtml(result.gradebook)}.</p>
<ol>
${lines}
</ol>
<p><a id="sheet" href="${escapeHtml(result.sheetUrl)}">Your answer sheet</a> (the link works for a few minutes).</p>
<p class="note">Open the activity again from your course to try again.</p>`,
  );
}

export function messagePage(title: string, message: string): string {
  return page(title, `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(message)}</p>`);
}
