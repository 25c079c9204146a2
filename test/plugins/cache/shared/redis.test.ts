import { afterAll, describe, expect, it } from 'vitest';
import { SvcError } from '../../../../kernel/errors.ts';
import { RedisCache, type RedisCacheOptions } from '../../../../plugins/cache/shared/redis.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { closedRedisUrl, dropKeys, keysUnder, redisCommand, redisForTests, redisProxy, TEST_REDIS_URL, uniquePrefix } from '../../../helpers/redis.ts';

/** The redis backend of named caches against the real Redis, each test under a key prefix of its own. */

const run = await redisForTests('test/plugins/cache/shared/redis.test.ts');

type Logged = Array<{ level: string; obj: Record<string, unknown>; msg: string }>;

describe.skipIf(!run)('redis cache backend', () => {
  const opened: Array<{ cache: RedisCache; prefix: string }> = [];
  const open = async (over: Partial<RedisCacheOptions> & { logged?: Logged } = {}) => {
    const logged = over.logged ?? [];
    const prefix = uniquePrefix();
    const cache = new RedisCache({
      name: 'c',
      url: TEST_REDIS_URL,
      keyPrefix: prefix,
      connectTimeoutMs: 1000,
      timeoutMs: 1000,
      log: { warn: (obj, msg) => void logged.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }), info: (obj, msg) => void logged.push({ level: 'info', obj: obj as Record<string, unknown>, msg }) },
      ...over,
    });
    opened.push({ cache, prefix });
    await cache.connect();
    return { cache, prefix };
  };
  afterAll(async () => {
    for (const { cache, prefix } of opened) {
      await cache.close();
      await dropKeys(prefix);
    }
  });

  it('stores text under its prefix with a PX expiry, reads it, deletes it', async () => {
    const { cache, prefix } = await open();
    expect(await cache.get('k')).toBeUndefined();
    await cache.set('k', '{"a":"zoë"}', 60_000);
    expect(await cache.get('k')).toBe('{"a":"zoë"}');
    const ttl = (await keysUnder(prefix)).get(`${prefix}k`)!;
    expect(ttl).toBeGreaterThan(59_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    expect(await cache.delete('k')).toBe(true);
    expect(await cache.delete('k')).toBe(false);
    expect(cache.size()).toBeUndefined();
  });

  it('counts atomically across callers; the first incr sets the expiry, later ones keep it', async () => {
    const { cache, prefix } = await open();
    const sums = await Promise.all(Array.from({ length: 200 }, () => cache.incr('n', 1, 5000)));
    expect(new Set(sums).size).toBe(200);
    expect(Math.max(...sums)).toBe(200);
    await cache.incr('n', -50, 900_000);
    expect(await cache.get('n')).toBe('150');
    expect((await keysUnder(prefix)).get(`${prefix}n`)).toBeLessThanOrEqual(5000);
  });

  it('refuses incr on text that is no integer, and past 2^53 (leaving the value as it was)', async () => {
    const { cache } = await open();
    await cache.set('s', '"3"', 1000);
    await expect(cache.incr('s', 1, 1000)).rejects.toThrow(new SvcError('BAD_REQUEST', 'incr needs a value that is an integer'));
    await cache.set('max', String(Number.MAX_SAFE_INTEGER - 1), 1000);
    expect(await cache.incr('max', 1, 1000)).toBe(Number.MAX_SAFE_INTEGER);
    await expect(cache.incr('max', 1, 1000)).rejects.toThrow(/past 9007199254740991/);
    expect(await cache.get('max')).toBe(String(Number.MAX_SAFE_INTEGER));
  });

  it('sends the incr script again when Redis has forgotten it (NOSCRIPT)', async () => {
    const { cache } = await open();
    expect(await cache.incr('n', 1, 1000)).toBe(1);
    await redisCommand(['SCRIPT', 'FLUSH']);
    expect(await cache.incr('n', 1, 1000)).toBe(2);
  });

  it('clears under a prefix, glob characters taken literally', async () => {
    const { cache, prefix } = await open();
    for (const key of ['r:a* x', 'r:a* y', 'r:ab x', 'k:1']) await cache.set(key, '1', 60_000);
    expect(await cache.clear('r:a* ')).toBe(2);
    expect([...(await keysUnder(prefix)).keys()].sort()).toEqual([`${prefix}k:1`, `${prefix}r:ab x`]);
    expect(await cache.clear('')).toBe(2);
  });

  it('makes a connection Redis closed while idle (CLIENT KILL, its `timeout` setting) again', async () => {
    const { cache } = await open();
    await cache.set('k', '1', 60_000);
    const client = (cache as unknown as { client: { sendCommand<T>(args: string[]): Promise<T> } }).client;
    const id = await client.sendCommand<number>(['CLIENT', 'ID']);
    expect(await redisCommand(['CLIENT', 'KILL', 'ID', String(id)])).toBe(1);
    // A call sent before the client noticed may fail; the connection is made again and calls work.
    await waitFor('a call to work again', async () => (await cache.get('k').catch(() => undefined)) === '1');
    expect(cache.ready).toBe(true);
  });

  describe('when Redis cannot answer', () => {
    const unavailable = new SvcError('SERVICE_UNAVAILABLE', "Cache 'c' is unavailable (its Redis does not answer)");

    it('fails every call at once with SERVICE_UNAVAILABLE while unreachable, one warning for many, the password masked', async () => {
      const logged: Logged = [];
      const { cache } = await open({ url: await closedRedisUrl(), logged });
      expect(cache.ready).toBe(false);
      const started = performance.now();
      for (const call of [() => cache.get('k'), () => cache.set('k', '1', 10), () => cache.delete('k'), () => cache.incr('k', 1, 10)]) await expect(call()).rejects.toThrow(unavailable);
      expect(performance.now() - started).toBeLessThan(500);
      expect(logged.filter((l) => l.level === 'warn')).toHaveLength(1);
      expect(logged[0]!.msg).toMatch(/calls on this cache fail with ServiceUnavailable/);
      expect(JSON.stringify(logged)).not.toContain('not-this-password');
    });

    it('fails after timeout_ms when Redis accepts but does not answer, and works again once it does', async () => {
      const proxy = await redisProxy();
      try {
        const { cache } = await open({ url: proxy.url, timeoutMs: 100 });
        await cache.set('k', '1', 60_000);
        proxy.hold();
        const started = performance.now();
        await expect(cache.get('k')).rejects.toThrow(unavailable);
        expect(performance.now() - started).toBeLessThan(1000);
        proxy.release();
        expect(await cache.get('k')).toBe('1');
      } finally {
        await proxy.close();
      }
    });

    it('goes down with its Redis and comes back with it, logging both', async () => {
      const proxy = await redisProxy();
      const logged: Logged = [];
      try {
        const { cache } = await open({ url: proxy.url, logged });
        await cache.set('k', '1', 60_000);
        proxy.down();
        await waitFor('the connection to drop', () => !cache.ready);
        await expect(cache.get('k')).rejects.toThrow(unavailable);
        proxy.up();
        await waitFor('the connection to come back', () => cache.ready);
        expect(await cache.get('k')).toBe('1');
        expect(logged.map((l) => l.msg)).toEqual(['cache: Redis cannot answer; calls on this cache fail with ServiceUnavailable', 'cache: Redis reachable again']);
      } finally {
        await proxy.close();
      }
    });
  });
});
