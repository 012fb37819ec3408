// Which IP addresses a tool endpoint may point at. The service calls tool URLs from inside its own
// network, so anything that is not globally routable unicast could reach the service's
// neighbours (server-side request forgery). Ranges follow the IANA IPv4 and IPv6 Special-Purpose
// Address Registries, refusing whole blocks where the registry is mixed, and IPv6 is allowed only
// inside 2000::/3, the only block IANA allocates as global unicast.

export type AddressCategory =
  | 'public'
  | 'unspecified'
  | 'this-network'
  | 'loopback'
  | 'private'
  | 'shared'
  | 'link-local'
  | 'ietf-protocol'
  | 'documentation'
  | '6to4-relay'
  | 'benchmarking'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'ipv4-mapped'
  | 'ipv4-compatible'
  | 'ipv4-translated'
  | 'nat64'
  | 'discard'
  | 'teredo'
  | '6to4'
  | 'srv6'
  | 'unique-local'
  | 'site-local'
  | 'invalid';

const DESCRIPTIONS: Readonly<Record<AddressCategory, string>> = {
  public: 'publicly routable',
  unspecified: 'unspecified',
  'this-network': 'a "this network" address',
  loopback: 'loopback',
  private: 'private',
  shared: 'CGNAT shared address space',
  'link-local': 'link-local',
  'ietf-protocol': 'reserved for IETF protocol assignments',
  documentation: 'reserved for documentation',
  '6to4-relay': 'a 6to4 relay anycast address',
  benchmarking: 'reserved for benchmarking',
  multicast: 'multicast',
  broadcast: 'the broadcast address',
  reserved: 'reserved',
  'ipv4-mapped': 'an IPv4-mapped IPv6 address',
  'ipv4-compatible': 'an IPv4-compatible IPv6 address',
  'ipv4-translated': 'an IPv4-translated IPv6 address',
  nat64: 'a NAT64 address',
  discard: 'a discard-only address',
  teredo: 'a Teredo address',
  '6to4': 'a 6to4 address',
  srv6: 'an SRv6 segment identifier',
  'unique-local': 'unique local',
  'site-local': 'site-local',
  invalid: 'not an IP address',
};

export interface AddressClassification {
  /** Canonical text (dotted decimal, or RFC 5952 IPv6 without brackets or zone); null if invalid. */
  readonly address: string | null;
  readonly family: 4 | 6 | null;
  readonly category: AddressCategory;
  readonly publiclyRoutable: boolean;
  /** Reads after "is", as in "127.0.0.1 is loopback". */
  readonly description: string;
}

const IPV4_CANONICAL = /^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$/;

export function parseIpv4(text: string): number | null {
  if (!IPV4_CANONICAL.test(text)) return null;
  return text.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

function formatIpv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

function parseHextets(part: string, allowIpv4Tail: boolean): number[] | null {
  if (part === '') return [];
  const groups = part.split(':');
  const words: number[] = [];
  for (let k = 0; k < groups.length; k++) {
    const group = groups[k] as string;
    if (allowIpv4Tail && k === groups.length - 1 && group.includes('.')) {
      const v4 = parseIpv4(group);
      if (v4 === null) return null;
      words.push(v4 >>> 16, v4 & 0xffff);
    } else if (/^[0-9a-fA-F]{1,4}$/.test(group)) {
      words.push(parseInt(group, 16));
    } else {
      return null;
    }
  }
  return words;
}

/** Parses IPv6 text (brackets and a zone id allowed) to its 128-bit value. */
export function parseIpv6(text: string): bigint | null {
  let s = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  // A zone id names an interface for a link-local address; the address itself is what counts.
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  const gap = s.indexOf('::');
  let words: number[];
  if (gap < 0) {
    const all = parseHextets(s, true);
    if (all === null || all.length !== 8) return null;
    words = all;
  } else {
    if (s.indexOf('::', gap + 1) >= 0) return null;
    const head = parseHextets(s.slice(0, gap), false);
    const tail = parseHextets(s.slice(gap + 2), true);
    if (head === null || tail === null || head.length + tail.length > 7) return null;
    words = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  }
  return words.reduce((acc, w) => (acc << 16n) | BigInt(w), 0n);
}

function formatIpv6(value: bigint): string {
  const words = Array.from({ length: 8 }, (_, k) => Number((value >> BigInt(16 * (7 - k))) & 0xffffn));
  // RFC 5952: compress the longest run of two or more zero groups, the first one on a tie.
  let bestStart = -1;
  let bestLength = 1;
  for (let k = 0; k < 8; ) {
    if (words[k] !== 0) {
      k++;
      continue;
    }
    let end = k;
    while (end < 8 && words[end] === 0) end++;
    if (end - k > bestLength) {
      bestStart = k;
      bestLength = end - k;
    }
    k = end;
  }
  const hex = words.map((w) => w.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

type V4Range = readonly [base: number, bits: number, category: AddressCategory];
type V6Range = readonly [base: bigint, bits: number, category: AddressCategory];

function v4(cidr: string, category: AddressCategory): V4Range {
  const [base, bits] = cidr.split('/') as [string, string];
  return [parseIpv4(base) as number, Number(bits), category];
}

function v6(cidr: string, category: AddressCategory): V6Range {
  const [base, bits] = cidr.split('/') as [string, string];
  return [parseIpv6(base) as bigint, Number(bits), category];
}

/** Most specific first: the first match names the address in messages. */
const IPV4_RANGES: readonly V4Range[] = [
  v4('0.0.0.0/32', 'unspecified'),
  v4('255.255.255.255/32', 'broadcast'),
  v4('0.0.0.0/8', 'this-network'),
  v4('10.0.0.0/8', 'private'),
  v4('100.64.0.0/10', 'shared'),
  v4('127.0.0.0/8', 'loopback'),
  v4('169.254.0.0/16', 'link-local'),
  v4('172.16.0.0/12', 'private'),
  v4('192.0.0.0/24', 'ietf-protocol'),
  v4('192.0.2.0/24', 'documentation'),
  v4('192.88.99.0/24', '6to4-relay'),
  v4('192.168.0.0/16', 'private'),
  v4('198.18.0.0/15', 'benchmarking'),
  v4('198.51.100.0/24', 'documentation'),
  v4('203.0.113.0/24', 'documentation'),
  v4('224.0.0.0/4', 'multicast'),
  v4('240.0.0.0/4', 'reserved'),
];

const IPV6_RANGES: readonly V6Range[] = [
  v6('::/128', 'unspecified'),
  v6('::1/128', 'loopback'),
  v6('::ffff:0:0/96', 'ipv4-mapped'),
  v6('::ffff:0:0:0/96', 'ipv4-translated'),
  v6('::/96', 'ipv4-compatible'),
  v6('64:ff9b::/96', 'nat64'),
  v6('64:ff9b:1::/48', 'nat64'),
  // After NAT64: 64:ff9b:: lies inside ::/8 too, and the narrower name is the useful one.
  v6('::/8', 'reserved'),
  v6('100::/64', 'discard'),
  v6('2001::/32', 'teredo'),
  v6('2001:2::/48', 'benchmarking'),
  v6('2001::/23', 'ietf-protocol'),
  v6('2001:db8::/32', 'documentation'),
  v6('2002::/16', '6to4'),
  v6('3fff::/20', 'documentation'),
  v6('5f00::/16', 'srv6'),
  v6('fc00::/7', 'unique-local'),
  v6('fe80::/10', 'link-local'),
  v6('fec0::/10', 'site-local'),
  v6('ff00::/8', 'multicast'),
];
const GLOBAL_UNICAST_V6 = v6('2000::/3', 'public');

function inV4(value: number, [base, bits]: V4Range): boolean {
  const shift = 32 - bits;
  return Math.floor(value / 2 ** shift) === Math.floor(base / 2 ** shift);
}

function inV6(value: bigint, [base, bits]: V6Range): boolean {
  const shift = BigInt(128 - bits);
  return value >> shift === base >> shift;
}

function result(address: string | null, family: 4 | 6 | null, category: AddressCategory): AddressClassification {
  return { address, family, category, publiclyRoutable: category === 'public', description: DESCRIPTIONS[category] };
}

/**
 * Classifies one address. IPv4 may be written in any form a URL host accepts (`2130706433`,
 * `0x7f.1`, `0177.0.0.1`); such forms are normalised the way WHATWG URL parsing does, so the
 * verdict is about the address a connection would really reach.
 */
export function classifyAddress(ip: string): AddressClassification {
  if (ip.includes(':')) {
    const value = parseIpv6(ip);
    if (value === null) return result(null, null, 'invalid');
    const canonical = formatIpv6(value);
    const range = IPV6_RANGES.find((r) => inV6(value, r));
    if (range) return result(canonical, 6, range[2]);
    return result(canonical, 6, inV6(value, GLOBAL_UNICAST_V6) ? 'public' : 'reserved');
  }
  let value = parseIpv4(ip);
  if (value === null && /^[0-9a-fA-FxX.]+$/.test(ip)) {
    try {
      value = parseIpv4(new URL(`http://${ip}/`).hostname);
    } catch {
      value = null;
    }
  }
  if (value === null) return result(null, null, 'invalid');
  const range = IPV4_RANGES.find((r) => inV4(value, r));
  return result(formatIpv4(value), 4, range ? range[2] : 'public');
}
