import type { Delimiters } from './types.ts';

/**
 * HL7 escape sequences. Decoding turns `\F\ \S\ \T\ \R\ \E\ \P\ \Xhh..\` into the characters
 * they stand for; formatting and character-set escapes (`\H\`, `\N\`, `\.br\`, `\Zxx\`, `\Cxxyy\`,
 * `\Mxxyyzz\`) have no plain-text meaning and stay in the value as written. Encoding is canonical:
 * delimiters as `\F\ \S\ \T\ \R\ \E\`, CR and LF as `\X0D\` and `\X0A\`, recognised formatting
 * escapes passed through; every other character as is.
 */

/** Formatting escapes that survive encoding untouched (the escape char is `\` here; see formattingPattern). */
const FORMATTING_BODY = String.raw`(?:H|N|\.(?:sp|br|fi|nf|in|ti|sk|ce)[+-]?\d*|C[0-9A-Fa-f]{4}|M[0-9A-Fa-f]{4}(?:[0-9A-Fa-f]{2})?)`;

const patternCache = new Map<string, RegExp>();

function formattingPattern(escapeChar: string): RegExp {
  let re = patternCache.get(escapeChar);
  if (re === undefined) {
    const e = escapeChar.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
    re = new RegExp(`${e}${FORMATTING_BODY}${e}`, 'y');
    patternCache.set(escapeChar, re);
  }
  return re;
}

export function decodeLeaf(raw: string, d: Delimiters): string {
  const esc = d.escape;
  let at = raw.indexOf(esc);
  if (at === -1) return raw;
  let out = '';
  let from = 0;
  while (at !== -1) {
    const close = raw.indexOf(esc, at + 1);
    if (close === -1) break; // a lone escape char is data
    const body = raw.slice(at + 1, close);
    const decoded = decodeSequence(body, d);
    if (decoded === undefined) {
      // Not a sequence we decode: keep it verbatim and continue after it.
      out += raw.slice(from, close + 1);
    } else {
      out += raw.slice(from, at) + decoded;
    }
    from = close + 1;
    at = raw.indexOf(esc, from);
  }
  return out + raw.slice(from);
}

function decodeSequence(body: string, d: Delimiters): string | undefined {
  switch (body) {
    case 'F': return d.field;
    case 'S': return d.component;
    case 'T': return d.subcomponent;
    case 'R': return d.repetition;
    case 'E': return d.escape;
    case 'P': return d.truncation;
  }
  if (body.length >= 3 && body.length % 2 === 1 && body.charCodeAt(0) === 88 /* X */ && /^X[0-9A-Fa-f]+$/.test(body)) {
    const bytes: number[] = [];
    for (let i = 1; i < body.length; i += 2) bytes.push(parseInt(body.slice(i, i + 2), 16));
    return bytesToText(bytes);
  }
  return undefined;
}

/** UTF-8 when the bytes are valid UTF-8, else one character per byte (ISO-8859-1). */
export function bytesToText(bytes: number[]): string {
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    let need = 0;
    let cp = 0;
    if (b < 0x80) { out += String.fromCharCode(b); i++; continue; }
    else if (b >= 0xc2 && b <= 0xdf) { need = 1; cp = b & 0x1f; }
    else if (b >= 0xe0 && b <= 0xef) { need = 2; cp = b & 0x0f; }
    else if (b >= 0xf0 && b <= 0xf4) { need = 3; cp = b & 0x07; }
    else return latin1(bytes);
    if (i + need >= bytes.length) return latin1(bytes);
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k]!;
      if ((c & 0xc0) !== 0x80) return latin1(bytes);
      cp = (cp << 6) | (c & 0x3f);
    }
    const min = need === 1 ? 0x80 : need === 2 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return latin1(bytes);
    out += String.fromCodePoint(cp);
    i += need + 1;
  }
  return out;
}

function latin1(bytes: number[]): string {
  let out = '';
  for (const b of bytes) out += String.fromCharCode(b);
  return out;
}

/** True when `value` holds a character that encoding would change. */
function needsEncoding(value: string, d: Delimiters): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === d.field || c === d.component || c === d.repetition || c === d.subcomponent || c === d.escape || c === '\r' || c === '\n') {
      return true;
    }
  }
  return false;
}

export function encodeLeaf(value: string, d: Delimiters): string {
  if (!needsEncoding(value, d)) return value;
  const esc = d.escape;
  const formatting = formattingPattern(esc);
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c === esc) {
      formatting.lastIndex = i;
      const m = formatting.exec(value);
      if (m !== null) {
        out += m[0];
        i += m[0].length - 1;
        continue;
      }
      out += esc + 'E' + esc;
    } else if (c === d.field) out += esc + 'F' + esc;
    else if (c === d.component) out += esc + 'S' + esc;
    else if (c === d.subcomponent) out += esc + 'T' + esc;
    else if (c === d.repetition) out += esc + 'R' + esc;
    else if (c === '\r') out += esc + 'X0D' + esc;
    else if (c === '\n') out += esc + 'X0A' + esc;
    else out += c;
  }
  return out;
}
