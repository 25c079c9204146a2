/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context-2/): reading what a caller sent, writing
 * what we send. A value that breaks the format is ignored, never an error: the request then starts
 * a trace of its own (or none, when nothing is exported).
 */

export interface ParentIds {
  /** 32 lower-case hex digits, not all zero. */
  traceId: string;
  /** 16 lower-case hex digits, not all zero. */
  spanId: string;
  /** The trace-flags byte, reserved bits cleared: 0x01 sampled, 0x02 random trace id (level 2). */
  flags: number;
}

const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
/** Flags this level of the spec defines; the others are cleared when we pass a value on. */
const KNOWN_FLAGS = 0x03;
const DASH = 0x2d;

// Character loops rather than regular expressions: this runs on every request that brings the
// header, and a loop over 55 characters costs a fraction of a regex match with captures.
function lowerHex(s: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
}

/**
 * The caller's trace and span from a `traceparent` header, or undefined when it is absent or
 * malformed. Two headers arrive joined by ', ' and fail the format, as the spec asks. A later
 * version is read for its first four fields; anything after them must follow a '-'.
 */
export function parseTraceparent(value: string | string[] | undefined): ParentIds | undefined {
  if (typeof value !== 'string' || value.length < 55) return undefined;
  if (value.charCodeAt(2) !== DASH || value.charCodeAt(35) !== DASH || value.charCodeAt(52) !== DASH) return undefined;
  if (!lowerHex(value, 0, 2) || !lowerHex(value, 3, 35) || !lowerHex(value, 36, 52) || !lowerHex(value, 53, 55)) return undefined;
  const v00 = value.charCodeAt(0) === 0x30 && value.charCodeAt(1) === 0x30;
  if (value.length > 55 && (v00 || value.charCodeAt(55) !== DASH)) return undefined;
  if (value.startsWith('ff')) return undefined;
  const traceId = value.slice(3, 35);
  const spanId = value.slice(36, 52);
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, flags: parseInt(value.slice(53, 55), 16) & KNOWN_FLAGS };
}

export function formatTraceparent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${flags < 16 ? '0' : ''}${flags.toString(16)}`;
}

/** The incoming value to pass on unchanged when it is already plain version 00 (no copy), else rewritten as such. */
export function passOn(value: string, ids: ParentIds): string {
  return value.startsWith('00-') && parseInt(value.slice(53), 16) === ids.flags ? value : formatTraceparent(ids.traceId, ids.spanId, ids.flags);
}

const MAX_MEMBERS = 32;

const isOws = (c: number) => c === 0x20 || c === 0x09;
const isKeyChar = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x2d || c === 0x2a || c === 0x2f;

function keyPart(s: string, from: number, to: number, maxLength: number, digitFirst: boolean): boolean {
  if (to <= from || to - from > maxLength) return false;
  const first = s.charCodeAt(from);
  if (!((first >= 0x61 && first <= 0x7a) || (digitFirst && first >= 0x30 && first <= 0x39))) return false;
  for (let i = from + 1; i < to; i++) if (!isKeyChar(s.charCodeAt(i))) return false;
  return true;
}

/** key = simple-key (lcalpha 0*255 keychar) / tenant-id@system-id (241 and 14 characters at most). */
function validKey(s: string, from: number, to: number): boolean {
  const at = s.indexOf('@', from);
  if (at === -1 || at >= to) return keyPart(s, from, to, 256, false);
  return keyPart(s, from, at, 241, true) && keyPart(s, at + 1, to, 14, false);
}

/** value = 0*255 chr nblk-chr: printable ASCII but ',' and '=', not ending with a space. */
function validValue(s: string, from: number, to: number): boolean {
  if (to <= from || to - from > 256 || s.charCodeAt(to - 1) === 0x20) return false;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x2c || c === 0x3d) return false;
  }
  return true;
}

/**
 * A `tracestate` header as we pass it on: its list members, checked and joined with ','; undefined
 * when absent, empty, or when any member breaks the format, repeats a key or there are more than
 * 32 (the spec lets a vendor drop what it cannot parse; passing on part of it could mislead).
 * Several headers arrive joined by ', ', which is the list the spec asks for.
 */
export function parseTracestate(value: string | string[] | undefined): string | undefined {
  if (typeof value !== 'string') return undefined;
  const keys: string[] = [];
  const members: string[] = [];
  for (let start = 0; start <= value.length; ) {
    let end = value.indexOf(',', start);
    if (end === -1) end = value.length;
    let a = start;
    let b = end;
    while (a < b && isOws(value.charCodeAt(a))) a++;
    while (b > a && isOws(value.charCodeAt(b - 1))) b--;
    if (a < b) {
      const eq = value.indexOf('=', a);
      if (eq === -1 || eq >= b || !validKey(value, a, eq) || !validValue(value, eq + 1, b)) return undefined;
      const key = value.slice(a, eq);
      if (keys.includes(key) || keys.push(key) > MAX_MEMBERS) return undefined;
      members.push(value.slice(a, b));
    }
    start = end + 1;
  }
  return members.length ? members.join(',') : undefined;
}
