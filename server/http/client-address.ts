/**
 * The client's address (decisions H-20, H-21): the TCP peer, or, behind proxies named by `TRUST_PROXY`, the
 * address those proxies say they received the request from (`X-Forwarded-For`, read right to left until an
 * address that is not trusted, as Express's `trust proxy` reads it, through the same `proxy-addr`).
 *
 * One function serves both fronts (the Express app and the contract front, PERF-60): the request context
 * resolves it once per request into `RequestLocals.clientAddress`, and the throttle, the access line and
 * the audit log read it from there.
 */
import type { IncomingMessage } from 'node:http';
import proxyAddr from 'proxy-addr';

/** What `TRUST_PROXY` names: nobody (unset), the nearest N hops, or the proxies' addresses and ranges. */
export type TrustProxy = { kind: 'none' } | { kind: 'hops'; hops: number } | { kind: 'addresses'; addresses: readonly string[] };

/** `proxy-addr`'s names for ranges, as Express accepts them. */
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);
/** More hops than any real chain of proxies; a larger count is a typo. */
const MAX_HOPS = 32;

const EXPECTED = `loopback, linklocal, uniquelocal, IP addresses or CIDR ranges (comma-separated), or a hop count from 1 to ${MAX_HOPS}`;

/**
 * Reads `TRUST_PROXY`. `true` (Express's "trust everyone") is refused (H-20): with it any client that reaches
 * the service, directly or through a proxy that appends to `X-Forwarded-For`, picks its own address and
 * escapes the throttle. A cloud load balancer whose addresses are not known is named by its hop count.
 */
export function readTrustProxy(raw: string | undefined, problems: string[]): TrustProxy {
  const value = raw?.trim() ?? '';
  if (value === '') return { kind: 'none' };
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops >= 1 && hops <= MAX_HOPS) return { kind: 'hops', hops };
    problems.push(`TRUST_PROXY must be ${EXPECTED}; a hop count of ${hops} is out of range (leave it unset to trust no proxy)`);
    return { kind: 'none' };
  }
  if (/^(true|false|yes|no|on|off|all|\*)$/i.test(value)) {
    problems.push(
      `TRUST_PROXY must be ${EXPECTED}, got ${JSON.stringify(value)}: name the proxies (or their number of hops) so a client cannot choose its own address; leave it unset to trust no proxy`,
    );
    return { kind: 'none' };
  }
  const addresses = value.split(',').map((part) => part.trim());
  for (const address of addresses) {
    if (NAMED_RANGES.has(address.toLowerCase())) continue;
    try {
      proxyAddr.compile(address);
    } catch {
      problems.push(`TRUST_PROXY must be ${EXPECTED}; ${JSON.stringify(address)} is not an IP address or CIDR range`);
      return { kind: 'none' };
    }
  }
  return { kind: 'addresses', addresses: addresses.map((a) => (NAMED_RANGES.has(a.toLowerCase()) ? a.toLowerCase() : a)) };
}

/** Resolves a request's client address; one per app, called once per request by the request context. */
export type ClientAddressOf = (req: IncomingMessage) => string;

/** When the peer is gone before the request is looked at (a reset connection), its bucket still has a name. */
const UNKNOWN = 'unknown';

const peerAddress: ClientAddressOf = (req) => req.socket.remoteAddress ?? UNKNOWN;

export function clientAddressResolver(trust: TrustProxy): ClientAddressOf {
  // Trusting nobody, `X-Forwarded-For` is not even read: the peer is the client (H-20).
  if (trust.kind === 'none') return peerAddress;
  const trusted = trust.kind === 'hops' ? (_address: string, hop: number) => hop < trust.hops : proxyAddr.compile([...trust.addresses]);
  return (req) => (req.socket.remoteAddress === undefined ? UNKNOWN : proxyAddr(req, trusted));
}

/** The setting as an operator wrote it, for the start-up line. */
export function describeTrustProxy(trust: TrustProxy): string {
  if (trust.kind === 'none') return 'none';
  if (trust.kind === 'hops') return `${trust.hops} hop${trust.hops === 1 ? '' : 's'}`;
  return trust.addresses.join(', ');
}
