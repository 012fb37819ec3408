// The Sandbox tab: the trial course and its copies, the picker, placements, launches as any trial user,
// copying the trial course and the reset. Every action is one call of the dashboard API.
import { api, appPath, detailOf } from './api.js';
import { badge, busy, byId, h, idChip, labelCells, localTime, say, shortened } from './dom.js';
import { renderPicker } from './picker.js';

/** SandboxRole, in the order the spec lists the trial users. */
const ROLES = ['instructor', 'assistant', 'manager', 'student_1', 'student_2'];

/** Every Sandbox course: the trial course first, then the copies, as `{context, parent_context, course, users}`. */
export function coursesOf(sandbox) {
  const trial = { context: sandbox.context, parent_context: null, course: sandbox.course, users: sandbox.users };
  return [trial, ...sandbox.copies];
}

export function courseName(course) {
  const label = course.course.label === null ? '' : ` (${course.course.label})`;
  return `${course.course.name}${label}${course.parent_context === null ? ', trial course' : `, copy of ${course.parent_context}`}`;
}

/**
 * Lists the Sandbox courses and selects `context`, or the trial course when `context` is gone (a reset).
 * The trial course and the copies are option groups, so an option says only the course's name and code
 * (and a copy its shortened ID) and fits a phone's width (issue 29).
 */
export function fillCourseSelect(select, sandbox, context) {
  const courses = coursesOf(sandbox);
  const option = (course) => {
    const label = course.course.label === null ? '' : ` (${course.course.label})`;
    const which = course.parent_context === null ? '' : `, ${shortened(course.context)}`;
    return h('option', { value: course.context }, `${course.course.name}${label}${which}`);
  };
  const copies = courses.filter((course) => course.parent_context !== null);
  select.replaceChildren(
    h('optgroup', { label: 'Trial course' }, option(courses[0])),
    ...(copies.length === 0 ? [] : [h('optgroup', { label: 'Copies of the trial course' }, copies.map(option))]),
  );
  select.value = courses.some((course) => course.context === context) ? context : sandbox.context;
}

/** While a placement or the course waits for the tool, the Sandbox is read again so its labels follow. */
const POLL_MS = 1500;
let pollTimer = null;

export function stopPolling() {
  if (pollTimer !== null) clearTimeout(pollTimer);
  pollTimer = null;
}

function waiting(sandbox, context) {
  const course = coursesOf(sandbox).find((c) => c.context === context);
  const level = course?.parent_context === null ? sandbox.provisioning : course?.provisioning;
  return level === 'pending' || sandbox.placements.some((p) => p.context_id === context && (p.provisioning.context === 'pending' || p.provisioning.location === 'pending'));
}

function pollWhileWaiting(ctx) {
  stopPolling();
  if (ctx.sandbox === null || !waiting(ctx.sandbox, ctx.context)) return;
  const appId = ctx.appId;
  pollTimer = setTimeout(() => {
    pollTimer = null;
    if (ctx.appId === appId && ctx.tab === 'sandbox' && !byId('tool').hidden) void loadSandbox(ctx);
  }, POLL_MS);
}

export async function loadSandbox(ctx) {
  stopPolling();
  const error = byId('sandbox-error');
  say(error, null);
  // Until this tool's Sandbox is read, the course its buttons act on is unknown (a picker opened then
  // named no course and was refused 404): they wait, disabled, for the answer.
  if (ctx.sandbox === null) renderSandbox(ctx);
  try {
    ctx.sandbox = await api('GET', `${appPath(ctx.appId)}/sandbox`);
  } catch (err) {
    ctx.sandbox = null;
    say(error, detailOf(err));
    renderSandbox(ctx);
    return;
  }
  if (!coursesOf(ctx.sandbox).some((course) => course.context === ctx.context)) ctx.context = ctx.sandbox.context;
  renderSandbox(ctx);
  pollWhileWaiting(ctx);
}

function renderSandbox(ctx) {
  const sandbox = ctx.sandbox;
  const select = byId('sandbox-course');
  for (const id of ['sandbox-copy', 'sandbox-reset', 'open-picker']) byId(id).disabled = sandbox === null;
  if (sandbox === null) {
    select.replaceChildren();
    byId('sandbox-summary').replaceChildren();
    byId('placements').tBodies[0].replaceChildren();
    byId('trial-users').tBodies[0].replaceChildren();
    byId('placements-empty').hidden = true;
    return;
  }
  fillCourseSelect(select, sandbox, ctx.context);
  const course = coursesOf(sandbox).find((c) => c.context === ctx.context);
  const provisioning = course.parent_context === null ? sandbox.provisioning : course.provisioning;
  byId('sandbox-summary').replaceChildren(
    h('p', {},
      'Course ', idChip(course.context), ' in ', sandbox.organization.title, '. Course level: ',
      provisioning === null ? 'not provisioned yet' : badge(provisioning),
      sandbox.last_reset === null ? null : ['. Last reset ', localTime(sandbox.last_reset), '.']),
  );
  renderPlacements(ctx, sandbox.placements.filter((p) => p.context_id === ctx.context), course.users);
  byId('trial-users').tBodies[0].replaceChildren(...ROLES.map((role) => {
    const user = course.users[role];
    return h('tr', {}, h('td', {}, role), h('td', {}, user.full_name), h('td', {}, idChip(user.user_id)), h('td', {}, idChip(user.member_id)));
  }));
  labelCells(byId('trial-users'));
}

function renderPlacements(ctx, placements, users) {
  byId('placements-empty').hidden = placements.length > 0;
  byId('placements').hidden = placements.length === 0;
  byId('placements').tBodies[0].replaceChildren(...placements.map((placement) => {
    const as = h('select', { 'aria-label': `Launch ${placement.location.label} as` },
      ROLES.map((role) => h('option', { value: role }, `${users[role].full_name} (${role})`)));
    const launchButton = h('button', { type: 'button', class: 'small', 'aria-label': `Launch ${placement.location.label}` }, 'Launch');
    launchButton.addEventListener('click', () => launch(ctx, placement, as.value, launchButton));
    const p = placement.provisioning;
    return h('tr', { 'data-placement': placement.id },
      h('td', {}, placement.location.label, h('br'), h('code', { class: 'muted' }, placement.location.extid)),
      h('td', {}, placement.location.type),
      h('td', {}, placement.location.points === null ? '' : String(placement.location.points)),
      h('td', {}, 'course ', badge(p.context), ' location ', badge(p.location), p.error === null ? null : h('div', { class: 'error' }, p.error)),
      h('td', { class: 'launch' }, as, ' ', launchButton),
    );
  }));
  labelCells(byId('placements'));
}

/**
 * The launch page opens in a new window. The window is opened on the click itself (a popup opened after
 * an await may be blocked) and sent to the ticket's URL once the API has issued it.
 */
function launch(ctx, placement, role, button) {
  const error = byId('launch-error');
  const status = byId('sandbox-status');
  say(error, null);
  const target = window.open('about:blank', '_blank');
  if (target) target.opener = null;
  void busy(button, async () => {
    try {
      const ticket = await api('POST', `${appPath(ctx.appId)}/sandbox/placements/${encodeURIComponent(placement.id)}/launches`, { body: { as: role } });
      if (target) {
        target.location.replace(ticket.launch_url);
        say(status, `Opened the launch page of ${placement.location.label} as ${role} in a new window.`);
      } else {
        say(status, null);
        status.replaceChildren('Your browser blocked the new window: ',
          h('a', { href: ticket.launch_url, target: '_blank', rel: 'noopener noreferrer' }, `open ${placement.location.label} as ${role}`),
          ' (usable once, until ', localTime(ticket.expires), ').');
        status.hidden = false;
      }
    } catch (err) {
      target?.close();
      say(error, detailOf(err));
    }
  });
}

export function wireSandbox(ctx) {
  const error = byId('sandbox-error');
  const status = byId('sandbox-status');
  const pickerError = byId('picker-error');
  const picker = byId('picker');

  byId('sandbox-course').addEventListener('change', (event) => {
    ctx.context = event.currentTarget.value;
    picker.hidden = true;
    say(pickerError, null);
    renderSandbox(ctx);
    pollWhileWaiting(ctx);
  });

  const place = (location, button) => {
    void busy(button, async () => {
      say(pickerError, null);
      try {
        const placement = await api('POST', `${appPath(ctx.appId)}/sandbox/placements`, { body: { extid: location.extid, context_id: ctx.context } });
        // Its provisioning is shown in the placements table, which follows it until it settles.
        say(status, `Placed ${placement.location.label}.`);
        await loadSandbox(ctx);
      } catch (err) {
        say(pickerError, detailOf(err));
      }
    });
  };

  const open = byId('open-picker');
  open.addEventListener('click', () => {
    void busy(open, async () => {
      say(pickerError, null);
      say(status, null);
      picker.hidden = true;
      try {
        renderPicker(picker, await api('POST', `${appPath(ctx.appId)}/sandbox/picker`, { body: { context_id: ctx.context } }), place);
      } catch (err) {
        say(pickerError, detailOf(err));
      }
    });
  });

  const copy = byId('sandbox-copy');
  copy.addEventListener('click', () => {
    void busy(copy, async () => {
      say(error, null);
      say(status, null);
      try {
        const made = await api('POST', `${appPath(ctx.appId)}/sandbox/copies`);
        ctx.context = made.context;
        picker.hidden = true;
        await loadSandbox(ctx);
        say(status, `Copied the trial course: ${courseName(made)}.`);
      } catch (err) {
        say(error, detailOf(err));
      }
    });
  });

  byId('sandbox-reset').addEventListener('click', () => {
    byId('reset-confirm').hidden = false;
  });
  byId('reset-confirm-no').addEventListener('click', () => {
    byId('reset-confirm').hidden = true;
  });
  const reset = byId('reset-confirm-yes');
  reset.addEventListener('click', () => {
    void busy(reset, async () => {
      say(error, null);
      say(status, null);
      try {
        await api('POST', `${appPath(ctx.appId)}/sandbox/reset`);
        byId('reset-confirm').hidden = true;
        picker.hidden = true;
        await loadSandbox(ctx);
        say(status, 'The Sandbox is reset: the next placement or launch provisions again.');
      } catch (err) {
        say(error, detailOf(err));
      }
    });
  });
}
