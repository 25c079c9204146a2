import { callHost } from './internal/runtime.ts';

export interface CacheSetOptions {
  /** How long the entry lives, in ms (1 ms to a year); default: the cache's `ttl`. */
  ttlMs?: number;
}

/**
 * A cache of the server's config (`cache:`), by name: JSON values under string keys, kept in the
 * server's memory or in a Redis every node shares, for the cache's `ttl` unless a call says.
 * The config lists which services may use it. Errors: NotFound (no such cache), Forbidden (not
 * granted to this service), BadRequest (a value over the cache's max_value_bytes, incr on a value
 * that is no integer), ServiceUnavailable (its Redis does not answer).
 */
export interface Cache {
  readonly name: string;
  /** The value stored at key, or undefined when there is none (or it expired). */
  get<T = unknown>(key: string): Promise<T | undefined>;
  /** Stores a JSON value (what JSON.stringify keeps of it) at key, replacing what was there. */
  set(key: string, value: unknown, options?: CacheSetOptions): Promise<void>;
  /** True when there was an entry. */
  delete(key: string): Promise<boolean>;
  /**
   * Adds `by` (default 1, may be negative) to the integer at key, atomically across every caller,
   * and returns the sum. An absent key counts from 0 and lives `ttlMs` (default the cache's ttl);
   * an existing one keeps its expiry, so a key per window counts that window.
   */
  incr(key: string, by?: number, options?: CacheSetOptions): Promise<number>;
  /**
   * The value at key; when there is none, `make()`'s value, stored first. Two callers that miss at
   * once both run make() (the last one's value stays): fine for values that are the same anyway.
   */
  getOrSet<T>(key: string, make: () => T | Promise<T>, options?: CacheSetOptions): Promise<T>;
}

function checkKey(fn: string, key: unknown): void {
  if (typeof key !== 'string' || key === '') throw new TypeError(`cache.${fn}: key must be a non-empty string`);
}

function ttlOf(fn: string, options: CacheSetOptions | undefined): number | undefined {
  const ttlMs = options?.ttlMs;
  if (ttlMs !== undefined && (typeof ttlMs !== 'number' || !Number.isInteger(ttlMs) || ttlMs < 1)) throw new TypeError(`cache.${fn}: ttlMs must be a whole number of milliseconds, at least 1`);
  return ttlMs;
}

class CacheHandle implements Cache {
  constructor(readonly name: string) {}

  async get<T = unknown>(key: string): Promise<T | undefined> {
    checkKey('get', key);
    const text = (await callHost('cache.get', { name: this.name, key })) as string | null;
    return text === null ? undefined : (JSON.parse(text) as T);
  }

  async set(key: string, value: unknown, options?: CacheSetOptions): Promise<void> {
    checkKey('set', key);
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol') throw new TypeError('cache.set: value must be JSON (undefined, functions and symbols are not)');
    await callHost('cache.set', { name: this.name, key, value, ttlMs: ttlOf('set', options) });
  }

  async delete(key: string): Promise<boolean> {
    checkKey('delete', key);
    return (await callHost('cache.delete', { name: this.name, key })) as boolean;
  }

  async incr(key: string, by = 1, options?: CacheSetOptions): Promise<number> {
    checkKey('incr', key);
    if (!Number.isSafeInteger(by)) throw new TypeError('cache.incr: by must be an integer');
    return (await callHost('cache.incr', { name: this.name, key, by, ttlMs: ttlOf('incr', options) })) as number;
  }

  async getOrSet<T>(key: string, make: () => T | Promise<T>, options?: CacheSetOptions): Promise<T> {
    const cached = await this.get<T>(key);
    if (cached !== undefined) return cached;
    const value = await make();
    await this.set(key, value, options);
    return value;
  }
}

/** A named cache of the config: `cache('sessions')`. */
export function cache(name: string): Cache {
  if (typeof name !== 'string' || name === '') throw new TypeError('cache: name must be a non-empty string');
  return new CacheHandle(name);
}
