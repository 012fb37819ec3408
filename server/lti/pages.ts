/**
 * The HTML the LMS-facing side answers: refusals (no stack, no token, the report ID), the end of a
 * Dynamic Registration (the `org.imsglobal.lti.close` postMessage), the platform-storage steps of a login
 * and a launch, and the shell of the picker's pages (`picker-page.ts`). Every value is escaped; the only
 * scripts are this module's own, allowed by a per-response nonce.
 */
import { randomBytes } from 'node:crypto';
import type { RenderedPage } from '../launch-page/pages.js';
import { escapeHtml, messagePage } from '../launch-page/pages.js';
import type { LtiRefusal } from './refusals.js';
import { refusalText } from './refusals.js';

const STYLE =
  'body{font-family:system-ui,sans-serif;max-width:44rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#1b1b1b}' +
  'details{margin:.25rem 0 .25rem 1rem}label{display:block}.report{color:#555}button{margin:.25rem 0}';

function nonce(): string {
  return randomBytes(16).toString('base64url');
}

/** A page of the LMS-facing side: its own style (this module's plain one unless given), script and form target. */
export function page(input: {
  status: RenderedPage['status'];
  kind: string;
  title: string;
  body: string;
  style?: string;
  script?: string;
  formAction?: string;
}): RenderedPage {
  const n = nonce();
  const html = [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="robots" content="noindex">',
    `<title>${escapeHtml(input.title)}</title>`,
    `<style nonce="${n}">${input.style ?? STYLE}</style>`,
    '</head>',
    '<body>',
    input.body,
    ...(input.script !== undefined ? [`<script nonce="${n}">${input.script}</script>`] : []),
    '</body>',
    '</html>',
    '',
  ].join('\n');
  const csp = [
    "default-src 'none'",
    `style-src 'nonce-${n}'`,
    ...(input.script !== undefined ? [`script-src 'nonce-${n}'`] : []),
    `form-action ${input.formAction ?? "'none'"}`,
    "base-uri 'none'",
  ].join('; ');
  return { status: input.status, kind: input.kind, html, headers: { 'Content-Security-Policy': csp } };
}

/** A JSON value inside a script, safe from `</script>` and line separators. */
export function scriptValue(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

export function refusalPage(refusal: LtiRefusal, reportId: string): RenderedPage {
  const { heading, text } = refusalText(refusal);
  return messagePage({ status: refusal.status, kind: `lti_${refusal.code}`, title: heading, heading, text, reportId });
}

/** The end of a Dynamic Registration: tells the LMS to close the window (LTI-05). */
export function registeredPage(input: { title: string; status: string }): RenderedPage {
  const pendingText =
    input.status === 'active'
      ? 'The connection is active: instructors can add tools to their courses now.'
      : 'The platform team of the Tool Integration Service activates the connection before its first launch.';
  return page({
    status: 200,
    kind: 'lti_registered',
    title: 'Registered',
    body: `<h1>${escapeHtml(input.title)} is registered</h1>\n<p>${escapeHtml(pendingText)}</p>`,
    script: `(window.opener || window.parent).postMessage({subject: 'org.imsglobal.lti.close'}, '*');`,
  });
}

/**
 * Platform storage, login side (LTI-08): `lti.put_data` of the state to the LMS's storage frame, then the
 * authentication request. A frame that does not answer within two seconds is not waited for: the cookie
 * was set too.
 */
export function storeStatePage(input: { authUrl: string; storageTarget: string; platformOrigin: string; state: string }): RenderedPage {
  const script = `
var auth = ${scriptValue(input.authUrl)}, target = ${scriptValue(input.storageTarget)}, origin = ${scriptValue(input.platformOrigin)};
var state = ${scriptValue(input.state)}, id = 'put-' + state.slice(0, 8), done = false;
function go() { if (!done) { done = true; window.location.replace(auth); } }
var host = window.opener || window.parent, frame = host;
try { frame = host.frames[target] || host; } catch (e) { frame = host; }
window.addEventListener('message', function (event) {
  if (event.origin === origin && event.data && event.data.subject === 'lti.put_data.response' && event.data.message_id === id) go();
});
try { frame.postMessage({subject: 'lti.put_data', message_id: id, key: 'state_' + state, value: state}, origin); } catch (e) { go(); }
setTimeout(go, 2000);`;
  return page({ status: 200, kind: 'lti_store_state', title: 'Signing in', body: '<p>Signing in…</p>', script });
}

/** Platform storage, launch side (LTI-09): `lti.get_data` of the state, then the same POST with its value. */
export function askStatePage(input: { action: string; idToken: string; state: string; storageTarget: string; platformOrigin: string }): RenderedPage {
  const body = [
    `<form id="again" method="post" action="${escapeHtml(input.action)}">`,
    `<input type="hidden" name="id_token" value="${escapeHtml(input.idToken)}">`,
    `<input type="hidden" name="state" value="${escapeHtml(input.state)}">`,
    '<input type="hidden" name="lti_storage_value" value="">',
    '</form>',
    '<p>Opening…</p>',
  ].join('\n');
  const script = `
var target = ${scriptValue(input.storageTarget)}, origin = ${scriptValue(input.platformOrigin)}, state = ${scriptValue(input.state)};
var id = 'get-' + state.slice(0, 8), form = document.getElementById('again'), sent = false;
function send(value) { if (!sent) { sent = true; form.elements['lti_storage_value'].value = value || ''; form.submit(); } }
var host = window.opener || window.parent, frame = host;
try { frame = host.frames[target] || host; } catch (e) { frame = host; }
window.addEventListener('message', function (event) {
  if (event.origin === origin && event.data && event.data.subject === 'lti.get_data.response' && event.data.message_id === id) send(event.data.value);
});
try { frame.postMessage({subject: 'lti.get_data', message_id: id, key: 'state_' + state}, origin); } catch (e) { send(''); }
setTimeout(function () { send(''); }, 2000);`;
  return page({ status: 200, kind: 'lti_ask_state', title: 'Opening', body, script, formAction: new URL(input.action).origin });
}
