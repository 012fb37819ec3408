// The platform team's LMS registrations page (decisions LTI-06, LTI-07, LTI-62): every registration with its
// status, one shown in full with its deployments, whether grades reach it, its refused launches (LTI-126),
// activation and deactivation, the manual registration form and a search by report ID, all through the
// dashboard API's `/lms` operations. The service's own LTI URLs are shown for the LMS administrator to paste.
import { api, detailOf } from './api.js';
import { badge, busy, byId, copyButton, h, idChip, labelCells, localTime, say } from './dom.js';

/** The registration shown below the list, or null. */
let shownId = null;

const lmsPath = (id) => `/lms/${encodeURIComponent(id)}`;

/**
 * A URL as code that wraps only at its own punctuation: Chromium never breaks after `/`, and breaking
 * anywhere splits host names at 420 px, so a line break is offered after each `/`, `?`, `&` and `=` (a host
 * name longer than the line still wraps as a last resort).
 */
function urlCode(url) {
  const parts = String(url).split(/(?<=[/?&=])/);
  return h('code', {}, ...parts.flatMap((part, i) => (i === 0 ? [part] : [h('wbr'), part])));
}

function serviceUrls() {
  const origin = window.location.origin;
  const rows = [
    ['Dynamic Registration URL', `${origin}/lti/register`],
    ['Canvas developer-key JSON', `${origin}/lti/canvas.json`],
    ['OIDC login URL', `${origin}/lti/login`],
    ['Redirect and target link URI', `${origin}/lti/launch`],
    ['Public keys (JWKS URL)', `${origin}/.well-known/jwks.json`],
  ];
  byId('lms-urls').replaceChildren(...rows.flatMap(([label, url]) => [
    h('dt', {}, label),
    h('dd', {}, h('span', { class: 'id' }, urlCode(url), copyButton(() => url, `Copy the ${label}`))),
  ]));
}

export async function loadLms() {
  serviceUrls();
  say(byId('lms-error'), null);
  await listRegistrations();
  if (shownId !== null) await showRegistration(shownId);
}

async function listRegistrations() {
  try {
    const list = await api('GET', '/lms');
    const table = byId('lms-list');
    table.tBodies[0].replaceChildren(...list.registrations.map((r) => {
      const open = h('button', { type: 'button', class: 'small', 'aria-label': `Show ${r.title}` }, 'Show');
      open.addEventListener('click', () => void showRegistration(r.id));
      return h('tr', { 'data-registration': r.id },
        h('td', {}, r.title, h('br'), idChip(r.id)),
        h('td', {}, urlCode(r.issuer)),
        h('td', {}, h('code', {}, r.client_id)),
        h('td', { class: 'nowrap' }, String(r.deployments.length)),
        h('td', {}, r.method),
        h('td', {}, badge(r.status)),
        h('td', {}, open));
    }));
    labelCells(table);
    byId('lms-list-empty').hidden = list.registrations.length > 0;
    // The Sandbox's own registration is not a school's: shown apart, never deactivated (decision LTI-100).
    const sandbox = byId('lms-sandbox');
    sandbox.hidden = list.sandbox === null;
    if (list.sandbox !== null) {
      const open = h('button', { type: 'button', class: 'small', 'aria-label': `Show ${list.sandbox.title}` }, 'Show');
      const id = list.sandbox.id;
      open.addEventListener('click', () => void showRegistration(id));
      sandbox.replaceChildren(list.sandbox.title, ' ', idChip(id), ' ', badge(list.sandbox.status), ' ', open);
    }
  } catch (err) {
    say(byId('lms-error'), detailOf(err));
  }
}

function fact(label, value) {
  return [h('dt', {}, label), h('dd', {}, value)];
}

async function showRegistration(id) {
  const error = byId('lms-detail-error');
  say(error, null);
  let r;
  try {
    r = await api('GET', lmsPath(id));
  } catch (err) {
    shownId = null;
    byId('lms-detail').hidden = true;
    say(byId('lms-error'), detailOf(err));
    return;
  }
  shownId = r.id;
  byId('lms-detail-title').textContent = r.title;
  byId('lms-detail-status').replaceChildren(badge(r.status));
  byId('lms-facts').replaceChildren(
    ...fact('ID', idChip(r.id)),
    ...fact('Issuer', urlCode(r.issuer)),
    ...fact('Client ID', h('code', {}, r.client_id)),
    ...fact('Registered', `${r.method === 'dynamic' ? 'Dynamic Registration' : 'by hand'}, ${r.product_family_code ?? 'LMS family not given'}`),
    ...fact('Auth URL', urlCode(r.auth_url)),
    ...fact('Token URL', urlCode(r.token_url)),
    ...fact('Token audience', r.token_audience === null ? h('span', { class: 'muted' }, 'the token URL') : urlCode(r.token_audience)),
    ...fact('JWKS URL', urlCode(r.jwks_url)),
    ...fact('Grades', h('span', { id: 'lms-grades', 'data-publishable': String(r.grades.publishable) }, r.grades.explanation)),
    ...fact('AGS scopes', r.scopes.length === 0 ? h('span', { class: 'muted' }, 'none') : h('ul', { class: 'plain' }, ...r.scopes.map((s) => h('li', {}, h('code', {}, s))))),
    ...fact('Created', localTime(r.created)),
    ...fact('Updated', localTime(r.updated)),
  );
  const deployments = byId('lms-deployments');
  deployments.replaceChildren(...r.deployments.map((d) => h('li', { 'data-deployment': d }, h('code', {}, d))));
  byId('lms-deployments-empty').hidden = r.deployments.length > 0;
  // Registering again would make a Dynamic Registration a manual one, so only manual ones add deployments
  // here; every LMS adds them by launching from them (an unseen deployment is a new school).
  byId('lms-deployment-form').hidden = r.method !== 'manual';

  const activate = byId('lms-activate');
  const deactivate = byId('lms-deactivate');
  activate.hidden = r.status === 'active';
  deactivate.hidden = r.status !== 'active' || r.sandbox;
  byId('lms-sandbox-note').hidden = !r.sandbox;
  byId('lms-detail').hidden = false;
  byId('lms-detail').dataset.registration = r.id;
  byId('lms-detail').dataset.body = JSON.stringify(r);
  await listRefusals(r.id);
}

async function listRefusals(id) {
  const table = byId('lms-refusals');
  try {
    const { refusals } = await api('GET', `${lmsPath(id)}/refusals`);
    table.tBodies[0].replaceChildren(...refusals.map((f) => h('tr', { 'data-report': f.report_id },
      h('td', { class: 'nowrap' }, localTime(f.created)),
      h('td', {}, h('code', {}, f.report_id)),
      h('td', {}, `${f.message.replace('_', ' ')} (${f.code})`),
      h('td', {}, f.reason, h('br'), h('span', { class: 'muted' }, f.detail)),
      h('td', {}, f.advice))));
    labelCells(table);
    byId('lms-refusals-empty').hidden = refusals.length > 0;
  } catch (err) {
    say(byId('lms-detail-error'), detailOf(err));
  }
}

async function findRefusal(reportId) {
  const found = byId('lms-refusal-found');
  say(byId('lms-refusal-error'), null);
  found.hidden = true;
  try {
    const f = await api('GET', `/lms-refusals/${encodeURIComponent(reportId)}`);
    found.replaceChildren(
      ...fact('Report ID', h('code', {}, f.report_id)),
      ...fact('When', localTime(f.created)),
      ...fact('Refused', `${f.message.replace('_', ' ')} (${f.code}, HTTP ${f.status})`),
      ...fact('LMS', f.registration_id !== null ? idChip(f.registration_id) : h('span', {}, 'no registration for ', h('code', {}, f.issuer ?? '(no issuer)'), f.client_id !== null ? ` client ${f.client_id}` : '')),
      ...fact('Why', f.reason),
      ...fact('What to change', f.advice),
      ...fact('Detail', h('span', { class: 'muted' }, f.detail)),
    );
    found.hidden = false;
  } catch (err) {
    say(byId('lms-refusal-error'), detailOf(err));
  }
}

async function setStatus(action) {
  const id = shownId;
  if (id === null) return;
  const error = byId('lms-detail-error');
  say(error, null);
  try {
    await api('POST', `${lmsPath(id)}/${action}`);
    await listRegistrations();
    await showRegistration(id);
  } catch (err) {
    say(error, detailOf(err));
  }
}

/** The manual form's fields, as `POST /lms` takes them; empty optional fields are left out. */
function manualBody(form) {
  const data = new FormData(form);
  const text = (name) => String(data.get(name) ?? '').trim();
  const body = {
    issuer: text('issuer'),
    client_id: text('client_id'),
    deployments: text('deployments').split(/\r?\n/).map((d) => d.trim()).filter((d) => d !== ''),
    auth_url: text('auth_url'),
    token_url: text('token_url'),
    jwks_url: text('jwks_url'),
  };
  if (text('token_audience') !== '') body.token_audience = text('token_audience');
  if (text('title') !== '') body.title = text('title');
  return body;
}

export function wireLms() {
  const search = byId('lms-refusal-form');
  search.addEventListener('submit', (event) => {
    event.preventDefault();
    const value = String(new FormData(search).get('report_id') ?? '').trim();
    void busy(search.querySelector('button[type=submit]'), () => findRefusal(value));
  });

  const form = byId('lms-form');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const error = byId('lms-form-error');
    void busy(form.querySelector('button[type=submit]'), async () => {
      say(error, null);
      try {
        const saved = await api('POST', '/lms', { body: manualBody(form) });
        form.reset();
        say(byId('lms-form-status'), `Saved: ${saved.title} is ${saved.status}.`);
        await listRegistrations();
        await showRegistration(saved.id);
      } catch (err) {
        say(byId('lms-form-status'), null);
        say(error, detailOf(err));
      }
    });
  });

  // A deployment is added by registering the same issuer and client again with it (LmsRegistrationCreate),
  // with everything else as stored.
  const deploymentForm = byId('lms-deployment-form');
  deploymentForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const error = byId('lms-detail-error');
    const field = deploymentForm.elements.namedItem('deployment');
    const shown = JSON.parse(byId('lms-detail').dataset.body ?? 'null');
    if (shown === null) return;
    void busy(deploymentForm.querySelector('button[type=submit]'), async () => {
      say(error, null);
      try {
        await api('POST', '/lms', {
          body: {
            issuer: shown.issuer,
            client_id: shown.client_id,
            deployments: [field.value.trim()],
            auth_url: shown.auth_url,
            token_url: shown.token_url,
            jwks_url: shown.jwks_url,
            token_audience: shown.token_audience,
            title: shown.title,
            scopes: shown.scopes,
          },
        });
        field.value = '';
        await listRegistrations();
        await showRegistration(shown.id);
      } catch (err) {
        say(error, detailOf(err));
      }
    });
  });

  const activate = byId('lms-activate');
  activate.addEventListener('click', () => void busy(activate, () => setStatus('activate')));
  const deactivate = byId('lms-deactivate');
  deactivate.addEventListener('click', () => void busy(deactivate, () => setStatus('deactivate')));
  byId('lms-detail-close').addEventListener('click', () => {
    shownId = null;
    byId('lms-detail').hidden = true;
  });
}
