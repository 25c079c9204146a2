import ipaddr from 'ipaddr.js';

/**
 * Addresses as four 32-bit words of an IPv6 address; IPv4 is held as its IPv4-mapped form
 * (::ffff:a.b.c.d), so one comparison path serves both families and a mapped client
 * address matches IPv4 ranges without a special case.
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

function wordsOf(addr: ipaddr.IPv4 | ipaddr.IPv6): [number, number, number, number] {
  if (addr.kind() === 'ipv4') {
    const o = (addr as ipaddr.IPv4).octets;
    return [0, 0, 0xffff, ((o[0]! << 24) | (o[1]! << 16) | (o[2]! << 8) | o[3]!) >>> 0];
  }
  const p = (addr as ipaddr.IPv6).parts;
  return [
    ((p[0]! << 16) | p[1]!) >>> 0,
    ((p[2]! << 16) | p[3]!) >>> 0,
    ((p[4]! << 16) | p[5]!) >>> 0,
    ((p[6]! << 16) | p[7]!) >>> 0,
  ];
}

export function parseClientAddress(text: string): ClientAddress {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.parse(text.trim());
  } catch {
    return INVALID;
  }
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) addr = (addr as ipaddr.IPv6).toIPv4Address();
  const [w0, w1, w2, w3] = wordsOf(addr);
  let counterKey: string;
  if (addr.kind() === 'ipv4') counterKey = addr.toString();
  else {
    // One customer usually holds a whole /64, so per-client counters group by it.
    const p = (addr as ipaddr.IPv6).parts;
    counterKey = `${p[0]!.toString(16)}:${p[1]!.toString(16)}:${p[2]!.toString(16)}:${p[3]!.toString(16)}::/64`;
  }
  return { valid: true, w0, w1, w2, w3, counterKey };
}

/** Parsed client addresses by text, bounded: emptied when it grows past `max` (spoofed headers can vary freely). */
export class AddressCache {
  private readonly entries = new Map<string, ClientAddress>();
  constructor(private readonly max = 10_000) {}

  get(text: string): ClientAddress {
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
      const text = entry.trim();
      const [addr, bits] = text.includes('/') ? ipaddr.parseCIDR(text) : [ipaddr.parse(text), text.includes(':') ? 128 : 32];
      const prefix = addr.kind() === 'ipv4' ? bits + 96 : bits;
      const words = wordsOf(addr);
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
