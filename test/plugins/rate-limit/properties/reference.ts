/**
 * Straightforward references the property tests compare the plugin against. They are written
 * for obviousness, not speed, and share no code with the plugin: addresses are BigInts (IPv6
 * parsed by the WHATWG URL parser, an independent implementation), wall clocks come straight
 * from Intl.DateTimeFormat parts.
 */
import fc from 'fast-check';

// ---------------------------------------------------------------- addresses

const V4_MAPPED = 0xffffn << 32n;
const ALL = (1n << 128n) - 1n;

/** Dotted decimal, no leading zeros: the only IPv4 spelling the plugin's docs and config accept. */
function refIPv4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0n;
  for (const part of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(part) || Number(part) > 255) return undefined;
    value = (value << 8n) | BigInt(part);
  }
  return value;
}

/** IPv6 bits, with an optional zone id (RFC 6874 unreserved characters) that does not take part. */
function refIPv6(text: string): bigint | undefined {
  const percent = text.indexOf('%');
  const body = percent === -1 ? text : text.slice(0, percent);
  if (percent !== -1 && !/^[0-9A-Za-z._~-]+$/.test(text.slice(percent + 1))) return undefined;
  if (!body.includes(':') || !/^[0-9A-Fa-f:.]+$/.test(body)) return undefined;
  let host: string;
  try {
    host = new URL(`http://[${body}]/`).hostname;
  } catch {
    return undefined;
  }
  // The URL parser answers the canonical form: hex pieces, at most one `::`.
  const inner = host.slice(1, -1);
  const [head, tail] = inner.includes('::') ? inner.split('::') : [inner, undefined];
  const headPieces = head ? head.split(':') : [];
  const tailPieces = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? 0 : 8 - headPieces.length - tailPieces.length;
  const pieces = [...headPieces, ...Array<string>(zeros).fill('0'), ...tailPieces];
  return pieces.reduce((acc, p) => (acc << 16n) | BigInt(`0x${p}`), 0n);
}

/** The 128 bits an address text stands for (IPv4 as ::ffff:a.b.c.d), or undefined if it is none. */
export function refAddress(text: string): bigint | undefined {
  const s = text.trim();
  const v4 = refIPv4(s);
  if (v4 !== undefined) return V4_MAPPED | v4;
  return refIPv6(s);
}

export interface RefCidr {
  base: bigint;
  /** Out of 128. */
  prefix: number;
}

/** A cidr_list entry: an address, or an address and a prefix length for its family. */
export function refCidr(entry: string): RefCidr | undefined {
  const s = entry.trim();
  const slash = s.lastIndexOf('/');
  if (slash === -1) {
    const bits = refAddress(s);
    return bits === undefined ? undefined : { base: bits, prefix: 128 };
  }
  const addr = s.slice(0, slash);
  const digits = s.slice(slash + 1);
  if (!/^\d{1,3}$/.test(digits)) return undefined;
  const v4 = refIPv4(addr);
  const v6 = v4 === undefined ? refIPv6(addr) : undefined;
  const max = v4 !== undefined ? 32 : 128;
  const length = Number(digits);
  if ((v4 === undefined && v6 === undefined) || length > max) return undefined;
  return { base: v4 !== undefined ? V4_MAPPED | v4 : v6!, prefix: v4 !== undefined ? 96 + length : length };
}

export function refContains(cidr: RefCidr, bits: bigint): boolean {
  const hostBits = BigInt(128 - cidr.prefix);
  return bits >> hostBits === cidr.base >> hostBits;
}

export function refNetwork(cidr: RefCidr): { first: bigint; last: bigint } {
  const hostMask = (1n << BigInt(128 - cidr.prefix)) - 1n;
  const first = cidr.base & ~hostMask & ALL;
  return { first, last: first | hostMask };
}

export function isMappedV4(bits: bigint): boolean {
  return bits >> 32n === 0xffffn;
}

export function dotted(v4: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => String((v4 >> s) & 0xffn)).join('.');
}

/** The eight 16-bit groups of a 128-bit value. */
function groupsOf(bits: bigint): number[] {
  return Array.from({ length: 8 }, (_, i) => Number((bits >> BigInt(112 - 16 * i)) & 0xffffn));
}

export interface Spelling {
  /** Zero-pad each hex group to this many digits (at least the group's own length). */
  pad: number[];
  /** Per group: upper-case its hex digits. */
  upper: boolean[];
  /** Index of the zero-run start to compress with `::` (a value picked among the runs), or -1. */
  compress: number;
  /** Write the last 32 bits as dotted decimal. */
  dottedTail: boolean;
  zone: string | undefined;
}

export const spellingArb: fc.Arbitrary<Spelling> = fc.record({
  pad: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 8, maxLength: 8 }),
  upper: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
  compress: fc.integer({ min: -1, max: 7 }),
  dottedTail: fc.boolean(),
  zone: fc.option(fc.stringMatching(/^[0-9A-Za-z._~-]{1,8}$/), { nil: undefined }),
});

/**
 * One of the many legal IPv6 spellings of `bits`: any zero run (not only the longest) may be
 * compressed, groups may carry leading zeros or upper-case hex, the tail may be dotted IPv4.
 */
export function spellIPv6(bits: bigint, how: Spelling): string {
  const groups = groupsOf(bits);
  const text = groups.map((g, i) => {
    const hex = g.toString(16).padStart(how.pad[i]!, '0');
    return how.upper[i] ? hex.toUpperCase() : hex;
  });
  const tail = how.dottedTail ? dotted(bits & 0xffffffffn) : undefined;
  const pieces = tail === undefined ? text : [...text.slice(0, 6), tail];
  // Zero runs among the hex groups that are still written as groups.
  const hexCount = tail === undefined ? 8 : 6;
  const runs: Array<[number, number]> = [];
  for (let i = 0; i < hexCount; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < hexCount && groups[j] === 0) j++;
    runs.push([i, j]);
    i = j;
  }
  let out: string;
  if (how.compress >= 0 && runs.length > 0) {
    const run = runs[how.compress % runs.length]!;
    // Any sub-run of at least one zero group may be compressed; take the whole run or its start.
    const [from, to] = how.compress % 2 === 0 ? run : [run[0], run[0] + 1];
    out = `${pieces.slice(0, from).join(':')}::${pieces.slice(to).join(':')}`;
  } else out = pieces.join(':');
  return how.zone === undefined ? out : `${out}%${how.zone}`;
}

/** 128-bit values with structure: all-zero, mapped IPv4, a few set groups, random. */
export const bits128Arb: fc.Arbitrary<bigint> = fc.oneof(
  fc.bigInt({ min: 0n, max: ALL }),
  fc.bigInt({ min: 0n, max: 0xffffffffn }).map((v4) => V4_MAPPED | v4),
  fc.bigInt({ min: 0n, max: 0xffffffffn }),
  fc
    .array(fc.tuple(fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 0xffff })), { maxLength: 3 })
    .map((set) => set.reduce((acc, [i, g]) => acc | (BigInt(g) << BigInt(112 - 16 * i)), 0n)),
  fc.constantFrom(0n, 1n, ALL, V4_MAPPED, V4_MAPPED | 0xffffffffn, 0x20010db8n << 96n),
);

/** Spellings of an address: IPv4 dotted, or an IPv6 spelling of its 128 bits (mapped ones too). */
export const addressTextArb: fc.Arbitrary<string> = fc.oneof(
  fc.bigInt({ min: 0n, max: 0xffffffffn }).map(dotted),
  fc.tuple(bits128Arb, spellingArb).map(([bits, how]) => spellIPv6(bits, how)),
  fc.tuple(fc.bigInt({ min: 0n, max: 0xffffffffn }), spellingArb).map(([v4, how]) => spellIPv6(V4_MAPPED | v4, how)),
);

const JUNK_CHARS = '0123456789abcdefABCDEFxX.:%/ ,-[]'.split('');

/** Text that is mostly not an address, much of it close to one. */
export const junkArb: fc.Arbitrary<string> = fc.oneof(
  fc.array(fc.constantFrom(...JUNK_CHARS), { maxLength: 45 }).map((cs) => cs.join('')),
  fc.string({ unit: 'binary', maxLength: 30 }),
  // One edit away from a real address.
  fc
    .tuple(addressTextArb, fc.nat(), fc.constantFrom(...JUNK_CHARS, ''), fc.constantFrom('insert', 'replace'))
    .map(([text, at, ch, op]) => {
      const i = at % (text.length + 1);
      return op === 'insert' ? text.slice(0, i) + ch + text.slice(i) : text.slice(0, i) + ch + text.slice(i + 1);
    }),
  // inet_aton spellings, leading zeros, out-of-range octets, too many or too few parts.
  fc
    .array(fc.oneof(fc.integer({ min: 0, max: 300 }).map(String), fc.integer({ min: 0, max: 255 }).map((n) => `0${n}`), fc.integer({ min: 0, max: 255 }).map((n) => `0x${n.toString(16)}`)), {
      minLength: 1,
      maxLength: 5,
    })
    .map((parts) => parts.join('.')),
  fc.nat().map(String),
  fc.constantFrom('', ' ', 'unknown', '::', ':::', '1::2::3', '::1%', '%eth0', 'localhost', '[::1]', '::1]', '1.2.3.4:80', '[::1]:80', '1.2.3.4/32'),
  // Huge inputs.
  fc.tuple(fc.constantFrom('1', ':', '1:', '1.', 'f', '::ffff:', '%'), fc.integer({ min: 100, max: 20_000 })).map(([s, n]) => s.repeat(n)),
);

/** A cidr_list entry spelled any legal way, with a prefix (or none) for its family. */
export const cidrEntryArb: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(fc.bigInt({ min: 0n, max: 0xffffffffn }), fc.option(fc.integer({ min: 0, max: 32 }))).map(([v4, p]) => (p === null ? dotted(v4) : `${dotted(v4)}/${p}`)),
  fc
    .tuple(bits128Arb, spellingArb, fc.option(fc.integer({ min: 0, max: 128 })))
    .map(([bits, how, p]) => (p === null ? spellIPv6(bits, how) : `${spellIPv6(bits, how)}/${p}`)),
  // IPv4 ranges written as mapped IPv6 ranges (::ffff:10.0.0.0/104 = 10.0.0.0/8).
  fc
    .tuple(fc.bigInt({ min: 0n, max: 0xffffffffn }), spellingArb, fc.integer({ min: 96, max: 128 }))
    .map(([v4, how, p]) => `${spellIPv6(V4_MAPPED | v4, how)}/${p}`),
);

// ---------------------------------------------------------------- wall clocks

/**
 * Zones with something odd about them: DST of an hour, of 30 minutes (Lord Howe) or of two
 * hours (Troll); offsets of :30 and :45; clocks that skip or repeat midnight (Havana, Santiago,
 * Asuncion, Beirut, Cairo); a skipped day (Apia, 2011); offsets that changed for good (Caracas,
 * Pyongyang, Kathmandu, Moscow); Ramadan DST (Casablanca); transitions at 00:01 (St John's and
 * Goose Bay until 2011).
 */
export const ZONES = [
  'UTC',
  'Europe/Warsaw',
  'Europe/London',
  'Europe/Dublin',
  'Europe/Moscow',
  'America/New_York',
  'America/St_Johns',
  'America/Goose_Bay',
  'America/Havana',
  'America/Santiago',
  'America/Asuncion',
  'America/Caracas',
  'America/Sao_Paulo',
  'Asia/Beirut',
  'Africa/Cairo',
  'Africa/Casablanca',
  'Asia/Kathmandu',
  'Asia/Kolkata',
  'Asia/Tehran',
  'Asia/Pyongyang',
  'Australia/Lord_Howe',
  'Australia/Adelaide',
  'Pacific/Chatham',
  'Pacific/Apia',
  'Pacific/Kiritimati',
  'Antarctica/Troll',
] as const;

export interface Wall {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  ms: number;
  /** 0 = Monday ... 6 = Sunday. */
  weekday: number;
}

const formats = new Map<string, Intl.DateTimeFormat>();
const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

/** The zone's wall clock at instant t, read from Intl parts. */
export function wall(zone: string, t: number): Wall {
  let format = formats.get(zone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      weekday: 'short',
    });
    formats.set(zone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(t).map((p) => [p.type, p.value]));
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour),
    minute: Number(parts.minute),
    second: Number(parts.second),
    ms: ((t % 1000) + 1000) % 1000,
    weekday: WEEKDAYS.indexOf(parts.weekday!),
  };
}

/** A local calendar date as a day number, for comparing and stepping dates. */
export function dayNumber(w: { year: number; month: number; day: number }): number {
  return Date.UTC(w.year, w.month - 1, w.day) / 86_400_000;
}

/**
 * The instants at which the zone's UTC offset changes within [from, to), to the millisecond.
 * Sampled weekly, so two changes less than a week apart would be missed (none in ZONES since 2008).
 */
export function transitions(zone: string, from: number, to: number): number[] {
  const offset = (t: number) => offsetAt(zone, t);
  const found: number[] = [];
  const step = 7 * 86_400_000;
  for (let t = from; t < to; t += step) {
    let lo = t;
    let hi = Math.min(t + step, to);
    if (offset(lo) === offset(hi)) continue;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (offset(mid) === offset(lo)) lo = mid;
      else hi = mid;
    }
    found.push(hi);
  }
  return found;
}

export const YEAR_1975 = Date.UTC(1975, 0, 1);
export const YEAR_2100 = Date.UTC(2100, 0, 1);

/** Offset changes of each zone between 2008 and 2030 (with the permanent changes of those years). */
let transitionCache: Map<string, number[]> | undefined;
export function zoneTransitions(): Map<string, number[]> {
  transitionCache ??= new Map(ZONES.map((z) => [z, transitions(z, Date.UTC(2008, 0, 1), Date.UTC(2030, 0, 1))]));
  return transitionCache;
}

/**
 * Instants worth testing: anywhere in 1975..2100, or within a few hours of an offset change
 * of the zone, or a millisecond either side of a whole minute/hour near one.
 */
export function instantArb(zone: string): fc.Arbitrary<number> {
  const changes = zoneTransitions().get(zone) ?? [];
  const anywhere = fc.integer({ min: YEAR_1975, max: YEAR_2100 });
  if (changes.length === 0) return anywhere;
  const near = fc
    .tuple(fc.constantFrom(...changes), fc.integer({ min: -3 * 3_600_000, max: 3 * 3_600_000 }))
    .map(([t, d]) => t + d);
  const edge = fc
    .tuple(fc.constantFrom(...changes), fc.integer({ min: -6, max: 6 }), fc.constantFrom(-1, 0, 1))
    .map(([t, quarters, ms]) => t + quarters * 15 * 60_000 + ms);
  return fc.oneof(anywhere, near, edge);
}

export const zoneAndInstantArb: fc.Arbitrary<[string, number]> = fc
  .constantFrom(...ZONES)
  .chain((zone) => instantArb(zone).map((t): [string, number] => [zone, t]));

/** Milliseconds the zone's wall clock is ahead of UTC at t. */
export function offsetAt(zone: string, t: number): number {
  const w = wall(zone, t);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second, w.ms) - t;
}

/**
 * One offset change of each kind per zone (the same wall times either side, the same jump),
 * so a sweep over them meets every odd change once: random instants rarely land in the hour
 * after a change, where the bugs live.
 */
export function transitionShapes(): Array<[string, number]> {
  const shapes = new Map<string, [string, number]>();
  for (const [zone, changes] of zoneTransitions()) {
    for (const t of changes) {
      const a = wall(zone, t - 1);
      const b = wall(zone, t);
      const key = `${zone} ${a.hour}:${a.minute} ${b.hour}:${b.minute} ${dayNumber(b) - dayNumber(a)} ${offsetAt(zone, t) - offsetAt(zone, t - 1)}`;
      if (!shapes.has(key)) shapes.set(key, [zone, t]);
    }
  }
  return [...shapes.values()];
}
