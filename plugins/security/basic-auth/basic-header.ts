import type { Presented } from '../shared/credential-book.ts';
import { MAX_SECRET_LENGTH, MAX_USERNAME_LENGTH, passwordProblem, usernameProblem } from '../shared/secret-rules.ts';

const SCHEME = /^basic(?: |$)/i;
const SCHEME_AND_TOKEN = /^basic +([^ ]+)$/i;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
// A UTF-16 code unit needs at most 3 UTF-8 bytes, and 3 bytes are 4 base64 characters.
const MAX_TOKEN_LENGTH = (MAX_USERNAME_LENGTH + 1 + MAX_SECRET_LENGTH) * 4;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The token of an `Authorization: Basic <token>` header: undefined when the header is
 * absent or uses another scheme (not a Basic credential at all), null when it is Basic
 * but cannot be one credential (several headers, comma lists, extra parts).
 */
export function basicToken(header: string | string[] | undefined): string | null | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== 'string') return null;
  // The common spelling, without a regex: "Basic " then a token without spaces.
  if (header.startsWith('Basic ') && header.length > 6 && header.indexOf(' ', 6) === -1) return header.slice(6);
  if (!SCHEME.test(header)) return undefined;
  const match = SCHEME_AND_TOKEN.exec(header);
  return match === null ? null : match[1]!;
}

/**
 * Decodes a Basic token strictly: canonical base64 alphabet and padding, valid UTF-8,
 * a colon, non-empty username and password. The password keeps any further colons.
 */
export function decodeBasic(token: string): Presented | undefined {
  if (token.length > MAX_TOKEN_LENGTH || token.length % 4 !== 0 || !BASE64.test(token)) return undefined;
  let text: string;
  try {
    text = utf8.decode(Buffer.from(token, 'base64'));
  } catch {
    return undefined;
  }
  const colon = text.indexOf(':');
  if (colon <= 0) return undefined;
  const username = text.slice(0, colon);
  const password = text.slice(colon + 1);
  if (usernameProblem(username) !== undefined || passwordProblem(password) !== undefined) return undefined;
  return { username, secret: password };
}
