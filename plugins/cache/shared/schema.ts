import { z } from 'zod';
import { listColumn, localName, scopedRef } from '../../../sdk/plugin/index.ts';
import { BACKENDS } from './backend.ts';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The longest time to live anything may ask for: a year. */
export const MAX_TTL_MS = 365 * UNIT_MS.d!;

/** `1h` → 3600000: a number and one unit (ms, s, m, h, d), or a number of milliseconds; a string says why not. */
export function ttlMs(value: string | number): number | string {
  let ms: number;
  if (typeof value === 'number') ms = value;
  else {
    const m = /^(\d+)(ms|s|m|h|d)?$/.exec(value.trim());
    if (!m) return `'${value}' is not a time to live: write milliseconds, or a number and a unit, like 250ms, 30s, 5m, 1h or 7d`;
    ms = Number(m[1]) * UNIT_MS[m[2] ?? 'ms']!;
  }
  if (!Number.isSafeInteger(ms) || ms < 1) return 'must be a whole number of milliseconds, at least 1';
  if (ms > MAX_TTL_MS) return `must be at most a year (${MAX_TTL_MS} ms)`;
  return ms;
}

/** A time to live as config writes it (`1h`, `30s`, or milliseconds), read as milliseconds. */
export const ttlSchema = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const ms = ttlMs(value);
  if (typeof ms === 'string') {
    ctx.addIssue({ code: 'custom', message: ms });
    return z.NEVER;
  }
  return ms;
});

/** Cache names travel in SDK calls, CLI arguments, Redis keys and log lines: a short, plain token. */
export const cacheNameSchema = z
  .string()
  .refine((name) => /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(localName(name)), 'letters, digits, `.`, `_` and `-`, starting with a letter or digit, at most 128 characters (a tenant\'s after its `tenant/`)');

const MiB = 1024 * 1024;
/** What a memory cache holds unless its entry says otherwise. */
export const MEMORY_DEFAULTS = { max_entries: 10_000, max_bytes: 64 * MiB };
export const REDIS_DEFAULTS = { key_prefix: 'svc:cache:', connect_timeout_ms: 2000, timeout_ms: 500 };

export const namedCacheSchema = z
  .object({
    name: cacheNameSchema.describe("Unique name; services use the cache by it (`cache(name)` in the SDK), channels' response_cache.cache names it, and `svc cache clear NAME` empties it."),
    backend: listColumn(z.enum(BACKENDS), 1, 'Backend')
      .default('memory')
      .describe("Where entries live: memory (this node's, least recently used out first) or redis (one Redis every node shares)."),
    ttl: listColumn(ttlSchema, 2, 'Time to live')
      .default(3_600_000)
      .describe('How long an entry lives unless the call says (`ttlMs`): milliseconds, or a number and a unit, `30s`, `5m`, `1h`, `7d`. Default one hour.'),
    max_entries: z.number().int().min(1).max(10_000_000).optional().describe(`memory: most entries kept; past it the least recently used go. Default ${MEMORY_DEFAULTS.max_entries}.`),
    max_bytes: z
      .number()
      .int()
      .min(1024)
      .optional()
      .describe(`memory: most bytes held, keys and values (the JSON text, UTF-8); past it the least recently used go. Default ${MEMORY_DEFAULTS.max_bytes} (64 MiB).`),
    max_value_bytes: z
      .number()
      .int()
      .min(1)
      .max(64 * MiB)
      .default(MiB)
      .describe('Largest value a service may store, bytes of its JSON text; a larger one is refused with BadRequest naming this limit. Default 1 MiB.'),
    services: listColumn(z.array(scopedRef(z.string().min(1))), 3, 'Services').default([]).describe('Services that may use the cache (file names without extension). Left out or empty: no service may (a response_cache may still use it).'),
    redis_url: z
      .string()
      .regex(/^rediss?:\/\/[^\s]+$/, 'must be a redis:// or rediss:// URL')
      .optional()
      .describe('redis: the Redis, redis://[user:password@]host:port[/db] (rediss:// for TLS). Give a password through ${ENV}; the URL is logged with its password masked, and write-only in the admin API (it may hold one).')
      .meta({ writeOnly: true }),
    key_prefix: z.string().min(1).max(200).optional().describe(`redis: put before every key, then the cache's name and \`:\` (several installations may share one Redis with different prefixes). Default \`${REDIS_DEFAULTS.key_prefix}\`.`),
    connect_timeout_ms: z.number().int().min(100).max(60_000).optional().describe(`redis: how long one attempt to connect may take, in ms (it is retried with backoff meanwhile). Default ${REDIS_DEFAULTS.connect_timeout_ms}.`),
    timeout_ms: z
      .number()
      .int()
      .min(10)
      .max(60_000)
      .optional()
      .describe(`redis: how long one call may wait for Redis, in ms, before the service gets ServiceUnavailable. Default ${REDIS_DEFAULTS.timeout_ms}.`),
  })
  .strict()
  .superRefine((entry, ctx) => {
    const only = (backend: string, keys: readonly (keyof typeof entry)[]) => {
      for (const key of keys) if (entry[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: `only for backend ${backend}` });
    };
    if (entry.backend === 'redis') {
      if (entry.redis_url === undefined) ctx.addIssue({ code: 'custom', path: ['redis_url'], message: 'required for backend redis' });
      only('memory', ['max_entries', 'max_bytes']);
    } else {
      only('redis', ['redis_url', 'key_prefix', 'connect_timeout_ms', 'timeout_ms']);
      const maxBytes = entry.max_bytes ?? MEMORY_DEFAULTS.max_bytes;
      if (entry.max_value_bytes > maxBytes) ctx.addIssue({ code: 'custom', path: ['max_value_bytes'], message: `must not exceed max_bytes (${maxBytes})` });
    }
  });

export type NamedCache = z.infer<typeof namedCacheSchema>;

