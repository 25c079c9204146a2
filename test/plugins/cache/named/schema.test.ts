import { describe, expect, it } from 'vitest';
import type { SvcConfig } from '../../../../kernel/config/schema.ts';
import { ConfigError, readSource, validate } from '../../../../kernel/config/store.ts';
import cachePlugin from '../../../../plugins/cache/named/plugin.ts';

function parse(yaml: string, env: NodeJS.ProcessEnv = {}): SvcConfig {
  return validate(readSource(yaml, env), [cachePlugin], {});
}

function issues(yaml: string): string {
  try {
    parse(yaml);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.join('\n');
    throw err;
  }
  throw new Error('the config was accepted');
}

describe('cache: section', () => {
  it('is empty when absent; an entry needs only a name (memory, one hour, 1 MiB values, no service)', () => {
    expect(parse('{}').cache).toEqual([]);
    expect(parse('cache:\n  - { name: sessions }\n').cache).toEqual([{ name: 'sessions', backend: 'memory', ttl: 3_600_000, max_value_bytes: 1024 * 1024, services: [] }]);
  });

  it.each([
    ['250ms', 250],
    ['30s', 30_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['7d', 604_800_000],
    [1500, 1500],
    ['1500', 1500],
  ])('reads the ttl %s as %d ms', (ttl, ms) => {
    expect(parse(`cache:\n  - { name: c, ttl: ${JSON.stringify(ttl)} }\n`).cache[0]!.ttl).toBe(ms);
  });

  it('takes a Redis with its URL from the environment, and the redis-only settings', () => {
    const [entry] = parse("cache:\n  - { name: shared, backend: redis, redis_url: '${REDIS}', key_prefix: 'app:', timeout_ms: 200, connect_timeout_ms: 500, services: [a, b] }\n", { REDIS: 'redis://:pw@db:6380/1' }).cache;
    expect(entry).toEqual({ name: 'shared', backend: 'redis', ttl: 3_600_000, max_value_bytes: 1024 * 1024, redis_url: 'redis://:pw@db:6380/1', key_prefix: 'app:', timeout_ms: 200, connect_timeout_ms: 500, services: ['a', 'b'] });
  });

  it.each([
    ['a name with a space', '{ name: "a b" }', /cache\[0\]\.name: letters, digits/],
    ['an unknown backend', '{ name: c, backend: disk }', /cache\[0\]\.backend/],
    ['a ttl with two units', '{ name: c, ttl: 1h30m }', /cache\[0\]\.ttl: '1h30m' is not a time to live/],
    ['a ttl of 0', '{ name: c, ttl: 0 }', /cache\[0\]\.ttl: must be a whole number of milliseconds, at least 1/],
    ['a ttl over a year', '{ name: c, ttl: 366d }', /cache\[0\]\.ttl: must be at most a year/],
    ['redis without a URL', '{ name: c, backend: redis }', /cache\[0\]\.redis_url: required for backend redis/],
    ['a URL that is not Redis', '{ name: c, backend: redis, redis_url: "http://db" }', /cache\[0\]\.redis_url: must be a redis:\/\/ or rediss:\/\/ URL/],
    ['a memory limit on a redis cache', '{ name: c, backend: redis, redis_url: "redis://db", max_entries: 5 }', /cache\[0\]\.max_entries: only for backend memory/],
    ['a redis setting on a memory cache', '{ name: c, key_prefix: "x:" }', /cache\[0\]\.key_prefix: only for backend redis/],
    ['values larger than the whole cache', '{ name: c, max_bytes: 4096, max_value_bytes: 8192 }', /cache\[0\]\.max_value_bytes: must not exceed max_bytes \(4096\)/],
    ['an unknown field', '{ name: c, size: 5 }', /cache\[0\]/],
  ])('refuses %s', (_label, entry, message) => {
    expect(issues(`cache:\n  - ${entry}\n`)).toMatch(message);
  });

  it('refuses two caches with one name', () => {
    expect(issues('cache:\n  - { name: c }\n  - { name: c, backend: redis, redis_url: "redis://db" }\n')).toMatch(/cache\[1\]\.name: duplicate cache name 'c' \(also cache\[0\]\)/);
  });
});
