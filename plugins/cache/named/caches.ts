import type { Logger } from 'pino';
import { maskRedisUrl, SvcError, type Clock } from '../../../sdk/plugin/index.ts';
import type { CacheBackend } from '../shared/backend.ts';
import { openBackend } from '../shared/open.ts';
import { RedisCache } from '../shared/redis.ts';
import { MEMORY_DEFAULTS, type NamedCache } from '../shared/schema.ts';

/** Where services' keys live in a cache; the response cache keeps answers beside them under its own prefix, out of services' reach. */
export const SERVICE_KEYS = 'k:';

interface Live {
  entry: NamedCache;
  backend: CacheBackend;
  services: ReadonlySet<string>;
  /** The entry's settings that make the backend: a change means a new backend. */
  settings: string;
}

/** Hits and misses of services' gets, by cache, counted from the start (a rebuilt cache keeps its counts). */
export interface Counts {
  hits: number;
  misses: number;
}

/** A cache as `cache.list` shows it. */
export interface CacheInfo {
  name: string;
  backend: NamedCache['backend'];
  ttl_ms: number;
  max_value_bytes: number;
  services: string[];
  hits: number;
  misses: number;
  /** memory: what it holds now, and its limits. */
  entries?: number;
  bytes?: number;
  max_entries?: number;
  max_bytes?: number;
  /** redis: where, the password masked; whether it is connected now. */
  redis?: string;
  connected?: boolean;
}

/**
 * The running server's named caches: a backend per `cache[]` entry and the services granted each.
 * A config whose entry changed rebuilds that cache (a memory one empty; a Redis one connects anew,
 * its entries stay in Redis), an entry removed drops its cache, and an entry whose only change is
 * its services keeps it as it is. Applications run one at a time.
 */
export class NamedCaches {
  private live = new Map<string, Live>();
  private readonly counts = new Map<string, Counts>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  apply(entries: readonly NamedCache[]): Promise<void> {
    return this.serial(async () => {
      const next = new Map<string, Live>();
      for (const entry of entries) {
        const { services, ...rest } = entry;
        const settings = JSON.stringify(rest);
        const old = this.live.get(entry.name);
        const backend = old !== undefined && old.settings === settings ? old.backend : await openBackend(entry, this.clock, this.log);
        if (old !== undefined && old.backend !== backend) {
          this.log.info({ cache: entry.name }, entry.backend === 'memory' ? 'cache: settings changed, the cache starts empty' : 'cache: settings changed, connected anew (its entries in Redis stay)');
        }
        if (backend instanceof RedisCache && backend !== old?.backend && !backend.ready) {
          this.log.warn({ cache: entry.name, redis: maskRedisUrl(entry.redis_url!) }, 'cache: Redis not reachable yet; calls fail with ServiceUnavailable until it is');
        }
        next.set(entry.name, { entry, backend, services: new Set(services), settings });
      }
      const previous = this.live;
      this.live = next;
      for (const [name, old] of previous) if (next.get(name)?.backend !== old.backend) await old.backend.close();
      for (const name of this.counts.keys()) if (!next.has(name)) this.counts.delete(name);
    });
  }

  /** The cache for a service allowed to use it; otherwise an error the service sees. */
  use(name: string, service: string): { backend: CacheBackend; entry: NamedCache; counts: Counts } {
    const live = this.live.get(name);
    if (live === undefined) throw new SvcError('NOT_FOUND', `No cache named '${name}'`);
    if (!live.services.has(service)) throw new SvcError('FORBIDDEN', `Cache '${name}' is not granted to service '${service}'`);
    return { backend: live.backend, entry: live.entry, counts: this.countsOf(name) };
  }

  /** The backend of a cache, whoever asks (the response cache: channels' config names it); undefined when there is none. */
  backend(name: string): CacheBackend | undefined {
    return this.live.get(name)?.backend;
  }

  list(): CacheInfo[] {
    return [...this.live.values()].map(({ entry, backend }) => {
      const counts = this.countsOf(entry.name);
      const info: CacheInfo = { name: entry.name, backend: entry.backend, ttl_ms: entry.ttl, max_value_bytes: entry.max_value_bytes, services: [...entry.services], hits: counts.hits, misses: counts.misses };
      const size = backend.size();
      if (size !== undefined) Object.assign(info, { ...size, max_entries: entry.max_entries ?? MEMORY_DEFAULTS.max_entries, max_bytes: entry.max_bytes ?? MEMORY_DEFAULTS.max_bytes });
      if (backend instanceof RedisCache) Object.assign(info, { redis: maskRedisUrl(entry.redis_url!), connected: backend.ready });
      return info;
    });
  }

  /** Empties a cache (services' keys and stored answers alike); how many entries went. */
  async clear(name: string): Promise<number> {
    const live = this.live.get(name);
    if (live === undefined) throw new SvcError('NOT_FOUND', `No cache named '${name}'`);
    return live.backend.clear('');
  }

  close(): Promise<void> {
    return this.serial(async () => {
      for (const { backend } of this.live.values()) await backend.close();
      this.live = new Map();
    });
  }

  private countsOf(name: string): Counts {
    let counts = this.counts.get(name);
    if (counts === undefined) this.counts.set(name, (counts = { hits: 0, misses: 0 }));
    return counts;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
