/**
 * The picker's pages as a teacher sees them inside the LMS (decisions LTI-14, LTI-110 to LTI-114): the tools
 * of the course, the chosen tool's locations as an indented tree, and the end of the choice (what was added,
 * or nothing) that carries the Deep Linking response back to the LMS.
 *
 * The look is the web dashboard's: its stylesheet is read from the dashboard's own folder and inlined with
 * this folder's `static/picker.css` under the page's style nonce, and `static/picker.js` runs under its
 * script nonce, so the CSP stays `default-src 'none'` with no external resource. The pages work without
 * JavaScript: the form posts, `<details>` opens and closes; the script adds the group checkboxes, the
 * live counts of ticked items and the "nothing chosen" message before the post.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { escapeHtml } from '../launch-page/pages.js';
import type { RenderedPage } from '../launch-page/pages.js';
import type { Picker, PickerGroupJson, PickerLocationJson } from '../placements/index.js';
import type { AppRecord } from '../store/index.js';
import { page } from './pages.js';

const HERE = dirname(fileURLToPath(import.meta.url));

function readAsset(path: string): string {
  // A build without static files (none ships one today) still serves working, unstyled pages.
  return existsSync(path) ? readFileSync(path, 'utf8') : '';
}

let assets: { style: string; script: string } | null = null;

/** Read once: the files ship with the service and change only with a new release. */
function pickerAssets(): { style: string; script: string } {
  assets ??= {
    style: readAsset(join(HERE, '../web-dashboard/static/dashboard.css')) + '\n' + readAsset(join(HERE, 'static/picker.css')),
    script: readAsset(join(HERE, 'static/picker.js')),
  };
  return assets;
}

/** What the teacher reads after choosing nothing, in the browser and from the server alike (LTI-112). */
export function nothingChosenText(multiple: boolean): string {
  return multiple ? 'Tick at least one activity to add, or choose Cancel.' : 'Choose the activity to add, or choose Cancel.';
}

/** A location's kind in plain words (LTI-110): whether it is graded, and out of how many points. */
export function kindText(location: Pick<PickerLocationJson, 'type' | 'points'>): string {
  switch (location.type) {
    case 'assessment':
      return location.points === null ? 'Graded' : `Graded · ${location.points} ${location.points === 1 ? 'point' : 'points'}`;
    case 'practice':
      return 'Practice · not graded';
    case 'content':
      return 'Content · not graded';
    case 'setup':
      return 'Setup · not graded';
  }
}

function kindBadge(location: Pick<PickerLocationJson, 'type' | 'points'>): string {
  return `<span class="badge kind-${escapeHtml(location.type)}">${escapeHtml(kindText(location))}</span>`;
}

function pickerPage(input: { status?: RenderedPage['status']; kind: string; title: string; main: string; action: string }): RenderedPage {
  const { style, script } = pickerAssets();
  return page({
    status: input.status ?? 200,
    kind: input.kind,
    title: input.title,
    body: `<main class="picker-page">\n${input.main}\n</main>`,
    style,
    script,
    formAction: new URL(input.action).origin,
  });
}

function cancelButton(offered: boolean): string {
  // formnovalidate: Cancel never waits on a choice; it is the form's second button, so Enter adds.
  return offered ? '<button type="submit" name="cancel" value="1" class="secondary" formnovalidate>Cancel</button>' : '';
}

/** Step one: the tools available in this course, under their registered names (LTI-14). */
export function toolsPage(input: { action: string; key: string; apps: readonly AppRecord[]; intro: string; cancellable: boolean }): RenderedPage {
  const tools =
    input.apps.length === 0
      ? '<p class="muted">No tools are available in this course yet.</p>'
      : '<ul class="tools">' +
        input.apps
          .map((app, i) => {
            const described = app.description ? ` aria-describedby="tool-${i}"` : '';
            return (
              `<li><button type="submit" name="app" value="${escapeHtml(app.id)}"${described}>${escapeHtml(app.name)}</button>` +
              (app.description ? `<span class="muted" id="tool-${i}">${escapeHtml(app.description)}</span>` : '') +
              '</li>'
            );
          })
          .join('\n') +
        '</ul>';
  const main = [
    '<h1>Choose a tool</h1>',
    `<p>${escapeHtml(input.intro)}</p>`,
    `<form id="tools" class="panel" method="post" action="${escapeHtml(input.action)}">`,
    `<input type="hidden" name="key" value="${escapeHtml(input.key)}">`,
    tools,
    input.cancellable ? `<div class="actions">${cancelButton(true)}</div>` : '',
    '</form>',
  ].join('\n');
  return pickerPage({ kind: 'lti_tools', title: 'Choose a tool', main, action: input.action });
}

interface TreeState {
  multiple: boolean;
  ids: number;
}

function locationItem(location: PickerLocationJson, state: TreeState): string {
  state.ids += 1;
  const id = `loc-${state.ids}`;
  const type = state.multiple ? 'checkbox' : 'radio';
  return [
    `<li class="location" data-extid="${escapeHtml(location.extid)}">`,
    `<input type="${type}" name="extid" value="${escapeHtml(location.extid)}" id="${id}">`,
    `<label for="${id}"><span class="location-label">${escapeHtml(location.label)}</span> ${kindBadge(location)}`,
    location.description ? `<span class="location-description">${escapeHtml(location.description)}</span>` : '',
    '</label>',
    '</li>',
  ].join('');
}

function groupItem(group: PickerGroupJson, state: TreeState, level: number): string {
  // Distinct extids below the group: an extid shown twice is one location (contract rule 3, S-09).
  const total = group.count;
  const children = [...group.locations.map((l) => locationItem(l, state)), ...group.groups.map((g) => groupItem(g, state, level + 1))];
  // The group checkbox takes or releases the subtree (contract); it needs the script, so it starts hidden
  // and is only offered when several activities may be added. The count reads "N of M chosen" once the
  // script counts ticks (LOC-24, LTI-111); without it the page says how many activities the group holds.
  const box = state.multiple ? `<input type="checkbox" class="group-box" hidden aria-label="${escapeHtml(`Every activity in ${group.label}`)}">` : '';
  return [
    `<li class="group" data-level="${level}">`,
    box,
    '<details>',
    '<summary>',
    `<span class="group-title"><span class="group-label">${escapeHtml(group.label)}</span> `,
    `<span class="count" data-total="${total}">${total} ${total === 1 ? 'activity' : 'activities'}</span></span>`,
    // Shown whether or not the group is open (contract): it lives in the summary, not in the body.
    group.description ? `<span class="group-description">${escapeHtml(group.description)}</span>` : '',
    '</summary>',
    children.length > 0 ? `<ul class="tree">${children.join('\n')}</ul>` : '<p class="muted empty">Nothing in this group yet.</p>',
    '</details>',
    '</li>',
  ].join('');
}

/** Step two: the tool's live locations, as the contract's picker shows them, with Add and Cancel. */
export function locationsPage(input: {
  action: string;
  key: string;
  app: AppRecord;
  picker: Picker;
  multiple: boolean;
  cancellable: boolean;
  /** Set when the form came back with nothing chosen. */
  nothingChosen?: boolean;
}): RenderedPage {
  const state: TreeState = { multiple: input.multiple, ids: 0 };
  const top = input.picker.locations.map((l) => locationItem(l, state));
  const groups = input.picker.groups.map((g) => groupItem(g, state, 1));
  const empty = top.length === 0 && groups.length === 0;
  const noun = input.multiple ? 'activities' : 'activity';
  const main = [
    `<h1>${escapeHtml(input.app.name)}</h1>`,
    `<p class="muted">${input.multiple ? 'Tick the activities to add to your course. Open a group to see what it holds.' : 'Choose the activity this link opens. Open a group to see what it holds.'}</p>`,
    ...(input.picker.message !== null ? [`<p class="picker-message">${escapeHtml(input.picker.message)}</p>`] : []),
    `<form id="pick" class="panel" method="post" action="${escapeHtml(input.action)}" data-multiple="${input.multiple ? '1' : '0'}" data-nothing="${escapeHtml(nothingChosenText(input.multiple))}">`,
    `<input type="hidden" name="key" value="${escapeHtml(input.key)}">`,
    `<input type="hidden" name="app" value="${escapeHtml(input.app.id)}">`,
    '<input type="hidden" name="confirm" value="1">',
    `<fieldset><legend class="offscreen">${escapeHtml(`Activities of ${input.app.name}`)}</legend>`,
    empty ? `<p class="muted">${escapeHtml(input.app.name)} offers nothing to add here.</p>` : `<ul class="tree">${[...top, ...groups].join('\n')}</ul>`,
    '</fieldset>',
    `<p id="pick-error" class="error" role="alert" tabindex="-1"${input.nothingChosen ? '' : ' hidden'}>${input.nothingChosen ? escapeHtml(nothingChosenText(input.multiple)) : ''}</p>`,
    '<div class="actions">',
    empty ? '' : `<button type="submit">Add the chosen ${noun}</button>`,
    cancelButton(input.cancellable),
    '<span id="chosen" class="muted" role="status"></span>',
    '</div>',
    '</form>',
  ].join('\n');
  return pickerPage({ kind: input.nothingChosen ? 'lti_nothing_chosen' : 'lti_locations', title: input.app.name, main, action: input.action });
}

export interface AddedLocation {
  label: string;
  type: PickerLocationJson['type'];
  points: number | null;
}

/**
 * The end of a Deep Linking choice (LTI-15, LTI-113): what was added (or that nothing was), then the
 * signed response posted back to the LMS, which closes its dialog. The teacher gets a moment to read what
 * was added; Cancel returns at once.
 */
export function deepLinkingResponsePage(input: { returnUrl: string; jwt: string; appName: string | null; added: readonly AddedLocation[] }): RenderedPage {
  const cancelled = input.added.length === 0;
  const heading = cancelled ? 'Nothing added' : 'Added to your course';
  const what = cancelled
    ? '<p>You cancelled: nothing was added to your course.</p>'
    : [
        `<p>${escapeHtml(input.added.length === 1 ? 'This activity' : `These ${input.added.length} activities`)}${input.appName !== null ? ` from ${escapeHtml(input.appName)}` : ''}:</p>`,
        '<ul class="added">',
        ...input.added.map((a) => `<li><span class="location-label">${escapeHtml(a.label)}</span> ${kindBadge(a)}</li>`),
        '</ul>',
      ].join('\n');
  const main = [
    `<h1>${heading}</h1>`,
    `<div class="panel">${what}`,
    `<form id="respond" method="post" action="${escapeHtml(input.returnUrl)}" data-delay="${cancelled ? 0 : 1500}">`,
    `<input type="hidden" name="JWT" value="${escapeHtml(input.jwt)}">`,
    '<p role="status" class="muted">Returning to your course…</p>',
    '<button type="submit">Return to your course now</button>',
    '</form>',
    '</div>',
  ].join('\n');
  return pickerPage({
    kind: cancelled ? 'lti_deep_linking_cancelled' : 'lti_deep_linking_response',
    title: heading,
    main,
    action: input.returnUrl,
  });
}

/** An instructor who cancels the choice of an unknown link: the link stays as it was (LTI-113). */
export function linkNotChosenPage(action: string): RenderedPage {
  const main = [
    '<h1>Nothing set up</h1>',
    '<div class="panel"><p>The link stays not set up; students who open it are told so. Open the link again to choose its activity.</p></div>',
  ].join('\n');
  return pickerPage({ kind: 'lti_link_not_chosen', title: 'Nothing set up', main, action });
}
