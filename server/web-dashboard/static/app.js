// The dashboard's controller: sign-in, the workspace, and which tool and tab are shown. The address bar
// holds the place (`#/apps/<app_id>/<tab>`) so a reload comes back to it; the token stays in the session.
import { api, appPath, detailOf } from './api.js';
import { busy, byId, copyButton, say } from './dom.js';
import { loadAudit, wireAudit } from './audit.js';
import { loadLms, wireLms } from './lms.js';
import { forgetPeopleSecrets, loadBuilders, loadOperators, wirePeople } from './people.js';
import { clearToken, getToken, setToken } from './session.js';
import { loadGrades, wireGrades } from './grades.js';
import { loadSandbox, stopPolling, wireSandbox } from './sandbox.js';
import { renderSettings, wireSettings } from './settings.js';
import { fillContractVersions, loadMoreTools, loadToolList, markCurrent, renderToolHead, wireRegistration, wireToolActions } from './tools.js';

const TABS = ['settings', 'sandbox', 'grades'];

const ctx = {
  /** Identity of the signed-in credential (GET /me). */
  identity: null,
  appId: null,
  tab: 'settings',
  tool: null,
  sandbox: null,
  /** The Sandbox course shown on the Sandbox and Grades tabs; null means the trial course. */
  context: null,
  go(appId, tab) {
    window.location.hash = `#/apps/${encodeURIComponent(appId)}/${tab}`;
  },
  toolChanged(tool) {
    ctx.tool = tool;
    renderToolHead(ctx, tool);
    renderSettings(tool);
  },
  /** Shows a key once, on the page of tool `appId` (at registration, that page is still being opened). */
  showSecret(appId, title, value) {
    pendingSecret = { appId, title, value };
    if (appId === ctx.appId && !byId('tool').hidden) revealSecret();
  },
};

let pendingSecret = null;

function revealSecret() {
  if (pendingSecret === null || pendingSecret.appId !== ctx.appId) return;
  byId('secret-title').textContent = pendingSecret.title;
  byId('secret-value').value = pendingSecret.value;
  byId('secret-copy').replaceChildren(copyButton(() => byId('secret-value').value, `Copy the ${pendingSecret.title}`));
  byId('secret').hidden = false;
  pendingSecret = null;
}

function hideSecret() {
  pendingSecret = null;
  byId('secret-value').value = '';
  byId('secret-copy').replaceChildren();
  byId('secret').hidden = true;
}

function placeFromHash() {
  const match = /^#\/apps\/([^/]+)\/([a-z]+)$/.exec(window.location.hash);
  if (!match) return null;
  const tab = TABS.includes(match[2]) ? match[2] : 'settings';
  return { appId: decodeURIComponent(match[1]), tab };
}

/** The platform team's own pages, by their address. */
const PAGES = { '#/builders': ['builders', loadBuilders], '#/operators': ['operators', loadOperators], '#/audit': ['audit', loadAudit], '#/lms': ['lms', loadLms] };

function showPage(name) {
  for (const [id] of Object.values(PAGES)) byId(id).hidden = id !== name;
  for (const link of document.querySelectorAll('#platform-nav a')) {
    link.setAttribute('aria-current', String(link.getAttribute('href') === `#/${name}`));
  }
}

async function showPlace() {
  stopPolling();
  const place = placeFromHash();
  const tool = byId('tool');
  const register = byId('register');
  const page = ctx.identity?.kind === 'platform' ? PAGES[window.location.hash] : undefined;
  // A token shown once stays on the page that showed it: going anywhere else forgets it.
  forgetPeopleSecrets();
  if (page === undefined) showPage(null);
  else {
    ctx.appId = null;
    hideSecret();
    tool.hidden = true;
    register.hidden = true;
    markCurrent(null);
    showPage(page[0]);
    await page[1]();
    return;
  }
  if (place === null) {
    ctx.appId = null;
    tool.hidden = true;
    register.hidden = false;
    markCurrent(null);
    return;
  }
  register.hidden = true;
  if (place.appId !== ctx.appId) {
    // A key stays on its own tool's page: leaving it for another tool hides it for good.
    const pending = pendingSecret?.appId === place.appId ? pendingSecret : null;
    hideSecret();
    pendingSecret = pending;
    ctx.appId = place.appId;
    ctx.sandbox = null;
    ctx.context = null;
    say(byId('tool-error'), null);
    byId('picker').hidden = true;
    say(byId('picker-error'), null);
    say(byId('sandbox-status'), null);
    try {
      ctx.toolChanged(await api('GET', appPath(place.appId)));
    } catch (err) {
      tool.hidden = true;
      register.hidden = false;
      say(byId('register-error'), detailOf(err));
      return;
    }
  }
  markCurrent(ctx.appId);
  tool.hidden = false;
  revealSecret();
  ctx.tab = place.tab;
  for (const name of TABS) {
    const selected = name === place.tab;
    byId(`tab-${name}`).setAttribute('aria-selected', String(selected));
    byId(`panel-${name}`).hidden = !selected;
  }
  if (place.tab === 'sandbox') await loadSandbox(ctx);
  if (place.tab === 'grades') await loadGrades(ctx);
}

async function signedIn() {
  const identity = ctx.identity;
  byId('identity-name').textContent =
    identity.kind === 'platform' ? 'Platform team' : `${identity.builder.name} <${identity.builder.email}>`;
  byId('identity').hidden = false;
  byId('sign-in').hidden = true;
  byId('workspace').hidden = false;
  const platform = identity.kind === 'platform';
  byId('register-platform-note').hidden = !platform;
  byId('platform-nav').hidden = !platform;
  byId('register-form').hidden = platform;
  await loadToolList(ctx);
  await showPlace();
}

function showSignIn(message) {
  ctx.identity = null;
  byId('identity').hidden = true;
  byId('workspace').hidden = true;
  byId('sign-in').hidden = false;
  say(byId('sign-in-error'), message);
  byId('sign-in-token').focus();
}

/** Signs this tab in with another credential, and opens the registration of a first tool. */
async function signInAs(token) {
  const previous = getToken();
  setToken(token);
  try {
    ctx.identity = await api('GET', '/me');
  } catch (err) {
    if (previous === null) clearToken();
    else setToken(previous);
    throw err;
  }
  forgetPeopleSecrets();
  ctx.appId = null;
  if (window.location.hash !== '#/register') window.history.replaceState(null, '', '#/register');
  await signedIn();
}

async function start() {
  fillContractVersions();
  wireRegistration(ctx);
  wireToolActions(ctx);
  wireSettings(ctx);
  wireSandbox(ctx);
  wireGrades(ctx);
  wirePeople(signInAs);
  wireAudit();
  wireLms();

  for (const name of TABS) byId(`tab-${name}`).addEventListener('click', () => ctx.appId && ctx.go(ctx.appId, name));
  byId('show-register').addEventListener('click', () => {
    window.location.hash = '#/register';
  });
  byId('secret-dismiss').addEventListener('click', hideSecret);
  byId('tool-list-more').addEventListener('click', () => void loadMoreTools(ctx).catch((err) => say(byId('register-error'), detailOf(err))));
  byId('sign-out').addEventListener('click', () => {
    clearToken();
    hideSecret();
    forgetPeopleSecrets();
    stopPolling();
    ctx.appId = null;
    showSignIn(null);
  });
  window.addEventListener('hashchange', () => {
    if (ctx.identity) void showPlace();
  });

  const form = byId('sign-in-form');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const token = byId('sign-in-token').value.trim();
    void busy(form.querySelector('button[type=submit]'), async () => {
      setToken(token);
      try {
        ctx.identity = await api('GET', '/me');
      } catch (err) {
        clearToken();
        say(byId('sign-in-error'), detailOf(err));
        return;
      }
      byId('sign-in-token').value = '';
      say(byId('sign-in-error'), null);
      await signedIn();
    });
  });

  if (getToken() === null) {
    showSignIn(null);
    return;
  }
  try {
    ctx.identity = await api('GET', '/me');
  } catch (err) {
    clearToken();
    showSignIn(detailOf(err));
    return;
  }
  await signedIn();
}

void start();
