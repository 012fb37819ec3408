/**
 * The one way the service calls a tool (launch callbacks excepted: those go through the user's
 * browser). Every call re-checks the endpoint URL rules (they are "checked when set and again every
 * time the service calls"), then connects only to the addresses that check vetted: the host is
 * resolved once, by the check, and the socket is opened through `pinnedLookup`, so a name whose DNS
 * answer changes between check and connect (DNS rebinding) reaches nothing the check did not see.
 * TLS still verifies the certificate for the URL's host name, and `Host` is the URL's host.
 *
 * Redirects are never followed: a 3xx is handed back as a `redirect` outcome. One timer bounds the
 * whole call (resolution, connection, TLS, headers and body), and the body is read only up to a cap,
 * so a tool cannot hold the service or fill its memory.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import type { EndpointCheck, EndpointRule, Resolver } from '../../rules/endpoint-url.js';
import { checkEndpointUrl, pinnedLookup } from '../../rules/endpoint-url.js';
import type { Logger } from '../http/log.js';

/** The three endpoint settings of a tool (contract, Tool settings). */
export type EndpointField = 'callback_url' | 'provision_url' | 'locations_url';

/** The URLs a school's LMS names (decision LTI-03): checked by the same rules before every call. */
export type LmsEndpointField =
  | 'openid_configuration'
  | 'registration_endpoint'
  | 'authorization_endpoint'
  | 'token_endpoint'
  | 'jwks_uri'
  | 'lineitem'
  | 'lineitems'
  | 'scores'
  | 'deep_link_return_url';

/** Where a socket must go: the URL's host for TLS and `Host`, and the addresses the check vetted. */
export interface ConnectTarget {
  /** Host name of the URL (an IP literal without brackets): TLS server name and certificate identity. */
  readonly hostname: string;
  readonly port: number;
  readonly tls: boolean;
  /** Every address the check vetted; the socket connects to one of these and nothing else. */
  readonly addresses: readonly string[];
}

/**
 * Opens the socket of one call. The default connects through `pinnedLookup`; tests substitute one that
 * records the target and connects to a loopback server instead, so no test ever dials a public address.
 */
export type Connector = (target: ConnectTarget) => net.Socket;

export const defaultConnector: Connector = (target) => {
  const lookup = pinnedLookup(target.addresses);
  if (target.tls) {
    return tls.connect({
      host: target.hostname,
      port: target.port,
      lookup,
      // SNI carries names only (RFC 6066); an IP literal is verified against the certificate's IP SANs.
      ...(net.isIP(target.hostname) === 0 ? { servername: target.hostname } : {}),
      ALPNProtocols: ['http/1.1'],
    });
  }
  return net.connect({ host: target.hostname, port: target.port, lookup });
};

/** `dns.promises.lookup(host, {all: true})`: what the operating system would connect to. */
export const systemResolver: Resolver = async (hostname) => {
  const answers = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => a.address);
};

export const OUTBOUND_USER_AGENT = 'ToolIntegrationService/0.1 (+https://github.com/tool-integration-service)';

export interface ToolHttpClientOptions {
  resolve: Resolver;
  /** `ALLOW_LOOPBACK_TOOLS`: also accept http(s) to 127.0.0.1, [::1] or localhost (development only). */
  allowLoopback: boolean;
  connect?: Connector;
  userAgent?: string;
  log?: Logger;
  /** Times each call (the metrics, OPS-10), by the endpoint it went to. */
  observe?: (kind: ToolCallKind, seconds: number) => void;
}

/** The tool calls timed for the metrics: the launch's endpoint check (timed by the launch page), provision, locations. */
export type ToolCallKind = 'launch' | 'provision' | 'locations';
const CALL_KINDS: Partial<Record<EndpointField, ToolCallKind>> = { provision_url: 'provision', locations_url: 'locations' };

export interface ToolPost {
  /** The tool's setting as stored; null or blank is refused like any URL that fails the rules. */
  url: string | null;
  field: EndpointField;
  /** Sent as `application/x-www-form-urlencoded`. */
  form: Readonly<Record<string, string>>;
  /** Bounds the whole call, from resolution to the last byte of the body. */
  timeoutMs: number;
  /** Bodies longer than this are not read (`too_large`). */
  maxBodyBytes: number;
  accept?: string;
}

export type ConnectionFailureReason = 'refused' | 'dns' | 'tls' | 'reset' | 'unreachable' | 'protocol' | 'other';

export type ToolOutcome =
  /** The tool answered with a status that is not a redirect (2xx or an error status). */
  | { kind: 'response'; status: number; headers: IncomingHttpHeaders; body: Buffer; elapsedMs: number }
  | { kind: 'redirect'; status: number; location: string | null; elapsedMs: number }
  | { kind: 'timeout'; timeoutMs: number; elapsedMs: number }
  | { kind: 'connection_failure'; reason: ConnectionFailureReason; code: string | null; message: string; elapsedMs: number }
  /** The URL fails the endpoint rules now; nothing was sent. `message` names the rule (e.g. GAP-26). */
  | { kind: 'rule_failure'; rule: EndpointRule | 'missing'; message: string; elapsedMs: number }
  | { kind: 'too_large'; status: number; limitBytes: number; elapsedMs: number };

/** An outcome before its time is known. */
type PendingOutcome = ToolOutcome extends infer T ? (T extends unknown ? Omit<T, 'elapsedMs'> : never) : never;

const TLS_CODES = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

function classify(err: NodeJS.ErrnoException & { library?: string }): ConnectionFailureReason {
  const code = err.code ?? '';
  if (code === 'ECONNREFUSED') return 'refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL') return 'dns';
  if (
    code.startsWith('ERR_SSL') ||
    code.startsWith('ERR_TLS') ||
    TLS_CODES.has(code) ||
    err.library === 'SSL routines' ||
    // OpenSSL's record-layer failures (e.g. a server that does not speak TLS) surface as EPROTO.
    (code === 'EPROTO' && /SSL|TLS/.test(err.message))
  ) {
    return 'tls';
  }
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED') return 'reset';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'EADDRNOTAVAIL') return 'unreachable';
  if (code.startsWith('HPE_')) return 'protocol';
  return 'other';
}

class TimedOut extends Error {}

/** The longest a URL check waits for the resolver when no call's own timeout bounds it. */
export const CHECK_TIMEOUT_MS = 10_000;

/** Calls tools. One instance per service (`services.outbound`). */
export class ToolHttpClient {
  readonly allowLoopback: boolean;
  private readonly resolve: Resolver;
  private readonly connect: Connector;
  private readonly userAgent: string;
  private readonly log: Logger | undefined;
  private readonly observe: ToolHttpClientOptions['observe'];

  constructor(options: ToolHttpClientOptions) {
    this.observe = options.observe;
    this.resolve = options.resolve;
    this.allowLoopback = options.allowLoopback;
    this.connect = options.connect ?? defaultConnector;
    this.userAgent = options.userAgent ?? OUTBOUND_USER_AGENT;
    this.log = options.log;
  }

  /**
   * The endpoint URL rules with this service's resolver and development switch (settings use it on
   * write, the launch page before every launch). A resolver that does not answer within `timeoutMs`
   * fails the rule `resolvable`, so no caller waits on DNS for long.
   */
  async check(url: unknown, field: EndpointField | LmsEndpointField, timeoutMs = CHECK_TIMEOUT_MS): Promise<EndpointCheck> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<EndpointCheck>((resolve) => {
      timer = setTimeout(
        () =>
          resolve({
            ok: false,
            rule: 'resolvable',
            message: `${field} must resolve to a publicly routable host (its name did not resolve within ${timeoutMs} ms)`,
          }),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([checkEndpointUrl(url, { field, resolve: this.resolve, allowLoopbackHttp: this.allowLoopback }), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A form POST to a tool endpoint; never throws for anything the tool or the network does. */
  async postForm(request: ToolPost): Promise<ToolOutcome> {
    const started = Date.now();
    const elapsed = (): number => Date.now() - started;
    if (request.url === null || request.url.trim() === '') {
      return { kind: 'rule_failure', rule: 'missing', message: `${request.field} is not set`, elapsedMs: 0 };
    }
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TimedOut()), request.timeoutMs);
    });
    let abort: (() => void) | undefined;
    try {
      const check = await Promise.race([this.check(request.url, request.field, request.timeoutMs + 1000), deadline]);
      if (!check.ok) {
        return this.logged(request, null, { kind: 'rule_failure', rule: check.rule, message: check.message, elapsedMs: elapsed() });
      }
      const exchange = this.exchange(check, request, (cancel) => {
        abort = cancel;
      });
      const outcome = await Promise.race([exchange, deadline]);
      return this.logged(request, check.hostname, { ...outcome, elapsedMs: elapsed() } as ToolOutcome);
    } catch (err) {
      if (err instanceof TimedOut) {
        abort?.();
        return this.logged(request, null, { kind: 'timeout', timeoutMs: request.timeoutMs, elapsedMs: elapsed() });
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** One line per call; never the form (it carries a signed token). */
  private logged(request: ToolPost, host: string | null, outcome: ToolOutcome): ToolOutcome {
    const kind = CALL_KINDS[request.field];
    if (kind !== undefined) this.observe?.(kind, outcome.elapsedMs / 1000);
    this.log?.info('tool called', {
      field: request.field,
      ...(host !== null ? { host } : {}),
      outcome: outcome.kind,
      ms: outcome.elapsedMs,
      ...('status' in outcome ? { status: outcome.status } : {}),
      ...(outcome.kind === 'connection_failure' && outcome.code !== null ? { code: outcome.code } : {}),
    });
    return outcome;
  }

  private exchange(
    check: Extract<EndpointCheck, { ok: true }>,
    request: ToolPost,
    onCancel: (cancel: () => void) => void,
  ): Promise<PendingOutcome> {
    const url = new URL(check.url);
    const body = Buffer.from(new URLSearchParams(request.form).toString(), 'utf8');
    const target: ConnectTarget = {
      hostname: check.hostname,
      port: check.port,
      tls: url.protocol === 'https:',
      addresses: check.addresses,
    };
    return new Promise((resolve) => {
      let settled = false;
      const settle = (outcome: PendingOutcome): void => {
        if (settled) return;
        settled = true;
        resolve(outcome);
      };
      const req = http.request({
        method: 'POST',
        // `createConnection` decides where the socket goes; these only shape the request line.
        host: check.hostname,
        port: check.port,
        path: `${url.pathname}${url.search}`,
        headers: {
          Host: url.host,
          'Content-Type': 'application/x-www-form-urlencoded',
          'Content-Length': String(body.length),
          'User-Agent': this.userAgent,
          Accept: request.accept ?? '*/*',
          Connection: 'close',
        },
        createConnection: () => this.connect(target),
      });
      onCancel(() => {
        settled = true;
        req.destroy();
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        settle({
          kind: 'connection_failure',
          reason: classify(err),
          code: err.code ?? null,
          message: err.message,
        });
      });
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400) {
          settle({ kind: 'redirect', status, location: res.headers.location ?? null });
          res.destroy();
          req.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > request.maxBodyBytes) {
            settle({ kind: 'too_large', status, limitBytes: request.maxBodyBytes });
            res.destroy();
            req.destroy();
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => settle({ kind: 'response', status, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', (err: NodeJS.ErrnoException) =>
          settle({ kind: 'connection_failure', reason: classify(err), code: err.code ?? null, message: err.message }),
        );
        res.on('aborted', () =>
          settle({ kind: 'connection_failure', reason: 'reset', code: 'ECONNRESET', message: 'the response was cut short' }),
        );
      });
      req.end(body);
    });
  }
}

export function createToolHttpClient(options: ToolHttpClientOptions): ToolHttpClient {
  return new ToolHttpClient(options);
}
