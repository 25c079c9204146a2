import ipaddr from 'ipaddr.js';

/** Per-process memo of small pure functions of an address string (clients repeat). */
function memo<T>(fn: (address: string) => T, max = 4096): (address: string) => T {
  const seen = new Map<string, T>();
  return (address) => {
    let value = seen.get(address);
    if (value === undefined) {
      value = fn(address);
      if (seen.size >= max) seen.clear();
      seen.set(address, value);
    }
    return value;
  };
}

const DOTTED_QUAD = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/**
 * A forwarded address as plugins get it: only IPv4-mapped IPv6 in its usual spelling becomes
 * IPv4; everything else is passed on as written. Plugins parse it with their own strict rules
 * (a loose parser would read `0x0` or `010.1.2.3` as addresses), and the text comes from the
 * client, so nothing is cached by it.
 */
export function canonicalAddress(address: string): string {
  if (address.length > 7 && address.charCodeAt(0) === 58 /* : */ && address.slice(0, 7).toLowerCase() === '::ffff:' && DOTTED_QUAD.test(address.slice(7))) return address.slice(7);
  return address;
}

export type PeerFilter = (address: string) => boolean;

/** A matcher for server.trusted_proxies; undefined when every peer is trusted. */
export function trustedProxies(cidrs: readonly string[] | undefined): PeerFilter | undefined {
  if (!cidrs) return undefined;
  const ranges = cidrs.map((c) => (c.includes('/') ? ipaddr.parseCIDR(c) : ([ipaddr.parse(c), ipaddr.parse(c).kind() === 'ipv4' ? 32 : 128] as [ipaddr.IPv4 | ipaddr.IPv6, number])));
  return memo((address) => {
    let parsed: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      parsed = ipaddr.process(address);
    } catch {
      return false;
    }
    return ranges.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range as never, bits));
  });
}

export function checkTrustedProxies(cidrs: readonly string[]): string | undefined {
  for (const c of cidrs) {
    try {
      if (c.includes('/')) ipaddr.parseCIDR(c);
      else ipaddr.parse(c);
    } catch {
      return `not an address or CIDR range: ${c}`;
    }
  }
  return undefined;
}

function firstValue(header: string | string[] | undefined): string | undefined {
  const text = Array.isArray(header) ? header[0] : header;
  if (!text) return undefined;
  const comma = text.indexOf(',');
  const first = (comma === -1 ? text : text.slice(0, comma)).trim();
  return first || undefined;
}

/**
 * Spec, rate limiting item 6: the first non-empty of X-Svc-Forwarded-For, X-Forwarded-For
 * (its first address), then the socket's peer — the headers only from trusted peers. The peer
 * and a forwarded address are canonicalised alike (IPv4-mapped IPv6 becomes IPv4).
 */
export function clientAddressOf(
  headers: Record<string, string | string[] | undefined>,
  peer: string,
  trusted: PeerFilter | undefined,
): string {
  const socketPeer = canonicalAddress(peer);
  if (trusted && !trusted(socketPeer)) return socketPeer;
  const forwarded = firstValue(headers['x-svc-forwarded-for']) ?? firstValue(headers['x-forwarded-for']);
  return forwarded ? canonicalAddress(forwarded) : socketPeer;
}
