// The endpoint URL rules of the tool settings (callback_url, provision_url, locations_url),
// checked when a URL is set and again before every call. The check resolves the host once and
// returns the addresses it vetted: the caller must connect to those (see pinnedLookup) and not
// resolve again, or a DNS answer that changes between check and connect (DNS rebinding) would
// walk straight past it. It never opens a connection itself.

import type { LookupFunction } from 'node:net';
import { classifyAddress, parseIpv4, type AddressClassification } from './ip-address.js';

export { classifyAddress, type AddressCategory, type AddressClassification } from './ip-address.js';

export type EndpointRule = 'absolute_https' | 'no_credentials' | 'public_address' | 'resolvable';

/** Production wraps `dns.promises.lookup(hostname, { all: true })`; tests inject answers. */
export type Resolver = (hostname: string) => Promise<readonly string[]>;

export interface EndpointCheckOptions {
  /** The setting's name, which every message starts with. */
  readonly field?: string;
  readonly resolve: Resolver;
  /**
   * Development only: also accept `http://` or `https://` to exactly 127.0.0.1, [::1] or
   * localhost (which must then resolve to loopback only), on any port. Nothing else is relaxed.
   */
  readonly allowLoopbackHttp?: boolean;
}

export type EndpointCheck =
  | {
      readonly ok: true;
      /** The URL as the WHATWG parser normalised it: the one to store and to call. */
      readonly url: string;
      /** Host name for the Host header and TLS server name; an IP literal without brackets. */
      readonly hostname: string;
      readonly port: number;
      /** Every address the host resolved to, all vetted; connect only to these. */
      readonly addresses: readonly string[];
    }
  | { readonly ok: false; readonly rule: EndpointRule; readonly message: string };

const DEV_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

function refusal(rule: EndpointRule, message: string): EndpointCheck {
  return { ok: false, rule, message };
}

function notPublic(field: string, c: AddressClassification, raw: string): EndpointCheck {
  return refusal(
    'public_address',
    `${field} must resolve only to publicly routable addresses (${c.address ?? raw} is ${c.description})`,
  );
}

/**
 * Whether `url` is already what the WHATWG parser makes of it, but for the `/` it adds to an empty path
 * (decision H-04). A URL the parser has to repair (`https:/host`, `\\` for `/`, fullwidth or enclosed
 * letters folded into a host name, a default port dropped, upper case lowered, characters
 * percent-encoded, an IPv4 address in another spelling) is not the URL it appears to be: a person reading
 * it and the service calling it would disagree about where it goes. Such URLs are refused, not repaired.
 * Any setting that holds a URL the service will call (the three tool URLs, an LMS's URLs) judges with it.
 */
export function isWrittenAsParsed(url: string, parsed?: URL): boolean {
  let href: string;
  try {
    href = (parsed ?? new URL(url)).href;
  } catch {
    return false;
  }
  return href === url || href === `${url}/`;
}

/**
 * Whether a stored URL is one only the development switch (`allowLoopbackHttp`) accepts: its host is
 * 127.0.0.1, [::1] or localhost (decision H-12). Such a URL, kept from a start with the switch on, fails
 * the rules on every call while the switch is off, so it is never called; the service flags it.
 */
export function isDevelopmentOnlyUrl(url: string | null): boolean {
  if (url === null || url === '') return false;
  try {
    return DEV_HOSTS.has(new URL(url).hostname);
  } catch {
    return false;
  }
}

export async function checkEndpointUrl(url: unknown, options: EndpointCheckOptions): Promise<EndpointCheck> {
  const field = options.field ?? 'url';
  const notAbsoluteHttps = refusal('absolute_https', `${field} must be an absolute https:// URL`);
  // The WHATWG parser silently drops tabs and newlines and trims spaces; a URL that needs such
  // repair is not the URL it appears to be, so it is refused rather than repaired.
  if (typeof url !== 'string' || url === '' || /[\u0000-\u0020\u007f]/.test(url)) return notAbsoluteHttps;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return notAbsoluteHttps;
  }
  if (!isWrittenAsParsed(url, parsed)) return notAbsoluteHttps;
  const devHost = options.allowLoopbackHttp === true && DEV_HOSTS.has(parsed.hostname);
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && devHost)) return notAbsoluteHttps;
  if (parsed.username !== '' || parsed.password !== '') {
    return refusal('no_credentials', `${field} must not contain credentials`);
  }

  const bracketed = parsed.hostname.startsWith('[');
  const hostname = bracketed ? parsed.hostname.slice(1, -1) : parsed.hostname;
  let answers: readonly string[];
  // The parser has already turned every IPv4 spelling (2130706433, 0x7f.1, 0177.0.0.1, ...) into
  // dotted decimal, so a literal is either bracketed IPv6 or canonical IPv4 here.
  if (bracketed || parseIpv4(hostname) !== null) {
    answers = [hostname];
  } else {
    try {
      answers = await options.resolve(hostname);
    } catch (caught) {
      const code = typeof caught === 'object' && caught !== null && 'code' in caught ? String(caught.code) : null;
      return refusal('resolvable', `${field} must resolve to a publicly routable host (${hostname} did not resolve${code ? `: ${code}` : ''})`);
    }
    if (!Array.isArray(answers) || answers.length === 0) {
      return refusal('resolvable', `${field} must resolve to a publicly routable host (${hostname} has no addresses)`);
    }
  }

  const addresses: string[] = [];
  for (const raw of answers) {
    const c = classifyAddress(String(raw));
    const allowed = c.publiclyRoutable || (devHost && c.category === 'loopback');
    if (!allowed || c.address === null) return notPublic(field, c, String(raw));
    if (!addresses.includes(c.address)) addresses.push(c.address);
  }
  const port = parsed.port !== '' ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
  return { ok: true, url: parsed.href, hostname, port, addresses };
}

/**
 * A `lookup` for http(s).request, net.connect or an undici Agent's `connect` option that
 * answers with the vetted addresses only, so the connection goes where the check looked.
 */
export function pinnedLookup(addresses: readonly string[]): LookupFunction {
  const entries = addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  return (hostname, options, callback) => {
    const wanted = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
    const usable = entries.filter((e) => wanted === 0 || e.family === wanted);
    const first = usable[0];
    if (!first) {
      const error: NodeJS.ErrnoException = new Error(`no vetted IPv${wanted} address for ${hostname}`);
      error.code = 'ENOTFOUND';
      callback(error, '', 0);
      return;
    }
    if (options.all === true) callback(null, usable);
    else callback(null, first.address, first.family);
  };
}
