import { Hl7Error } from '../../../sdk/hl7/types.ts';

/**
 * Body bytes → message text (Node side only). UTF-8 unless MSH-18 names ISO-8859-1 or ASCII,
 * which many HL7 senders use; bytes that are not valid UTF-8 are refused rather than guessed at.
 */

const SINGLE_BYTE_CHARSETS = /^(?:8859\/1|ISO[-_ ]?8859[-_ ]?1|ISO[-_ ]IR[-_ ]?(?:6|100)|ASCII|US-ASCII)$/i;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** MSH-18 (character set) of the first line, read without decoding the whole body. */
function declaredCharset(body: Buffer): string | undefined {
  let end = body.indexOf(0x0d);
  const lf = body.indexOf(0x0a);
  if (end === -1 || (lf !== -1 && lf < end)) end = lf;
  const head = body.subarray(0, end === -1 ? Math.min(body.length, 4096) : end).toString('latin1');
  const at = head.indexOf('MSH');
  if (at === -1 || at > 4) return undefined; // BOM or MLLP start byte may come first
  const fs = head[at + 3];
  if (fs === undefined) return undefined;
  // MSH-1 is the separator itself, so MSH-18 is the 17th piece after splitting.
  const pieces = head.slice(at).split(fs);
  const value = pieces[17];
  return value === undefined || value === '' ? undefined : value.split(head[at + 4] ?? '^')[0];
}

export function decodeHl7Bytes(body: Buffer): string {
  const charset = declaredCharset(body);
  if (charset !== undefined && SINGLE_BYTE_CHARSETS.test(charset.trim())) return body.toString('latin1');
  try {
    return utf8.decode(body);
  } catch {
    throw new Hl7Error('the message is not valid UTF-8 (declare MSH-18 as 8859/1 for ISO-8859-1)');
  }
}
