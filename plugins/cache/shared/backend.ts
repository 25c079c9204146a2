/**
 * Where a cache's entries live: this node's memory (memory.ts) or a Redis every node shares
 * (redis.ts), one interface for both. Keys are whole (the callers put their own prefixes first:
 * services' keys and stored responses never meet); values are text, the JSON of what a service
 * stored or an encoded response.
 *
 * Failures are SvcErrors the caller passes on: BAD_REQUEST when incr finds a value it cannot count
 * on, SERVICE_UNAVAILABLE when the backend cannot answer (Redis down or too slow).
 */

/** The memory backend answers at once (no promise per request on the local path), Redis by a promise. */
export type MaybePromise<T> = T | Promise<T>;

export const BACKENDS = ['memory', 'redis'] as const;
export type BackendKind = (typeof BACKENDS)[number];

export interface CacheBackend {
  readonly kind: BackendKind;
  /** The text stored at key, or undefined when there is none (or it expired). */
  get(key: string): MaybePromise<string | undefined>;
  set(key: string, text: string, ttlMs: number): MaybePromise<void>;
  /** Whether there was an entry. */
  delete(key: string): MaybePromise<boolean>;
  /**
   * Adds `by` to the integer stored at key, atomically, and returns the sum. An absent key counts
   * from 0 and lives ttlMs; an existing one keeps its expiry (a counter per time window).
   */
  incr(key: string, by: number, ttlMs: number): MaybePromise<number>;
  /** Drops every entry whose key starts with prefix; resolves how many. */
  clear(prefix: string): MaybePromise<number>;
  /** Entries and bytes held now, where the backend can tell cheaply (memory); undefined for Redis. */
  size(): { entries: number; bytes: number } | undefined;
  close(): Promise<void>;
}

declare module '../../../sdk/plugin/capabilities.ts' {
  interface Capabilities {
    /** A named cache's backend (plugins/cache/named), for the response cache to keep answers in; undefined when the config has none of that name. */
    'cache.named': (name: string) => CacheBackend | undefined;
  }
}
