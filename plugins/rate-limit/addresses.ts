/**
 * Addresses as four 32-bit words of an IPv6 address; IPv4 is held as its IPv4-mapped form
 * (::ffff:a.b.c.d), so one comparison path serves both families and a mapped client
 * address matches IPv4 ranges without a special case.
 *
 * The parser is our own rather than ipaddr.js's, whose `parse` takes inet_aton spellings
 * (`127.1`, `0x7f.1`, a bare `1`, `010.1.2.3` as octal 8.1.2.3) and reads the deprecated
 * IPv4-compatible `::a.b.c.d` as the mapped `::ffff:a.b.c.d`: the same text then meant other
 * bits than its hex spelling, and junk in a forwarded header became an address. One grammar
 * serves cidr_list entries (schema.ts) and client addresses, so whatever the config can name
 * a client can be, and the reverse.
 */

/** A client address parsed once and cached by its text. */
export interface ClientAddress {
  /** False when the text is no IP address: such a client only matches rules with an empty cidr_list. */
  readonly valid: boolean;
  readonly w0: number;
  readonly w1: number;
  readonly w2: number;
  readonly w3: number;
  /** Counter key of a per-client rule: the IPv4 address, or the IPv6 /64 prefix. */
  readonly counterKey: string;
}

const INVALID: ClientAddress = { valid: false, w0: 0, w1: 0, w2: 0, w3: 0, counterKey: 'unparsable' };

type Words = [number, number, number, number];

const OCTET = /^(?:0|[1-9]\d{0,2})$/;
const HEX_GROUP = /^[0-9A-Fa-f]{1,4}$/;
/** RFC 6874 zone ids are interface names (`eth0`, `br-lan`): unreserved URI characters. */
const ZONE = /^[0-9A-Za-z._~-]+$/;

/** Dotted decimal without leading zeros (as inet_pton and the config accept), as a 32-bit value. */
function parseIPv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!OCTET.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
}

/** Hex groups with at most one `::` and an optional dotted IPv4 tail; a zone id is dropped. */
function parseIPv6(text: string): Words | undefined {
  const percent = text.indexOf('%');
  const body = percent === -1 ? text : text.slice(0, percent);
  if (percent !== -1 && !ZONE.test(text.slice(percent + 1))) return undefined;
  const halves = body.split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] === '' ? [] : halves[0]!.split(':');
  const tail = halves.length === 1 || halves[1] === '' ? [] : halves[1]!.split(':');
  // Only the very last piece of the address may be dotted IPv4.
  const last = halves.length === 2 ? tail : head;
  let v4: number | undefined;
  if (last.length > 0 && last[last.length - 1]!.includes('.')) {
    v4 = parseIPv4(last.pop()!);
    if (v4 === undefined) return undefined;
  }
  const groups = head.length + tail.length + (v4 === undefined ? 0 : 2);
  // Without `::` exactly eight groups; `::` stands for at least one zero group.
  if (halves.length === 1 ? groups !== 8 : groups > 7) return undefined;
  const g: number[] = [];
  for (const piece of head) {
    if (!HEX_GROUP.test(piece)) return undefined;
    g.push(parseInt(piece, 16));
  }
  for (let i = groups; i < 8; i++) g.push(0);
  for (const piece of tail) {
    if (!HEX_GROUP.test(piece)) return undefined;
    g.push(parseInt(piece, 16));
  }
  if (v4 !== undefined) g.push(Math.floor(v4 / 65536), v4 % 65536);
  return [g[0]! * 65536 + g[1]!, g[2]! * 65536 + g[3]!, g[4]! * 65536 + g[5]!, g[6]! * 65536 + g[7]!];
}

/** An address text (surrounding whitespace ignored) as 128 bits, IPv4 mapped; undefined if it is none. */
function parseAddress(text: string): { words: Words; v4: boolean } | undefined {
  const v4 = parseIPv4(text);
  if (v4 !== undefined) return { words: [0, 0, 0xffff, v4], v4: true };
  const words = text.includes(':') ? parseIPv6(text) : undefined;
  return words === undefined ? undefined : { words, v4: false };
}

/** A cidr_list entry: an address, or an address with a prefix length for the family it is written in. */
function parseEntry(entry: string): { words: Words; prefix: number } | undefined {
  const text = entry.trim();
  const slash = text.lastIndexOf('/');
  const parsed = parseAddress(slash === -1 ? text : text.slice(0, slash));
  if (parsed === undefined) return undefined;
  if (slash === -1) return { words: parsed.words, prefix: 128 };
  const digits = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(digits)) return undefined;
  const bits = Number(digits);
  if (bits > (parsed.v4 ? 32 : 128)) return undefined;
  return { words: parsed.words, prefix: parsed.v4 ? bits + 96 : bits };
}

/** cidr_list grammar: an IPv4 (dotted decimal) or IPv6 address, with or without /prefix. */
export function isAddressOrCidr(entry: string): boolean {
  return parseEntry(entry) !== undefined;
}

function hex16(word: number, high: boolean): string {
  return (high ? word >>> 16 : word & 0xffff).toString(16);
}

export function parseClientAddress(text: string): ClientAddress {
  const parsed = parseAddress(text.trim());
  if (parsed === undefined) return INVALID;
  const [w0, w1, w2, w3] = parsed.words;
  // Mapped IPv6 is the IPv4 client (one counter, however it is written).
  const counterKey =
    w0 === 0 && w1 === 0 && w2 === 0xffff
      ? `${w3 >>> 24}.${(w3 >>> 16) & 255}.${(w3 >>> 8) & 255}.${w3 & 255}`
      : // One customer usually holds a whole /64, so per-client counters group by it.
        `${hex16(w0, true)}:${hex16(w0, false)}:${hex16(w1, true)}:${hex16(w1, false)}::/64`;
  return { valid: true, w0, w1, w2, w3, counterKey };
}

/** Longest text cached: an IPv6 address with a dotted tail is 45 characters, plus a zone id. */
const MAX_CACHED_LENGTH = 64;

/** Parsed client addresses by text, bounded: emptied when it grows past `max` (spoofed headers can vary freely). */
export class AddressCache {
  private readonly entries = new Map<string, ClientAddress>();
  constructor(private readonly max = 10_000) {}

  get(text: string): ClientAddress {
    // A forwarded header's first hop can be kilobytes of junk; kept as keys, max of those would
    // hold megabytes for nothing. No real address comes near this length, and parsing is cheap.
    if (text.length > MAX_CACHED_LENGTH) return parseClientAddress(text);
    let found = this.entries.get(text);
    if (found === undefined) {
      if (this.entries.size >= this.max) this.entries.clear();
      found = parseClientAddress(text);
      this.entries.set(text, found);
    }
    return found;
  }
}

function compareAt(words: Uint32Array, i: number, a: ClientAddress): number {
  const base = i * 4;
  return (
    words[base]! - a.w0 || words[base + 1]! - a.w1 || words[base + 2]! - a.w2 || words[base + 3]! - a.w3
  );
}

/** A parsed cidr_list: merged intervals, searched in O(log n) so long deny lists cost little. */
export class AddressSet {
  private constructor(
    private readonly starts: Uint32Array,
    private readonly ends: Uint32Array,
    /** Canonical text of the list (sorted, normalised), for stable counter keys. */
    readonly canonical: string,
  ) {}

  static parse(entries: readonly string[]): AddressSet {
    const intervals: Array<{ start: number[]; end: number[] }> = [];
    const canonical: string[] = [];
    for (const entry of entries) {
      const parsed = parseEntry(entry);
      // The config schema refuses such entries; this guards direct callers.
      if (parsed === undefined) throw new Error(`not an IPv4/IPv6 address or CIDR range: ${entry}`);
      const { words, prefix } = parsed;
      const start: number[] = [];
      const end: number[] = [];
      for (let w = 0; w < 4; w++) {
        const keep = Math.min(32, Math.max(0, prefix - w * 32));
        const mask = keep === 0 ? 0 : (0xffffffff << (32 - keep)) >>> 0;
        start.push((words[w]! & mask) >>> 0);
        end.push((words[w]! | ~mask) >>> 0);
      }
      intervals.push({ start, end });
      canonical.push(`${start.map((x) => x.toString(16)).join('.')}/${prefix}`);
    }
    const cmp = (a: number[], b: number[]) => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]! || a[3]! - b[3]!;
    intervals.sort((a, b) => cmp(a.start, b.start));
    const merged: typeof intervals = [];
    for (const iv of intervals) {
      const last = merged[merged.length - 1];
      if (last !== undefined && cmp(iv.start, last.end) <= 0) {
        if (cmp(iv.end, last.end) > 0) last.end = iv.end;
      } else merged.push({ start: iv.start, end: iv.end });
    }
    return new AddressSet(
      Uint32Array.from(merged.flatMap((iv) => iv.start)),
      Uint32Array.from(merged.flatMap((iv) => iv.end)),
      [...new Set(canonical)].sort().join(','),
    );
  }

  get isEmpty(): boolean {
    return this.starts.length === 0;
  }

  has(a: ClientAddress): boolean {
    if (!a.valid) return false;
    // Last interval starting at or before a.
    let lo = 0;
    let hi = this.starts.length / 4 - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (compareAt(this.starts, mid, a) <= 0) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found >= 0 && compareAt(this.ends, found, a) >= 0;
  }
}
