/**
 * The HTTP front (decisions PERF-60, KIT-63): the service's `node:http` server hands every request to the
 * one request pipeline (server/app.ts), on the two classes below; the pipeline serves a contract operation's
 * path on them itself and hands every other request to the Express app.
 *
 * Express was most of a contract request's cost (its router, the prototype swap of `req` and `res`, the
 * URL parse of every middleware, `res.json` and `send`): a bare Express route costs four times a bare
 * node:http answer. The server is made with the two small classes below, which carry exactly what the
 * pipeline, the handlers and express-openapi-validator read from Express's objects, with Express's own
 * semantics: `path` and the 'simple' query parser (parseurl's split, `node:querystring`), `ip` (the app sets
 * no `trust proxy`, so the socket's address), `originalUrl`, `status()`, and `json()`/`send()` as Express 5
 * writes a string body (Content-Type with charset, Content-Length, freshness 304, 204/205/304 without
 * body, HEAD). A request Express serves gets Express's prototypes as always, so these classes cost it
 * nothing but the constructor's call.
 */
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { IncomingHttpHeaders, OutgoingHttpHeader, RequestListener, Server } from 'node:http';
import { parse as parseQueryString } from 'node:querystring';
import type { ParsedUrlQuery } from 'node:querystring';
import { parse as parseUrl } from 'node:url';

/** A request target split as parseurl (Express's `req.path`, `req.query`) splits it. */
export interface Target {
  /** null for a target with no path (`*`), which no route matches. */
  pathname: string | null;
  query: string | null;
}

/**
 * parseurl's `fastparse`: a target starting with `/` and holding none of the characters below is split at
 * its first `?`; anything else takes `url.parse`, as parseurl does, so a strange target means what it
 * meant to Express.
 */
export function splitTarget(url: string): Target {
  if (url.charCodeAt(0) !== 0x2f) return slowSplit(url);
  let pathname = url;
  let query: string | null = null;
  for (let i = 1; i < url.length; i += 1) {
    switch (url.charCodeAt(i)) {
      case 0x3f: // ?
        if (query === null) {
          pathname = url.substring(0, i);
          query = url.substring(i + 1);
        }
        break;
      case 0x09:
      case 0x0a:
      case 0x0c:
      case 0x0d:
      case 0x20:
      case 0x23: // #
      case 0xa0:
      case 0xfeff:
        return slowSplit(url);
      default:
    }
  }
  return { pathname, query };
}

function slowSplit(url: string): Target {
  // parseurl's own fallback (the legacy parser), kept for the same answers
  const parsed = parseUrl(url);
  return { pathname: parsed.pathname, query: typeof parsed.query === 'string' ? parsed.query : null };
}

export class ContractRequest extends IncomingMessage {
  // `declare`: own fields initialised in a constructor would shadow Express's getters of the same names
  // on the requests Express serves.
  /** The split target, set by the front before the request is served. */
  declare target: Target;
  declare params: Record<string, string>;
  declare body: unknown;

  get path(): string {
    return this.target.pathname ?? '';
  }

  /** Express 5 parses the query on every read, with the app's 'simple' parser; so does this. */
  get query(): ParsedUrlQuery {
    return parseQueryString(this.target.query as string);
  }

  get originalUrl(): string {
    return this.url ?? '';
  }

  /** Express's `req.ip` without a `trust proxy` setting (the app sets none): the peer's address. */
  get ip(): string | undefined {
    return this.socket.remoteAddress;
  }
}

/** Express's `setCharset`: the media type and its parameters as `content-type` formats them, charset utf-8. */
const withCharset = new Map<string, string>();
export function utf8ContentType(type: string): string {
  let formatted = withCharset.get(type);
  if (formatted === undefined) {
    const [base = '', ...rest] = type.split(';');
    const params = new Map<string, string>();
    for (const param of rest) {
      const at = param.indexOf('=');
      if (at < 0) continue;
      const value = param.slice(at + 1).trim();
      params.set(param.slice(0, at).trim().toLowerCase(), value.startsWith('"') ? value.slice(1, -1) : value);
    }
    params.set('charset', 'utf-8');
    formatted = [base.trim().toLowerCase(), ...[...params.keys()].sort().map((name) => `${name}=${quoted(params.get(name) ?? '')}`)].join('; ');
    if (withCharset.size < 64) withCharset.set(type, formatted);
  }
  return formatted;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const quoted = (value: string): string => (TOKEN.test(value) ? value : `"${value.replace(/([\\"])/g, '\\$1')}"`);

const NO_CACHE = /(?:^|,)\s*?no-cache\s*?(?:,|$)/;

/** Express's `req.fresh` (the `fresh` package): whether a GET or HEAD would be answered 304. */
function isFresh(method: string | undefined, status: number, req: IncomingHttpHeaders, res: ServerResponse): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  if (!((status >= 200 && status < 300) || status === 304)) return false;
  const modifiedSince = req['if-modified-since'];
  const noneMatch = req['if-none-match'];
  if (!modifiedSince && !noneMatch) return false;
  const cacheControl = req['cache-control'];
  if (cacheControl && NO_CACHE.test(cacheControl)) return false;
  if (noneMatch) {
    if (noneMatch === '*') return true;
    const etag = res.getHeader('ETag');
    if (!etag) return false;
    return noneMatch
      .split(/[ ,]+/)
      .filter((match) => match !== '')
      .some((match) => match === etag || match === `W/${String(etag)}` || `W/${match}` === etag);
  }
  const lastModified = res.getHeader('Last-Modified');
  return typeof lastModified === 'string' && Date.parse(lastModified) <= Date.parse(modifiedSince ?? '');
}

export class ContractResponse extends ServerResponse<ContractRequest> {
  declare locals: Record<string, unknown>;
  /** Called once, right before the head is written (the contract headers that depend on the dispatch). */
  declare beforeHead: ((res: ContractResponse) => void) | undefined;
  /** When the front took the request (`process.hrtime.bigint()`), for the access line. */
  declare started: bigint;
  declare logged: boolean;

  /** Express 5's `res.status`. */
  status(code: number): this {
    if (!Number.isInteger(code)) throw new TypeError(`Invalid status code: ${JSON.stringify(code)}. Status code must be an integer.`);
    if (code < 100 || code > 999) throw new RangeError(`Invalid status code: ${JSON.stringify(code)}. Status code must be greater than 99 and less than 1000.`);
    this.statusCode = code;
    return this;
  }

  get(field: string): OutgoingHttpHeader | undefined {
    return this.getHeader(field);
  }

  /** Express's `res.set` for one field (what the response validator's hooks use). */
  set(field: string, value: string | number | readonly string[]): this {
    let text = Array.isArray(value) ? value.map(String) : String(value as string | number);
    if (field.toLowerCase() === 'content-type' && typeof text === 'string' && !text.includes(';') && (text.startsWith('text/') || text.endsWith('json'))) {
      text = utf8ContentType(text);
    }
    this.setHeader(field, text);
    return this;
  }

  /** Express 5's `res.json`: the body as JSON text, Content-Type application/json unless one is set. */
  json(value: unknown): this {
    const text = JSON.stringify(value) as string | undefined;
    if (!this.hasHeader('Content-Type')) this.setHeader('Content-Type', 'application/json; charset=utf-8');
    return this.send(text);
  }

  /** Express 5's `res.send` for a string body (ETags are off in this app). */
  send(body: string | undefined): this {
    let chunk = body;
    if (typeof chunk === 'string') {
      const type = this.getHeader('Content-Type');
      if (type === undefined) this.setHeader('Content-Type', 'text/html; charset=utf-8');
      else if (typeof type === 'string') this.setHeader('Content-Type', utf8ContentType(type));
      this.setHeader('Content-Length', String(Buffer.byteLength(chunk)));
    }
    if (isFresh(this.req.method, this.statusCode, this.req.headers, this)) this.statusCode = 304;
    if (this.statusCode === 204 || this.statusCode === 304) {
      this.removeHeader('Content-Type');
      this.removeHeader('Content-Length');
      this.removeHeader('Transfer-Encoding');
      chunk = '';
    }
    if (this.statusCode === 205) {
      this.setHeader('Content-Length', '0');
      this.removeHeader('Transfer-Encoding');
      chunk = '';
    }
    if (this.req.method === 'HEAD' || chunk === undefined) this.end();
    else this.end(chunk, 'utf8');
    return this;
  }
}

// Node writes an implicit head through `writeHead` too, so this sees every response of the front.
const nodeWriteHead = ServerResponse.prototype.writeHead as (this: ServerResponse, ...args: unknown[]) => ServerResponse;
const contractWriteHead = function writeHead(this: ContractResponse, ...args: unknown[]) {
  const hook = this.beforeHead;
  if (hook !== undefined) {
    this.beforeHead = undefined;
    hook(this);
  }
  return nodeWriteHead.apply(this, args);
} as ContractResponse['writeHead'];
ContractResponse.prototype.writeHead = contractWriteHead;

/** The one pipeline's entry (server/app.ts): every request, its target split. */
export type FrontEntry = (req: ContractRequest, res: ContractResponse) => void;

/** A target no route can match: the legacy parser threw on it (`http://[bad/...`). */
const UNROUTABLE: Target = { pathname: null, query: null };

/**
 * The service's HTTP server: every request, on the front's classes, to `entry`, which runs the pipeline's
 * steps and then serves a contract path itself or hands the request to the Express app.
 */
export function createFrontServer(entry: FrontEntry): Server {
  const server = createServer<typeof ContractRequest, typeof ContractResponse>(
    { IncomingMessage: ContractRequest, ServerResponse: ContractResponse },
    (req, res) => {
      try {
        req.target = splitTarget(req.url ?? '');
      } catch {
        // Express's router parses it again and answers it, as it always did.
        req.target = UNROUTABLE;
      }
      entry(req, res);
    },
  );
  return server as unknown as Server;
}

/**
 * Hands a request the pipeline has entered to a `node:http` listener (the Express app). Express gives the
 * objects its own prototypes, so the head hook the front's class runs from its `writeHead` (the contract
 * version, NS-18) moves onto the response itself first.
 */
export function handOver(listener: RequestListener, req: ContractRequest, res: ContractResponse): void {
  res.writeHead = contractWriteHead;
  listener(req, res);
}
