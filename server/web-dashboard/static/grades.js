// The Grades tab: the Sandbox gradebook of one Sandbox course (the last score per member and column, as
// the Sandbox LMS received it) and the tool's full grade history (every attempt, failed ones included).
import { api, appPath, detailOf } from './api.js';
import { badge, busy, byId, h, idChip, labelCells, localTime, say } from './dom.js';
import { coursesOf, fillCourseSelect } from './sandbox.js';

let historyCursor = null;

export async function loadGrades(ctx) {
  const error = byId('grades-error');
  say(error, null);
  const select = byId('grades-course');
  const messages = [];
  // The course list comes from the Sandbox; a suspended tool's Sandbox is closed but its history is not.
  try {
    ctx.sandbox = await api('GET', `${appPath(ctx.appId)}/sandbox`);
    fillCourseSelect(select, ctx.sandbox, ctx.context);
    ctx.context = select.value;
    renderGradebook(ctx, await api('GET', `${appPath(ctx.appId)}/sandbox/grades`, { query: { context_id: ctx.context } }));
  } catch (err) {
    select.replaceChildren();
    byId('gradebook').replaceChildren();
    messages.push(detailOf(err));
  }
  try {
    historyCursor = null;
    byId('history').tBodies[0].replaceChildren();
    await loadHistory(ctx);
  } catch (err) {
    messages.push(detailOf(err));
  }
  say(error, messages.length === 0 ? null : messages.join('\n'));
}

function renderGradebook(ctx, gradebook) {
  const container = byId('gradebook');
  if (gradebook.columns.length === 0) {
    container.replaceChildren(h('p', { class: 'muted' }, 'No gradebook columns in this course: place an assessment.'));
    return;
  }
  container.replaceChildren(...gradebook.columns.map((column) =>
    h('div', { class: 'column', 'data-line-item': column.line_item_id },
      h('h4', {}, column.label, ' ', h('span', { class: 'muted' }, `${points(column.score_maximum)} points, grades ${column.grades_released ? 'released' : 'hidden from students'}`)),
      column.scores.length === 0
        ? h('p', { class: 'muted' }, 'No scores yet.')
        : h('div', { class: 'scroll' }, h('table', { class: 'grid' },
          h('thead', {}, h('tr', {}, ['Role', 'Member', 'Score', 'Comment', 'Activity', 'Grading', 'Timestamp', 'Received'].map((t) => h('th', {}, t)))),
          h('tbody', {}, column.scores.map((score) =>
            h('tr', { 'data-member': score.member_id },
              h('td', {}, score.role),
              h('td', {}, person(ctx, score.member_id)),
              h('td', { class: 'score' }, pointsScore(score.score_given, score.score_maximum)),
              h('td', {}, score.comment ?? ''),
              h('td', {}, score.activity_progress),
              h('td', {}, score.grading_progress),
              h('td', {}, localTime(score.timestamp)),
              h('td', {}, localTime(score.received)),
            ))))),
    )));
  for (const table of container.querySelectorAll('table')) {
    table.classList.add('stack');
    labelCells(table);
  }
}

/** The trial user behind a member or user ID of the Sandbox, for display; null outside the Sandbox. */
function trialUser(ctx, id) {
  if (ctx.sandbox === null) return null;
  for (const course of coursesOf(ctx.sandbox)) {
    for (const [role, user] of Object.entries(course.users)) {
      if (user.member_id === id || user.user_id === id) return `${user.full_name} (${role})`;
    }
  }
  return null;
}

function person(ctx, id) {
  const name = trialUser(ctx, id);
  return name === null ? idChip(id) : h('span', { title: id }, name);
}

/** Points as people write them: at most two decimals, no trailing zeros. */
function points(value) {
  return String(Math.round(value * 100) / 100);
}

/** A score the LMS holds in points: `10 / 30 (33%)`. */
function pointsScore(given, maximum) {
  if (given === null || maximum === null || maximum <= 0) return `${given === null ? '–' : points(given)} / ${maximum === null ? '–' : points(maximum)}`;
  return `${points(given)} / ${points(maximum)} (${Math.round((given / maximum) * 100)}%)`;
}

/**
 * An attempt's score (the contract's 0-to-1 fraction) against the column's points it was published with
 * (OPS-50): `10 / 30 (33%)`; only the percentage for an attempt recorded before the points were kept.
 */
function fractionScore(fraction, maximum) {
  const percent = `${Math.round(fraction * 100)}%`;
  return maximum === null ? percent : `${points(fraction * maximum)} / ${points(maximum)} (${percent})`;
}

async function loadHistory(ctx) {
  const page = await api('GET', `${appPath(ctx.appId)}/grades`, { query: { cursor: historyCursor } });
  historyCursor = page.next_cursor;
  const body = byId('history').tBodies[0];
  body.append(...page.attempts.map((attempt) =>
    h('tr', { 'data-attempt': attempt.id },
      h('td', {}, localTime(attempt.submitted)),
      h('td', {}, badge(attempt.status)),
      h('td', { class: 'score' }, fractionScore(attempt.score, page.points[attempt.id] ?? attempt.max_score)),
      h('td', {}, `${attempt.activity_progress}, ${attempt.grading_progress}`),
      h('td', {}, person(ctx, attempt.member)),
      h('td', {}, idChip(attempt.location)),
      h('td', {}, idChip(attempt.context)),
      h('td', {}, attempt.data.source_type === 'session' ? ['launch of ', person(ctx, attempt.data.source_id)] : 'API key'),
      h('td', {}, attempt.data.error),
    )));
  labelCells(byId('history'));
  byId('history-empty').hidden = body.childElementCount > 0;
  byId('history-more').hidden = historyCursor === null;
}

export function wireGrades(ctx) {
  byId('grades-course').addEventListener('change', (event) => {
    ctx.context = event.currentTarget.value;
    void loadGrades(ctx);
  });
  const refresh = byId('grades-refresh');
  refresh.addEventListener('click', () => void busy(refresh, () => loadGrades(ctx)));
  const more = byId('history-more');
  more.addEventListener('click', () => {
    void busy(more, async () => {
      try {
        await loadHistory(ctx);
      } catch (err) {
        say(byId('grades-error'), detailOf(err));
      }
    });
  });
}
