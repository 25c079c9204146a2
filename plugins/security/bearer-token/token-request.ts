import { request } from 'undici';
import { Deadline } from '../../../sdk/plugin/index.ts';
import type { BearerTokenDefinition } from './schema.ts';

/** What the auth server issued. */
export interface IssuedToken {
  accessToken: string;
  /** Seconds, as the server said; undefined when it said nothing usable. */
  expiresIn: number | undefined;
}

/**
 * A token request that failed. `reason` is safe to show and log: it is built from the status, an
 * OAuth error code and our own words, never from the secret, a token or the response body.
 */
export class TokenRequestError extends Error {
  constructor(
    readonly reason: string,
    readonly status?: number,
    readonly oauthError?: string,
  ) {
    super(reason);
    this.name = 'TokenRequestError';
  }
}

/** Token responses are small; a larger body is not one, and is not read into memory. */
const MAX_RESPONSE_BYTES = 256 * 1024;
/** RFC 6749 §5.2 error codes: printable ASCII except `"` and `\`. Anything else is not logged. */
const OAUTH_ERROR_CODE = /^[\x20\x21\x23-\x5b\x5d-\x7e]{1,64}$/;
/** An access token goes into a header as it is: visible ASCII only (no CR/LF smuggling). */
const HEADER_SAFE_TOKEN = /^[\x21-\x7e]+$/;

/** The fields of the token request, in the order they are sent. */
export function tokenRequestFields(def: BearerTokenDefinition, scopes: readonly string[]): Record<string, string> {
  const fields: Record<string, string> = {
    grant_type: def.grant_type,
    [def.client_id_field]: def.username,
    [def.client_secret_field]: def.client_secret,
  };
  if (scopes.length > 0) fields.scope = scopes.join(' ');
  return Object.assign(fields, def.extra_fields);
}

/**
 * POSTs one token request to the definition's auth server. `signal` cancels it (every caller
 * left); `token_timeout_ms` bounds it from connection to last byte. Redirects are not followed:
 * the secret goes to the configured address only.
 */
export async function requestToken(def: BearerTokenDefinition, scopes: readonly string[], signal: AbortSignal): Promise<IssuedToken> {
  const fields = tokenRequestFields(def, scopes);
  const json = def.data_format === 'json';
  const deadline = new Deadline(signal, def.token_timeout_ms);
  let status: number;
  let body: Buffer;
  try {
    const res = await request(def.auth_server_url, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': json ? 'application/json' : 'application/x-www-form-urlencoded' },
      body: json ? JSON.stringify(fields) : new URLSearchParams(fields).toString(),
      signal: deadline.signal,
    });
    status = res.statusCode;
    body = await readLimited(res.body);
  } catch (err) {
    if (err instanceof TokenRequestError) throw err;
    if (deadline.timedOut) throw new TokenRequestError(`no answer within ${def.token_timeout_ms} ms`);
    if (signal.aborted) throw new TokenRequestError('cancelled: every call waiting for it ended');
    const code = (err as { code?: unknown }).code;
    throw new TokenRequestError(`auth server unreachable (${typeof code === 'string' ? code : (err as Error).name})`);
  } finally {
    deadline.end();
  }
  return readTokenResponse(status, body);
}

async function readLimited(stream: AsyncIterable<Buffer> & { destroy(): void }): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += chunk.length;
    if (size > MAX_RESPONSE_BYTES) {
      stream.destroy();
      throw new TokenRequestError(`response over ${MAX_RESPONSE_BYTES / 1024} KiB`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function parseObject(body: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The response as RFC 6749 §5.1 describes it, read whatever its content type says. */
export function readTokenResponse(status: number, body: Buffer): IssuedToken {
  const doc = parseObject(body);
  if (status < 200 || status > 299) {
    const error = doc?.error;
    const oauthError = typeof error === 'string' && OAUTH_ERROR_CODE.test(error) ? error : undefined;
    throw new TokenRequestError(`auth server answered HTTP ${status}${oauthError === undefined ? '' : ` (${oauthError})`}`, status, oauthError);
  }
  if (doc === undefined) throw new TokenRequestError('token response is not a JSON object', status);
  const token = doc.access_token;
  if (typeof token !== 'string' || token === '') throw new TokenRequestError('token response has no access_token', status);
  if (!HEADER_SAFE_TOKEN.test(token)) throw new TokenRequestError('access_token has characters a header cannot carry', status);
  // Absent is tolerated (many servers omit it); another scheme (mac, DPoP) would fail as Bearer.
  const type = doc.token_type;
  if (type !== undefined && (typeof type !== 'string' || type.toLowerCase() !== 'bearer')) {
    throw new TokenRequestError('token_type is not Bearer', status);
  }
  return { accessToken: token, expiresIn: secondsOf(doc.expires_in) };
}

/** A number, or a string of digits (some servers quote it); anything else counts as absent. */
function secondsOf(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+(?:\.\d+)?$/.test(value.trim()) ? Number(value) : NaN;
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}
