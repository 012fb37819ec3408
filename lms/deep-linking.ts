/**
 * The Deep Linking return endpoint (Deep Linking 2.0 §4.5): the tool POSTs `JWT=<LtiDeepLinkingResponse>`.
 * The LMS verifies it against the tool's JWKS (iss = client ID, aud = the LMS's issuer, a fresh nonce,
 * the request's deployment and `data`), then makes one resource link per `ltiResourceLink` item, and a
 * line item for each that carries `lineItem` (decision LTI-37). A request's `data` answers once.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import type { JWTPayload } from 'jose';
import { createLineItem, lineItemJson } from './ags.js';
import { escapeHtml, isObject, LmsError, readForm, sendHtml, sendJson } from './http.js';
import type { Platform } from './platform.js';
import { DL_CLAIM, LTI_CLAIM, urlOf } from './platform.js';
import { registrationOf } from './store.js';
import { keySetOf, toolKeys } from './token.js';
import { createResourceLink } from './courses.js';

interface DeepLinkRequestRow {
  data: string;
  client_id: string;
  deployment_id: string;
  course_id: string;
  expires: number;
  answered: number;
}

const SKEW_SECONDS = 30;

function refused(description: string): LmsError {
  return new LmsError(400, 'invalid_request', description);
}

async function verifyResponse(platform: Platform, jwt: string): Promise<JWTPayload> {
  let clientId: unknown;
  let kid: string | undefined;
  try {
    clientId = decodeJwt(jwt).iss;
    kid = decodeProtectedHeader(jwt).kid;
  } catch {
    throw refused('JWT is not a JWT');
  }
  const registration = typeof clientId === 'string' ? await registrationOf(platform.db, clientId) : null;
  if (!registration) throw refused('the response iss is not a registered client');
  try {
    const keys = await toolKeys(platform, registration, kid);
    const { payload } = await jwtVerify(jwt, keySetOf(keys), {
      algorithms: ['RS256'],
      issuer: registration.client_id,
      audience: platform.issuer,
      requiredClaims: ['iat', 'exp', 'nonce'],
      clockTolerance: SKEW_SECONDS,
      currentDate: new Date(platform.clock.nowMs()),
    });
    return payload;
  } catch (err) {
    throw refused(`the Deep Linking response does not verify: ${err instanceof Error ? err.message : 'unknown error'}`);
  }
}

export async function deepLinkingReturn(platform: Platform, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const form = await readForm(req);
  const jwt = form['JWT'];
  if (!jwt) throw refused('JWT is required');
  const payload = await verifyResponse(platform, jwt);
  if (payload[`${LTI_CLAIM}message_type`] !== 'LtiDeepLinkingResponse') throw refused('message_type must be LtiDeepLinkingResponse');
  if (payload[`${LTI_CLAIM}version`] !== '1.3.0') throw refused('version must be 1.3.0');
  const data = payload[`${DL_CLAIM}data`];
  if (typeof data !== 'string') throw refused('data must echo the request’s data');
  const request = await platform.db.get<DeepLinkRequestRow>('SELECT * FROM lms_deep_link_requests WHERE data = ?', [data]);
  if (!request || request.client_id !== payload.iss || request.expires <= platform.clock.nowMs()) {
    throw refused('data names no open Deep Linking request of this client');
  }
  if (payload[`${LTI_CLAIM}deployment_id`] !== request.deployment_id) throw refused('deployment_id is not the request’s');
  const items = payload[`${DL_CLAIM}content_items`] ?? [];
  if (!Array.isArray(items)) throw refused('content_items must be an array');
  const made = await platform.db.transaction(async (db) => {
    const tx: Platform = { ...platform, db };
    // Answered once, whichever process answers: a racing answer waits for this row and finds it answered.
    const taken = await db.run('UPDATE lms_deep_link_requests SET answered = 1 WHERE data = ? AND answered = 0', [data]);
    if (taken.changes !== 1) throw refused('this Deep Linking request was answered already');
    const out: Record<string, unknown>[] = [];
    for (const item of items) {
      if (!isObject(item) || item['type'] !== 'ltiResourceLink') continue;
      const title = typeof item['title'] === 'string' && item['title'] !== '' ? item['title'] : 'Untitled';
      const url = typeof item['url'] === 'string' ? item['url'] : null;
      const custom = isObject(item['custom']) ? item['custom'] : {};
      if (Object.values(custom).some((v) => typeof v !== 'string')) throw refused('custom values must be strings');
      const link = await createResourceLink(tx, request.course_id, { title, url, custom: custom as Record<string, string> });
      const entry: Record<string, unknown> = { resource_link_id: link.id, title, url };
      const lineItem = item['lineItem'];
      if (isObject(lineItem)) {
        const max = lineItem['scoreMaximum'];
        if (typeof max !== 'number' || !Number.isFinite(max) || max <= 0) throw refused('lineItem.scoreMaximum must be greater than 0');
        const created = await createLineItem(tx, request.course_id, {
          label: typeof lineItem['label'] === 'string' && lineItem['label'] !== '' ? lineItem['label'] : title,
          scoreMaximum: max,
          resourceId: typeof lineItem['resourceId'] === 'string' ? lineItem['resourceId'] : null,
          resourceLinkId: link.id,
          tag: typeof lineItem['tag'] === 'string' ? lineItem['tag'] : null,
          startDateTime: null,
          endDateTime: null,
        });
        entry['line_item'] = lineItemJson(platform, created);
      }
      out.push(entry);
    }
    return out;
  });
  const msg = typeof payload[`${DL_CLAIM}msg`] === 'string' ? (payload[`${DL_CLAIM}msg`] as string) : null;
  const errormsg = typeof payload[`${DL_CLAIM}errormsg`] === 'string' ? (payload[`${DL_CLAIM}errormsg`] as string) : null;
  if ((req.headers.accept ?? '').includes('application/json')) {
    sendJson(res, 200, { course_id: request.course_id, resource_links: made, msg, errormsg });
    return;
  }
  const list = made
    .map((m) => `<li data-resource-link="${escapeHtml(String(m['resource_link_id']))}">${escapeHtml(String(m['title']))} (resource link <code>${escapeHtml(String(m['resource_link_id']))}</code>)</li>`)
    .join('');
  // What to do with what was placed (issue 29): launch it as a course member, then read the gradebook.
  const course = escapeHtml(request.course_id);
  const next =
    made.length === 0
      ? '<p id="next">Nothing was placed. Start another Deep Linking launch (<code>POST /controls/deep-links</code>) to try again.</p>'
      : `<p id="next">Next: launch an item as a member of course <code>${course}</code>: <code>POST ${escapeHtml(urlOf(platform, '/controls/launches'))}</code> with <code>{"resource_link_id": "…", "sub": "…"}</code> and the control token, then open the <code>url</code> it answers. Scores the tool sends land in <code>GET ${escapeHtml(urlOf(platform, `/controls/courses/${request.course_id}/gradebook`))}</code>.</p>`;
  // A response with no item is the teacher's Cancel (Deep Linking 2.0 §4.4): the request is answered, nothing made.
  const heading = made.length === 0 ? 'Nothing added' : 'Content added';
  sendHtml(
    res,
    200,
    heading,
    `<h1>${heading}</h1>${msg ? `<p>${escapeHtml(msg)}</p>` : ''}${errormsg ? `<p role="alert">${escapeHtml(errormsg)}</p>` : ''}<ul id="created">${list}</ul>${next}`,
  );
}
