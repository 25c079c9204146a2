import { afterAll, describe, expect, it } from 'vitest';
import { CalendarWindow, ZoneTime } from '../../../plugins/rate-limit/calendar.ts';
import { MemoryCounterStore } from '../../../plugins/rate-limit/policies/memory.ts';
import { maskRedisUrl, RedisCounterStore, type RedisStoreOptions } from '../../../plugins/rate-limit/policies/redis.ts';
import { newDecision, type Decision, type DecisionRequest } from '../../../plugins/rate-limit/policies/types.ts';
import type { LimitUnit } from '../../../plugins/rate-limit/schema.ts';
import { closedRedisUrl, dropKeys, keysUnder, redisCommand, redisForTests, redisProxy, TEST_REDIS_URL, uniquePrefix } from '../../helpers/redis.ts';

/** The redis policy's store against a real Redis: the memory store's decisions, shared and atomic. */

const run = await redisForTests('test/plugins/rate-limit/redis.test.ts');
const T0 = Date.UTC(2026, 0, 30, 22, 59, 50); // Berlin: 23:59:50 on 30 January, near a day, month and hour end.

type Warned = Array<{ obj: Record<string, unknown>; msg: string }>;

function options(over: Partial<RedisStoreOptions> & { warned?: Warned } = {}): RedisStoreOptions {
  const warned = over.warned ?? [];
  return {
    url: TEST_REDIS_URL,
    keyPrefix: uniquePrefix(),
    connectTimeoutMs: 1000,
    timeoutMs: 1000,
    onError: 'allow',
    log: { warn: (obj, msg) => void warned.push({ obj: obj as Record<string, unknown>, msg }), info: () => undefined },
    ...over,
  };
}

function request(over: Partial<DecisionRequest>): DecisionRequest {
  return { rate: 0, burst: 0, limit: Number.POSITIVE_INFINITY, windowStart: 0, windowEnd: 0, now: T0, evictable: false, ...over };
}

const plain = (d: Decision) => ({ allowed: d.allowed, remaining: d.remaining, retryAtMs: d.retryAtMs });

/** A small deterministic PRNG (mulberry32), so a failing sequence can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe.skipIf(!run)('redis policy store', () => {
  const stores: RedisCounterStore[] = [];
  const open = async (over: Parameters<typeof options>[0] = {}) => {
    const store = new RedisCounterStore(options(over));
    stores.push(store);
    await store.connect();
    return store;
  };
  const prefixes = () => stores.map((s) => (s as unknown as { options: RedisStoreOptions }).options.keyPrefix);
  afterAll(async () => {
    for (const prefix of prefixes()) if (prefix.startsWith('svc:test:')) await dropKeys(prefix);
    for (const s of stores) await s.close();
  });

  it('decides as the memory store does, request by request, for rate, burst and calendar caps', async () => {
    const time = new ZoneTime('Europe/Berlin');
    const units: LimitUnit[] = ['second', 'minute', 'hour', 'day', 'month'];
    const windows = new Map(units.map((u) => [u, new CalendarWindow(time, u)]));
    // Each shape is one key in both stores: rate alone, rate and cap, cap alone (several units).
    const shapes: Array<{ rate: number; burst: number; limit: number; unit?: LimitUnit }> = [
      { rate: 3, burst: 5, limit: Number.POSITIVE_INFINITY },
      { rate: 7, burst: 1, limit: Number.POSITIVE_INFINITY },
      { rate: 2, burst: 4, limit: 9, unit: 'minute' },
      { rate: 0, burst: 0, limit: 3, unit: 'second' },
      { rate: 0, burst: 0, limit: 25, unit: 'hour' },
      { rate: 10, burst: 20, limit: 40, unit: 'day' },
      { rate: 0, burst: 0, limit: 60, unit: 'month' },
      { rate: 1, burst: 1, limit: 0, unit: 'minute' },
    ];
    const memory = new MemoryCounterStore();
    const redis = await open();
    const next = random(16);
    let now = T0;
    const seen: string[] = [];
    for (let i = 0; i < 1500; i++) {
      // Mostly bursts at one instant, sometimes small steps, now and then a long gap (across the window ends).
      const r = next();
      now += r < 0.55 ? 0 : r < 0.9 ? Math.floor(next() * 400) : Math.floor(next() * 90_000);
      const index = Math.floor(next() * shapes.length);
      const shape = shapes[index]!;
      const window = shape.unit === undefined ? undefined : windows.get(shape.unit)!.at(now);
      const req = request({ rate: shape.rate, burst: shape.burst, limit: shape.limit, now, windowStart: window?.start ?? 0, windowEnd: window?.end ?? 0 });
      const expected = plain(memory.decide(`k${index}`, req, newDecision()));
      const got = plain(await redis.decide(`k${index}`, req, newDecision()));
      expect(got, `decision ${i} on shape ${index} at +${now - T0} ms`).toEqual(expected);
      seen.push(`${expected.allowed}`);
    }
    // The sequence exercised both answers.
    expect(seen.filter((s) => s === 'true').length).toBeGreaterThan(200);
    expect(seen.filter((s) => s === 'false').length).toBeGreaterThan(200);
  });

  it('keeps a limit changed between decisions as the memory store does (counts stay, the new figures apply)', async () => {
    const memory = new MemoryCounterStore();
    const redis = await open();
    const window = new CalendarWindow(new ZoneTime('UTC'), 'hour').at(T0);
    const at = (limit: number, rate: number, burst: number, now = T0) =>
      request({ limit, rate, burst, now, windowStart: window.start, windowEnd: window.end });
    const steps = [at(5, 10, 3), at(5, 10, 3), at(5, 10, 3), at(5, 10, 3), at(10, 2, 6), at(10, 2, 6), at(10, 2, 6), at(10, 2, 6, T0 + 1500), at(3, 1, 1, T0 + 1500)];
    for (const [i, req] of steps.entries()) {
      expect(plain(await redis.decide('k', req, newDecision())), `step ${i}`).toEqual(plain(memory.decide('k', req, newDecision())));
    }
  });

  it('a wall clock set back an hour costs one emission interval, as in the memory store, not an hour of refusals', async () => {
    const memory = new MemoryCounterStore();
    const redis = await open();
    const back = T0 - 3_600_000;
    const steps = [T0, T0, back, back + 50, back + 100, back + 100, back + 1_100].map((now) => request({ rate: 10, burst: 10, now }));
    const decided: boolean[] = [];
    for (const [i, req] of steps.entries()) {
      const d = plain(await redis.decide('k', req, newDecision()));
      expect(d, `step ${i}`).toEqual(plain(memory.decide('k', req, newDecision())));
      decided.push(d.allowed);
    }
    expect(decided).toEqual([true, true, false, false, true, false, true]);
  });

  it('is atomic under many decisions at once', async () => {
    const redis = await open();
    const req = request({ rate: 1, burst: 50, limit: 40, windowStart: T0 - 10_000, windowEnd: T0 + 50_000 });
    const decisions = await Promise.all(Array.from({ length: 300 }, () => redis.decide('shared', req, newDecision())));
    expect(decisions.filter((d) => d.allowed).length).toBe(40);
    expect(decisions.filter((d) => d.allowed).map((d) => d.remaining).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i));
  });

  it('namespaces keys under the prefix and lets them expire once they hold nothing', async () => {
    const redis = await open();
    const prefix = prefixes().at(-1)!;
    // A bucket of 4 at 2/s holding 2 requests refills in 1 s; a minute window ends 30 s on.
    await redis.decide('channel:a/r1/all-day/', request({ rate: 2, burst: 4 }), newDecision());
    await redis.decide('channel:a/r1/all-day/', request({ rate: 2, burst: 4 }), newDecision());
    await redis.decide('channel:a/r2/all-day/', request({ limit: 5, windowStart: T0 - 30_000, windowEnd: T0 + 30_000 }), newDecision());
    const keys = await keysUnder(prefix);
    expect([...keys.keys()].sort()).toEqual([`${prefix}channel:a/r1/all-day/`, `${prefix}channel:a/r2/all-day/`]);
    expect(keys.get(`${prefix}channel:a/r1/all-day/`)).toBeGreaterThan(1000);
    expect(keys.get(`${prefix}channel:a/r1/all-day/`)).toBeLessThanOrEqual(2000);
    expect(keys.get(`${prefix}channel:a/r2/all-day/`)).toBeGreaterThan(30_000);
    expect(keys.get(`${prefix}channel:a/r2/all-day/`)).toBeLessThanOrEqual(31_000);
  });

  it('loads the script again when Redis has forgotten it (NOSCRIPT)', async () => {
    const redis = await open();
    await redisCommand(['SCRIPT', 'FLUSH']);
    const req = request({ limit: 1, windowStart: T0, windowEnd: T0 + 1000 });
    expect((await redis.decide('k', req, newDecision())).allowed).toBe(true);
    expect((await redis.decide('k', req, newDecision())).allowed).toBe(false);
  });

  it('clears by prefix, names with glob characters taken literally', async () => {
    const redis = await open();
    const req = request({ limit: 1, windowStart: T0, windowEnd: T0 + 60_000 });
    for (const key of ['channel:a*/r1/all-day/', 'channel:a*/r2/all-day/1.2.3.4', 'channel:ab/r1/all-day/', 'security:a*/r1/all-day/']) {
      await redis.decide(key, req, newDecision());
    }
    expect(await redis.clear('channel:a*/')).toBe(2);
    expect(await redis.clear('channel:a*/')).toBe(0);
    expect((await redis.decide('channel:a*/r1/all-day/', req, newDecision())).allowed).toBe(true);
    expect((await redis.decide('channel:ab/r1/all-day/', req, newDecision())).allowed).toBe(false);
  });

  it('a connection Redis closes while idle (CLIENT KILL, its `timeout` setting) is made again; the next decisions count', async () => {
    const warned: Warned = [];
    const redis = await open({ onError: 'deny', warned });
    const req = request({ rate: 1, burst: 3 });
    expect((await redis.decide('k', req, newDecision())).remaining).toBe(2);
    const client = (redis as unknown as { client: { sendCommand<T>(args: string[]): Promise<T> } }).client;
    const id = await client.sendCommand<number>(['CLIENT', 'ID']);
    expect(await redisCommand(['CLIENT', 'KILL', 'ID', String(id)])).toBe(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(redis.ready).toBe(true);
    expect(plain(await redis.decide('k', req, newDecision()))).toEqual({ allowed: true, remaining: 1, retryAtMs: 0 });
    expect(await client.sendCommand<number>(['CLIENT', 'ID'])).not.toBe(id);
  });

  describe('when Redis is unreachable', () => {
    it('fails open with on_redis_error allow: admitted, uncounted, counted as a failure, one warning line for many', async () => {
      const warned: Warned = [];
      const failures: string[] = [];
      const url = await closedRedisUrl();
      const redis = await open({ url, onError: 'allow', warned, onFailure: (o) => void failures.push(o) });
      expect(redis.ready).toBe(false);
      const req = request({ limit: 0, windowStart: T0, windowEnd: T0 + 1000 });
      for (let i = 0; i < 5; i++) {
        const d = await redis.decide('k', req, newDecision());
        expect(d).toMatchObject({ allowed: true, uncounted: true, remaining: 0, retryAtMs: 0 });
      }
      expect(failures).toEqual(['allow', 'allow', 'allow', 'allow', 'allow']);
      expect(warned).toHaveLength(1);
      expect(warned[0]!.msg).toMatch(/admitted uncounted \(on_redis_error: allow\)/);
      // The password never reaches the log.
      expect(JSON.stringify(warned)).not.toContain('not-this-password');
      expect(warned[0]!.obj.redis).toBe(maskRedisUrl(url));
    });

    it('fails closed with on_redis_error deny: refused, to be retried a second later', async () => {
      const redis = await open({ url: await closedRedisUrl(), onError: 'deny' });
      const d = await redis.decide('k', request({ rate: 100, burst: 100 }), newDecision());
      expect(plain(d)).toEqual({ allowed: false, remaining: 0, retryAtMs: T0 + 1000 });
    });

    it('fails after redis_timeout_ms when Redis accepts but does not answer', async () => {
      const proxy = await redisProxy();
      try {
        const redis = await open({ url: proxy.url, timeoutMs: 100, onError: 'deny' });
        expect(redis.ready).toBe(true);
        expect((await redis.decide('k', request({ rate: 1, burst: 2 }), newDecision())).allowed).toBe(true);
        proxy.hold();
        const started = performance.now();
        const d = await redis.decide('k', request({ rate: 1, burst: 2 }), newDecision());
        expect(plain(d)).toEqual({ allowed: false, remaining: 0, retryAtMs: T0 + 1000 });
        expect(performance.now() - started).toBeLessThan(1000);
        // The late answer, once it comes, changes nothing for the request already decided.
        proxy.release();
        await redis.close();
      } finally {
        await proxy.close();
      }
    });
  });

  it('masks a password (or a lone token) in the URL it logs', () => {
    expect(maskRedisUrl('redis://user:s3cret@db:6380/2')).toBe('redis://user:***@db:6380/2');
    expect(maskRedisUrl('rediss://:s3cret@db:6380')).toBe('rediss://:***@db:6380');
    expect(maskRedisUrl('redis://token@db')).toBe('redis://***@db');
    expect(maskRedisUrl('redis://db:6379')).toBe('redis://db:6379');
  });
});
