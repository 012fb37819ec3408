/**
 * Calls to a school's LMS (OpenID configuration, registration endpoint, JWKS, token endpoint, AGS): each
 * URL passes the endpoint URL rules first (decision LTI-03, with the development loopback switch), and the
 * socket goes only to the addresses the rules vetted, as for calls to tools (`server/outbound/`).
 * Redirects are not followed; one timer bounds the whole call; bodies are read up to a cap.
 */
import http from 'node:http';
import httpsModule from 'node:https';
import { isIP } from 'node:net';
import { pinnedLookup } from '../../rules/endpoint-url.js';
import type { LmsEndpointField, ToolHttpClient } from '../outbound/index.js';
import { OUTBOUND_USER_AGENT } from '../outbound/index.js';
import type { LmsExchange } from '../scores/lms-registry.js';
import type { OwnLms } from './urls.js';
import { ownLmsTarget } from './urls.js';

export const LMS_TIMEOUT_MS = 10_000;
/** JWKS, OpenID configurations and AGS answers are small; Brightspace's JWKS is the largest seen. */
export const LMS_MAX_BODY_BYTES = 1_048_576;

export interface LmsRequest {
  method: 'GET' | 'POST' | 'PUT';
  url: string;
  field: LmsEndpointField;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs?: number;
}

export type LmsAnswer =
  | { ok: true; status: number; headers: http.IncomingHttpHeaders; body: string }
  /** Nothing usable came back: the URL failed the rules, or the network or the clock did. */
  | { ok: false; reason: string };

/** How many vetted IP-literal URLs a process keeps (PERF-73); all are dropped when it is reached. */
const MAX_VETTED_URLS = 1024;

/** A vetted URL as a request needs it; the headers are the ones every request to the LMS carries. */
interface LmsTarget {
  client: typeof http | typeof httpsModule;
  hostname: string;
  port: number;
  path: string;
  options: Pick<http.RequestOptions, 'lookup'> & { servername?: string };
  headers: Readonly<Record<string, string>>;
}

function sameOrigin(url: URL, issuer: string): boolean {
  if (issuer === '') return false;
  try {
    return new URL(issuer).origin === url.origin;
  } catch {
    return false;
  }
}

function bare(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

function portOf(url: URL): number {
  return url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

export class LmsHttp {
  constructor(
    private readonly outbound: Pick<ToolHttpClient, 'check'>,
    /** The Sandbox's LMS in process: its URLs are the service's own, exempt from the rules (LTI-43). */
    private readonly own?: OwnLms,
    /** Times each call, whatever its answer (the metrics, OPS-10). */
    private readonly observe?: (req: LmsRequest, seconds: number) => void,
  ) {}

  /** The endpoint URL rules alone, for a URL stored now and called later. */
  async check(url: string, field: LmsEndpointField): ReturnType<ToolHttpClient['check']> {
    const target = ownLmsTarget(this.own, url);
    if (target) return { ok: true, url: new URL(url).href, hostname: bare(target.hostname), port: portOf(target), addresses: [] };
    return this.outbound.check(url, field);
  }

  /**
   * Where each URL whose host is an IP literal goes, once vetted (PERF-73): for such a URL the rules'
   * answer depends on nothing but the URL (no resolution), so an AGS scores URL is checked and parsed once,
   * not per score. Keyed by the own LMS's issuer too, since a URL under it is not vetted (LTI-43); URLs of
   * the issuer's origin and named hosts (resolved and pinned per request) are never kept.
   */
  readonly #vetted = new Map<string, LmsTarget>();

  async request(req: LmsRequest): Promise<LmsAnswer> {
    if (this.observe === undefined) return this.#request(req);
    const started = performance.now();
    const answer = await this.#request(req);
    this.observe(req, (performance.now() - started) / 1000);
    return answer;
  }

  async #request(req: LmsRequest): Promise<LmsAnswer> {
    const timeoutMs = req.timeoutMs ?? LMS_TIMEOUT_MS;
    const target = await this.#target(req, timeoutMs);
    if ('reason' in target) return target;
    return new Promise((resolve) => {
      let settled = false;
      const settle = (answer: LmsAnswer): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(answer);
      };
      const outgoing = target.client.request(
        {
          method: req.method,
          hostname: target.hostname,
          port: target.port,
          path: target.path,
          ...target.options,
          headers: headerList(target.headers, req),
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > LMS_MAX_BODY_BYTES) {
              settle({ ok: false, reason: `${req.field} answered more than ${LMS_MAX_BODY_BYTES} bytes` });
              outgoing.destroy();
              return;
            }
            chunks.push(chunk);
          });
          res.on('end', () =>
            settle({
              ok: true,
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8'),
            }),
          );
          res.on('error', (err) => settle({ ok: false, reason: `${req.field} could not be read: ${err.message}` }));
        },
      );
      const timer = setTimeout(() => {
        settle({ ok: false, reason: `${req.field} did not answer within ${timeoutMs} ms` });
        outgoing.destroy();
      }, timeoutMs);
      outgoing.on('error', (err: NodeJS.ErrnoException) => settle({ ok: false, reason: `${req.field} could not be reached (${err.code ?? err.message})` }));
      outgoing.end(req.body);
    });
  }

  /** The URL under the rules (or the own LMS's transport), as what a request to it needs. */
  async #target(req: LmsRequest, timeoutMs: number): Promise<LmsTarget | { ok: false; reason: string }> {
    const issuer = this.own?.issuer() ?? '';
    const key = `${issuer}\n${req.url}`;
    const known = this.#vetted.get(key);
    if (known) return known;
    const own = ownLmsTarget(this.own, req.url);
    // The service's own LMS is reached where the process listens (no rules, no pinning: it is itself).
    const check = own
      ? ({ ok: true, url: own.href, hostname: bare(own.hostname), port: portOf(own), addresses: [] } as const)
      : await this.outbound.check(req.url, req.field, timeoutMs);
    if (!check.ok) return { ok: false, reason: check.message };
    const url = new URL(check.url);
    const https = url.protocol === 'https:';
    const target: LmsTarget = {
      client: https ? httpsModule : http,
      hostname: check.hostname,
      port: check.port,
      path: `${url.pathname}${url.search}`,
      options: {
        ...(check.addresses.length > 0 ? { lookup: pinnedLookup(check.addresses) } : {}),
        ...(https && !/^[\d.:]+$/.test(check.hostname) ? { servername: check.hostname } : {}),
      },
      headers: {
        Host: own ? new URL(req.url).host : url.host,
        // Canvas refuses server calls without one.
        'User-Agent': OUTBOUND_USER_AGENT,
        Accept: 'application/json',
      },
    };
    const literal = !own && check.addresses.length === 1 && check.addresses[0] === check.hostname && isIP(check.hostname) !== 0;
    if (literal && !sameOrigin(url, issuer)) {
      // Bounded: a process publishes to a handful of LMSes, each with a URL per gradebook column.
      if (this.#vetted.size >= MAX_VETTED_URLS) this.#vetted.clear();
      this.#vetted.set(key, target);
    }
    return target;
  }

  /** GET a JSON object; a non-200 or non-object answer is a reason. */
  async getJson(url: string, field: LmsEndpointField): Promise<{ ok: true; value: Record<string, unknown> } | { ok: false; reason: string }> {
    const answer = await this.request({ method: 'GET', url, field });
    if (!answer.ok) return answer;
    if (answer.status !== 200) return { ok: false, reason: `${field} answered HTTP ${answer.status}` };
    const value = parseObject(answer.body);
    return value ? { ok: true, value } : { ok: false, reason: `${field} did not answer a JSON object` };
  }
}

/**
 * The request's headers as the flat name/value list `node:http` writes as given (PERF-103): with an object
 * it calls `setHeader` per header (a lower-cased copy of each name and a map of them) and looks the Host and
 * Authorization headers up again. The caller's headers win over the ones every request carries, compared
 * without case, as `setHeader` compared them; the body's Content-Length is set unless the caller sets one.
 */
function headerList(common: Readonly<Record<string, string>>, req: Pick<LmsRequest, 'headers' | 'body'>): string[] {
  const own = req.headers ?? {};
  const ownNames = Object.keys(own).map((name) => name.toLowerCase());
  const list: string[] = [];
  for (const name in common) if (!ownNames.includes(name.toLowerCase())) list.push(name, common[name] as string);
  if (req.body !== undefined && !ownNames.includes('content-length')) list.push('Content-Length', String(Buffer.byteLength(req.body)));
  for (const name in own) list.push(name, own[name] as string);
  return list;
}

export function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * The AGS publisher's `fetch` for a school's LMS: the same rules and pinning, answered as a `Response`
 * so the publisher treats the Sandbox and real LMSes alike. A refusal by the rules is a network error.
 */
export function lmsFetch(lms: LmsHttp, field: LmsEndpointField) {
  return async (input: string, init: RequestInit): Promise<Response> => {
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    const answer = await lms.request({
      method: (init.method ?? 'GET') as LmsRequest['method'],
      url: input,
      field,
      headers,
      ...(typeof init.body === 'string' ? { body: init.body } : init.body instanceof URLSearchParams ? { body: init.body.toString() } : {}),
    });
    if (!answer.ok) throw new TypeError(answer.reason);
    const out = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (typeof value === 'string') out.set(name, value);
    }
    const nullBody = answer.status === 204 || answer.status === 304;
    return new Response(nullBody ? null : answer.body, { status: answer.status, headers: out });
  };
}

/** The endpoint field each AGS party's URL is checked and reported as. */
const PARTY_FIELDS: Readonly<Record<LmsExchange['party'], LmsEndpointField>> = {
  token_endpoint: 'token_endpoint',
  lineitem: 'lineitem',
  lineitems: 'lineitems',
  scores: 'scores',
};

/**
 * The AGS publisher's plain exchange with a school's LMS (PERF-46): the same rules, pinning, timer and
 * body cap as `lmsFetch`, without building fetch's Headers and Response around each request.
 */
export function lmsExchange(lms: LmsHttp) {
  return async (request: LmsExchange): Promise<{ status: number; body: string } | { failure: string }> => {
    // The failure names the endpoint the request went to (LTI-124), not one field for all of them.
    const { party, ...rest } = request;
    const answer = await lms.request({ ...rest, field: PARTY_FIELDS[party] });
    return answer.ok ? { status: answer.status, body: answer.body } : { failure: answer.reason };
  };
}
