/**
 * The launch page's HTML: the auto-submitting form and the pages a person sees when the tool cannot be
 * opened (decision S-10). Every value that reaches the markup is escaped for HTML, attribute values
 * included; the only script is the form's one-line submit, allowed by a per-response nonce.
 */
import { randomBytes } from 'node:crypto';

export function escapeHtml(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

export interface RenderedPage {
  status: 200 | 202 | 400 | 401 | 403 | 404 | 409 | 410 | 500 | 502 | 503;
  html: string;
  /** Headers of this page beyond those every page sends. */
  headers: Record<string, string>;
  /** For the log line: which page, in a word. */
  kind: string;
  /** A message page's words, for callers that answer JSON instead (the signed launch, decision OPS-01). */
  message?: string;
}

const STYLE = 'body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;line-height:1.5;color:#1b1b1b}' +
  'code{font-size:.95em}.report{color:#555}';

function newNonce(): string {
  return randomBytes(16).toString('base64url');
}

function document(input: { title: string; body: string; nonce: string; refreshSeconds?: number }): string {
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="robots" content="noindex">',
    ...(input.refreshSeconds !== undefined ? [`<meta http-equiv="refresh" content="${input.refreshSeconds}">`] : []),
    `<title>${escapeHtml(input.title)}</title>`,
    `<style nonce="${input.nonce}">${STYLE}</style>`,
    '</head>',
    '<body>',
    input.body,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/** A page that runs no script and posts no form. */
function infoCsp(nonce: string): string {
  return `default-src 'none'; style-src 'nonce-${nonce}'; base-uri 'none'; form-action 'none'`;
}

export interface MessagePageInput {
  status: RenderedPage['status'];
  kind: string;
  title: string;
  heading: string;
  text: string;
  /** The response's `Request-Id`: what the person sends to support. */
  reportId: string | null;
  refreshSeconds?: number;
  headers?: Record<string, string>;
}

export function messagePage(input: MessagePageInput): RenderedPage {
  const nonce = newNonce();
  const body = [
    `<h1>${escapeHtml(input.heading)}</h1>`,
    `<p>${escapeHtml(input.text)}</p>`,
    ...(input.reportId !== null ? [`<p class="report">Report ID: <code>${escapeHtml(input.reportId)}</code></p>`] : []),
  ].join('\n');
  return {
    status: input.status,
    kind: input.kind,
    html: document({
      title: input.title,
      body,
      nonce,
      ...(input.refreshSeconds !== undefined ? { refreshSeconds: input.refreshSeconds } : {}),
    }),
    headers: { 'Content-Security-Policy': infoCsp(nonce), ...(input.headers ?? {}) },
    message: `${input.heading}. ${input.text}`,
  };
}

/**
 * The form that hands the browser to the tool: a POST of `launch_data` to the callback URL, submitted
 * by script, with a button for browsers without it. The CSP allows that one script and a form post to
 * the callback URL's origin only.
 */
export function launchFormPage(input: { appName: string; callbackUrl: string; launchData: string }): RenderedPage {
  const nonce = newNonce();
  const body = [
    `<form id="launch" method="post" action="${escapeHtml(input.callbackUrl)}" enctype="application/x-www-form-urlencoded">`,
    `<input type="hidden" name="launch_data" value="${escapeHtml(input.launchData)}">`,
    `<noscript><button type="submit">Continue to ${escapeHtml(input.appName)}</button></noscript>`,
    '</form>',
    `<script nonce="${nonce}">document.getElementById('launch').submit();</script>`,
  ].join('\n');
  const origin = new URL(input.callbackUrl).origin;
  return {
    status: 200,
    kind: 'launch_form',
    html: document({ title: `Opening ${input.appName}`, body, nonce }),
    headers: {
      'Content-Security-Policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; form-action ${origin}; base-uri 'none'`,
    },
  };
}
