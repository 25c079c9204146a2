import { Hl7Error } from '../../../sdk/hl7/types.ts';

/**
 * Message bytes ⇄ text (Node side only). UTF-8 unless MSH-18 names ISO-8859-1 or ASCII, which
 * many HL7 senders use; bytes that are not valid UTF-8 are refused rather than guessed at.
 * ASCII is read and written as ISO-8859-1, its superset: senders that declare ASCII often send
 * 8859-1 bytes, and a message must go out as it came in.
 */

const SINGLE_BYTE_CHARSETS = /^(?:8859\/1|ISO[-_ ]?8859[-_ ]?1|ISO[-_ ]IR[-_ ]?(?:6|100)|ASCII|US-ASCII)$/i;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
/** Longest first line looked at when it has no line break (a message is one line at least). */
const HEAD_LIMIT = 4096;

/** MSH-18 (character set) of a message's first line; MSH-1 is the separator itself. */
function charsetOfFirstLine(head: string): string | undefined {
  const at = head.indexOf('MSH');
  if (at === -1 || at > 4) return undefined; // BOM or MLLP start byte may come first
  const fs = head[at + 3];
  if (fs === undefined) return undefined;
  // MSH-1 is the separator itself, so MSH-18 is the 17th piece after splitting.
  const pieces = head.slice(at).split(fs);
  const value = pieces[17];
  return value === undefined || value === '' ? undefined : value.split(head[at + 4] ?? '^')[0];
}

function firstLineEnd(cr: number, lf: number, length: number): number {
  let end = cr;
  if (end === -1 || (lf !== -1 && lf < end)) end = lf;
  return end === -1 ? Math.min(length, HEAD_LIMIT) : end;
}

/** MSH-18 of the first line, read without decoding the whole body. */
function declaredCharset(body: Buffer): string | undefined {
  const end = firstLineEnd(body.indexOf(0x0d), body.indexOf(0x0a), body.length);
  return charsetOfFirstLine(body.subarray(0, end).toString('latin1'));
}

function isSingleByte(charset: string | undefined): charset is string {
  return charset !== undefined && SINGLE_BYTE_CHARSETS.test(charset.trim());
}

export function decodeHl7Bytes(body: Buffer): string {
  if (isSingleByte(declaredCharset(body))) return body.toString('latin1');
  try {
    return utf8.decode(body);
  } catch {
    throw new Hl7Error('the message is not valid UTF-8 (declare MSH-18 as 8859/1 for ISO-8859-1)');
  }
}

/** What a reply is written as: text for UTF-8, bytes for ISO-8859-1, with the charset to name. */
export type Hl7Output = { body: string; charset: 'utf-8' } | { body: Buffer; charset: 'iso-8859-1' };

// Characters ISO-8859-1 has no byte for.
const BEYOND_LATIN1 = /[^\u0000-\u00FF]/u;

/**
 * A reply's text in the charset its own MSH-18 names, or else the request's MSH-18 (an ACK built
 * by the SDK names none): so an 8859/1 message goes back as 8859/1 bytes, byte for byte. A
 * character that charset cannot hold is an error, not a `?`: it would silently change clinical data.
 */
export function encodeHl7Text(text: string, request: Buffer | undefined): Hl7Output {
  const own = charsetOfFirstLine(text.slice(0, firstLineEnd(text.indexOf('\r'), text.indexOf('\n'), text.length)));
  const charset = own ?? (request && request.length ? declaredCharset(request) : undefined);
  if (!isSingleByte(charset)) return { body: text, charset: 'utf-8' };
  const beyond = BEYOND_LATIN1.exec(text);
  if (beyond) {
    const char = beyond[0];
    const code = char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    throw new Hl7Error(
      `${JSON.stringify(char)} (U+${code}) at character ${beyond.index} cannot be written in ISO-8859-1, the charset ${own === undefined ? "the request's" : "the reply's"} MSH-18 names (${JSON.stringify(charset)}); name UNICODE UTF-8 in the reply's MSH-18 or leave the character out`,
    );
  }
  return { body: Buffer.from(text, 'latin1'), charset: 'iso-8859-1' };
}
