import type { Clock, Exchange, HookFn } from '../../../sdk/plugin/index.ts';
import type { CacheBackend } from '../shared/backend.ts';
import { parseCacheControl, type CacheControl } from './cache-control.ts';
import { decodeAnswer, encodeAnswer, variantOf } from './entry.ts';
import type { ResponseCacheSettings } from './schema.ts';

export const RESULTS = ['HIT', 'MISS', 'BYPASS'] as const;
export type Result = (typeof RESULTS)[number];

/** A GET the cache did not answer: its answer is stored once it went out, if it may be. */
interface Pending {
  key: string;
  /** Response headers set before the service ran (rate limits, X-Svc-Cache): this request's, not the answer's. */
  before: ReadonlySet<string>;
}

/** What the two steps of one channel share. */
export interface ChannelCache {
  settings: ResponseCacheSettings;
  /** answerPrefix(channel). */
  prefix: string;
  /** The backend now (a named cache is looked up per request: a config change may have rebuilt it). */
  backend: () => CacheBackend | undefined;
  /** `security: none`: a request carrying credentials is passed through, neither answered nor stored. */
  open: boolean;
  clock: Clock;
  /** Requests by outcome, for this channel. */
  counts: Record<Result, number>;
  pending: WeakMap<Exchange, Pending>;
}

const HEADER = 'X-Svc-Cache';

/** Credentials the channel does not check, so the service might: its answer may be that caller's alone. */
function carriesCredentials(ex: Exchange): boolean {
  return ex.headers.authorization !== undefined || ex.headers.cookie !== undefined;
}

/**
 * The invoke step: a GET or HEAD whose answer is stored is answered from the cache (the service is
 * not called; security and rate limits ran before); otherwise it goes on to the service, marked
 * MISS, or BYPASS when the request's Cache-Control says no-store or no-cache (no-cache: looked up
 * no, stored yes) or it carries credentials on an open channel. The memory backend answers without
 * a promise.
 */
export function lookupStep(c: ChannelCache): HookFn {
  function proceed(ex: Exchange, result: Result, key: string | undefined): void {
    ex.response.headers[HEADER] = result;
    c.counts[result]++;
    // Only a GET's answer is stored: a HEAD's has no body to serve a GET with.
    if (key !== undefined && ex.method === 'GET') c.pending.set(ex, { key, before: new Set(Object.keys(ex.response.headers)) });
  }

  function answer(ex: Exchange, key: string, text: string | undefined, request: CacheControl): void {
    const stored = text === undefined ? undefined : decodeAnswer(text);
    const now = c.clock.now();
    if (stored === undefined || (request.maxAge !== undefined && now - stored.storedAt > request.maxAge * 1000)) return proceed(ex, 'MISS', key);
    c.counts.HIT++;
    ex.response.contentType = stored.contentType;
    ex.reply(stored.status, stored.body, { ...stored.headers, [HEADER]: 'HIT', Age: String(Math.max(0, Math.floor((now - stored.storedAt) / 1000))) });
  }

  return function answerFromCache(ex) {
    if (ex.method !== 'GET' && ex.method !== 'HEAD') return;
    const request = parseCacheControl(ex.headers['cache-control']);
    if (request.noStore || (c.open && carriesCredentials(ex))) return proceed(ex, 'BYPASS', undefined);
    const key = `${c.prefix}${ex.path} ${variantOf(ex, c.settings)}`;
    if (request.noCache || request.maxAge === 0) return proceed(ex, 'BYPASS', key);
    const backend = c.backend();
    if (backend === undefined) return proceed(ex, 'MISS', undefined);
    let found: string | undefined | Promise<string | undefined>;
    try {
      found = backend.get(key);
    } catch {
      return proceed(ex, 'MISS', key);
    }
    // A backend that cannot answer (Redis down: it logs that) costs the cache, never the request.
    if (found instanceof Promise) return found.then((text) => answer(ex, key, text, request), () => proceed(ex, 'MISS', key));
    return answer(ex, key, found, request);
  };
}

/**
 * The onResponse step: stores the answer of a GET the cache did not answer, when it is a 200 the
 * service lets shared caches keep (no Cache-Control no-store, no-cache or private, no Set-Cookie,
 * no `Vary: *`), for the channel's ttl or less (max-age, s-maxage), and not larger than
 * max_body_bytes.
 */
export function storeStep(c: ChannelCache): HookFn {
  return function storeAnswer(ex) {
    const pending = c.pending.get(ex);
    if (pending === undefined) return;
    c.pending.delete(ex);
    const r = ex.response;
    if (r.status !== 200 || ex.dropped === true) return;
    const body = r.body;
    if (body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body)) return;
    if (body !== undefined && (typeof body === 'string' ? Buffer.byteLength(body) : body.length) > c.settings.max_body_bytes) return;
    const headers: Record<string, string> = {};
    let response: CacheControl | undefined;
    for (const name of Object.keys(r.headers)) {
      if (pending.before.has(name)) continue;
      const value = r.headers[name]!;
      const lower = name.toLowerCase();
      if (lower === 'set-cookie' || (lower === 'vary' && value.includes('*'))) return;
      if (lower === 'cache-control') response = parseCacheControl(value);
      headers[name] = value;
    }
    if (response !== undefined && (response.noStore || response.noCache || response.private)) return;
    const limit = response?.sMaxAge ?? response?.maxAge;
    const ttl = limit === undefined ? c.settings.ttl : Math.min(c.settings.ttl, limit * 1000);
    const backend = c.backend();
    if (ttl <= 0 || backend === undefined) return;
    const text = encodeAnswer({ status: r.status, headers, contentType: r.contentType, body, storedAt: c.clock.now() });
    try {
      const stored = backend.set(pending.key, text, ttl);
      // A Redis that cannot take it logs so itself; the answer simply is not kept.
      if (stored instanceof Promise) void stored.catch(() => undefined);
    } catch {
      // As above: the memory backend does not throw, a failing Redis rejects.
    }
  };
}
