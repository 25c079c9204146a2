import { systemClock, type Clock } from '../../../sdk/plugin/index.ts';
import type { CacheBackend } from './backend.ts';
import { MemoryCache } from './memory.ts';
import { RedisCache, type RedisCacheOptions } from './redis.ts';
import { MEMORY_DEFAULTS, REDIS_DEFAULTS, type NamedCache } from './schema.ts';

/** The backend a `cache[]` entry describes, a Redis one connected (or its connect timeout over). The CLI opens one too, to clear a Redis cache with no server. */
export async function openBackend(entry: NamedCache, clock: Clock, log: RedisCacheOptions['log']): Promise<CacheBackend> {
  if (entry.backend === 'memory') {
    return new MemoryCache({ maxEntries: entry.max_entries ?? MEMORY_DEFAULTS.max_entries, maxBytes: entry.max_bytes ?? MEMORY_DEFAULTS.max_bytes }, clock);
  }
  const redis = new RedisCache({
    name: entry.name,
    url: entry.redis_url!,
    keyPrefix: `${entry.key_prefix ?? REDIS_DEFAULTS.key_prefix}${entry.name}:`,
    connectTimeoutMs: entry.connect_timeout_ms ?? REDIS_DEFAULTS.connect_timeout_ms,
    timeoutMs: entry.timeout_ms ?? REDIS_DEFAULTS.timeout_ms,
    log,
  });
  await redis.connect();
  return redis;
}


/** With no server running: drops a Redis cache's entries under prefix, and says how many, or undefined when its Redis does not answer. */
export async function clearRedisOffline(entry: NamedCache, prefix: string): Promise<number | undefined> {
  const backend = await openBackend(entry, systemClock, { warn: () => undefined, info: () => undefined });
  try {
    return await backend.clear(prefix);
  } catch {
    return undefined;
  } finally {
    await backend.close();
  }
}
