/**
 * The few HTTP helpers the reference LMS needs on plain `node:http`: it has no framework and no pipeline of
 * the service's, so it can run alone or mounted under any path of another server.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** A refusal the LMS answers with: JSON `{error, error_description}` (OAuth's shape) or a page. */
export class LmsError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
    readonly headers: Record<string, string> = {},
    /** The body field a 422 is about. */
    readonly field?: string,
  ) {
    super(description);
  }
}

const BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * The body as text, 413 past the limit (the request is destroyed, as before). Read with the stream's
 * events rather than its async iterator (PERF-114): the iterator made a promise and a turn per chunk and
 * per end, on every score and token request; the answers and failures are the same.
 */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > BODY_LIMIT_BYTES) {
        done();
        req.destroy();
        reject(new LmsError(413, 'invalid_request', 'the request body is too large'));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      done();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    };
    const onError = (err: Error): void => {
      done();
      reject(err);
    };
    const onClose = (): void => {
      done();
      reject(new Error('the request was closed before its body ended'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

export function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

/** A JSON body (any `+json` media type), or 400/415. */
export async function readJson(req: IncomingMessage, ...types: string[]): Promise<unknown> {
  const type = mediaType(req);
  const accepted = types.length > 0 ? types : ['application/json'];
  if (!accepted.includes(type)) throw new LmsError(415, 'invalid_request', `Content-Type must be ${accepted.join(' or ')}`);
  const raw = await readBody(req);
  let nul = false;
  let parsed: unknown;
  try {
    // A parsed text can hold U+0000 only from the escape `\u0000` (JSON allows no raw control character in
    // a string): without one in the body, nothing can hold it, and the reviver (a call per value) is spared.
    parsed = raw.includes('\\u0000')
      ? JSON.parse(raw, (key, value: unknown) => {
          if (key.includes('\0') || (typeof value === 'string' && value.includes('\0'))) nul = true;
          return value;
        })
      : JSON.parse(raw);
  } catch {
    throw new LmsError(400, 'invalid_request', 'the request body is not JSON');
  }
  if (nul) throw nulRefused();
  return parsed;
}

/**
 * U+0000 is refused in any text the LMS is sent: PostgreSQL cannot store it in a text column, and an LMS
 * that took it on one store and failed on the other would answer differently by where it keeps its data.
 */
function nulRefused(): LmsError {
  return new LmsError(400, 'invalid_request', 'text may not contain the character U+0000');
}

/** A form body (`application/x-www-form-urlencoded`); a field sent twice counts as absent. */
export async function readForm(req: IncomingMessage): Promise<Record<string, string>> {
  if (mediaType(req) !== 'application/x-www-form-urlencoded') {
    throw new LmsError(415, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
  }
  const form = singleValues(new URLSearchParams(await readBody(req)));
  for (const [key, value] of Object.entries(form)) if (key.includes('\0') || value.includes('\0')) throw nulRefused();
  return form;
}

export function singleValues(params: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  const seen = new Set<string>();
  for (const [key, value] of params) {
    if (seen.has(key)) delete out[key];
    else out[key] = value;
    seen.add(key);
  }
  return out;
}

export function sendJson(res: ServerResponse, status: number, body: unknown, type = 'application/json', headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', ...headers });
  res.end(text);
}

export function sendEmpty(res: ServerResponse, status: number, headers: Record<string, string> = {}): void {
  res.writeHead(status, headers);
  res.end();
}

export function redirect(res: ServerResponse, url: string): void {
  res.writeHead(302, { Location: url, 'Cache-Control': 'no-store' });
  res.end();
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function sendHtml(res: ServerResponse, status: number, title: string, body: string): void {
  res.writeHead(status, {
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'no-store',
    'Referrer-Policy': 'no-referrer',
  });
  res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body>${body}</body></html>`);
}

/** An auto-submitting form POST (OIDC form_post, the platform's launch into a tool). */
export function sendFormPost(res: ServerResponse, action: string, fields: Record<string, string>, title = 'Continuing'): void {
  const inputs = Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join('');
  sendHtml(
    res,
    200,
    title,
    `<form id="post" method="post" action="${escapeHtml(action)}">${inputs}<noscript><button type="submit">Continue</button></noscript></form>` +
      '<script>document.getElementById("post").submit();</script>',
  );
}

export function bearer(req: IncomingMessage): string | null {
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return match?.[1] ?? null;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A text field that may be empty: a course's label, which LTI makes optional (an empty label is a course
 * without one, and its launches carry no `label` in the context claim). Absent or null is `undefined`.
 */
export function textField(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new LmsError(400, 'invalid_request', `${name} must be a string`);
  return value;
}

export function stringField(body: Record<string, unknown>, name: string, required: true): string;
export function stringField(body: Record<string, unknown>, name: string, required?: false): string | undefined;
export function stringField(body: Record<string, unknown>, name: string, required = false): string | undefined {
  const value = body[name];
  if (value === undefined || value === null) {
    if (required) throw new LmsError(400, 'invalid_request', `${name} is required`);
    return undefined;
  }
  if (typeof value !== 'string' || value.trim() === '') throw new LmsError(400, 'invalid_request', `${name} must be a non-empty string`);
  return value;
}
