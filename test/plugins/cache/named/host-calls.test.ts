import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { closedRedisUrl, dropKeys, keysUnder, redisForTests, TEST_REDIS_URL, uniquePrefix } from '../../../helpers/redis.ts';

const redis = await redisForTests('test/plugins/cache/named/host-calls.test.ts');
const PREFIX = uniquePrefix();
const NOWHERE = await closedRedisUrl();

const CONFIG = `
cache:
  - { name: local, services: [user], ttl: 1h, max_value_bytes: 2048, max_entries: 3 }
  - { name: theirs, services: [stranger] }
  - { name: down, backend: redis, redis_url: '${NOWHERE}', connect_timeout_ms: 200, services: [user] }
${redis ? `  - { name: shared, backend: redis, redis_url: '${TEST_REDIS_URL}', key_prefix: '${PREFIX}', ttl: 5m, max_value_bytes: 64, services: [user] }` : ''}
channel_rest:
  - { name: user, url_path: /user, service: user, method: POST, data_format: json, security: none }
  - { name: stranger, url_path: /stranger, service: stranger, method: POST, data_format: json, security: none }
  - { name: raw, url_path: /raw, service: raw, method: POST, data_format: json, security: none }
`;

/**
 * Runs the SDK calls named in the payload, in order, and answers with each one's result or the
 * error it threw (kind, status, message), so every case reads what a service would see.
 */
const PROBE = `import { cache, service } from 'svc/sdk';
export default service({
  async POST(ctx) {
    const out = [];
    for (const [name, op, ...args] of ctx.payload.calls) {
      try {
        const c = cache(name);
        if (op === 'getOrSet') out.push({ value: await c.getOrSet(args[0], () => args[1], args[2]) });
        else out.push({ value: await c[op](...args) });
      } catch (e) {
        out.push({ error: { kind: e.kind ?? e.name, status: e.status, message: String(e.message) } });
      }
    }
    return out;
  },
});
`;

/** Lets a refusal escape, to see what the caller of the channel gets. */
const RAW = `import { cache, service } from 'svc/sdk';
export default service({ POST: async (ctx) => ({ value: await cache(ctx.payload.name).set('k', ctx.payload.value) }) });
`;

type Outcome = { value?: unknown; error?: { kind: string; status: number; message: string } };

const clock = new ManualClock();
let k: TestKernel;

beforeAll(async () => {
  k = await startKernel({ config: CONFIG, clock, services: { 'user.ts': PROBE, 'stranger.ts': PROBE, 'raw.ts': RAW } });
});
afterAll(async () => {
  await k?.close();
  if (redis) await dropKeys(PREFIX);
});

async function calls(path: string, ...list: unknown[][]): Promise<Outcome[]> {
  const res = await k.app.inject({ method: 'POST', url: path, payload: { calls: list } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}
const values = (outcomes: Outcome[]) => outcomes.map((o) => (o.error ? o.error.kind : o.value));

describe('a memory cache through real isolates', () => {
  it('stores JSON values, misses as undefined, deletes, and keeps null apart from a miss', async () => {
    const doc = { a: [1, 'two', { three: true }], zoë: '✓' };
    expect(
      values(await calls('/user', ['local', 'get', 'doc'], ['local', 'set', 'doc', doc], ['local', 'get', 'doc'], ['local', 'set', 'nothing', null], ['local', 'get', 'nothing'], ['local', 'delete', 'doc'], ['local', 'delete', 'doc'], ['local', 'get', 'doc'])),
    ).toEqual([undefined, undefined, doc, undefined, null, true, false, undefined]);
  });

  it('expires entries by the cache ttl or the call ttlMs, on the injected clock', async () => {
    await calls('/user', ['local', 'set', 'short', 1, { ttlMs: 1000 }], ['local', 'set', 'long', 2]);
    clock.advance(999);
    expect(values(await calls('/user', ['local', 'get', 'short']))).toEqual([1]);
    clock.advance(1);
    expect(values(await calls('/user', ['local', 'get', 'short'], ['local', 'get', 'long']))).toEqual([undefined, 2]);
    clock.advance(3_600_000);
    expect(values(await calls('/user', ['local', 'get', 'long']))).toEqual([undefined]);
  });

  it('counts with incr: from 0, by any integer, the first call setting the expiry', async () => {
    expect(values(await calls('/user', ['local', 'incr', 'n'], ['local', 'incr', 'n', 5], ['local', 'incr', 'n', -7, { ttlMs: 1 }]))).toEqual([1, 6, -1]);
    clock.advance(3_600_000);
    expect(values(await calls('/user', ['local', 'get', 'n'], ['local', 'incr', 'w', 1, { ttlMs: 500 }], ['local', 'incr', 'w', 1, { ttlMs: 100_000 }]))).toEqual([undefined, 1, 2]);
    clock.advance(500);
    expect(values(await calls('/user', ['local', 'incr', 'w']))).toEqual([1]);
  });

  it('getOrSet makes a value once, then serves it', async () => {
    expect(values(await calls('/user', ['local', 'getOrSet', 'g', { made: 1 }], ['local', 'getOrSet', 'g', { made: 2 }]))).toEqual([{ made: 1 }, { made: 1 }]);
  });

  it('keeps max_entries, the least recently used out first', async () => {
    await calls('/user', ['local', 'set', 'a', 1], ['local', 'set', 'b', 2], ['local', 'set', 'c', 3], ['local', 'get', 'a'], ['local', 'set', 'd', 4]);
    expect(values(await calls('/user', ['local', 'get', 'a'], ['local', 'get', 'b'], ['local', 'get', 'c'], ['local', 'get', 'd']))).toEqual([1, undefined, 3, 4]);
  });

  it('refuses a value over max_value_bytes with BadRequest naming the limit, and keeps the old one', async () => {
    await calls('/user', ['local', 'set', 'big', 'small']);
    const [refused, kept] = await calls('/user', ['local', 'set', 'big', 'x'.repeat(2047)], ['local', 'get', 'big']);
    expect(refused!.error).toEqual({ kind: 'BadRequest', status: 400, message: "Value of 2049 bytes is larger than cache 'local' takes (max_value_bytes 2048)" });
    expect(kept!.value).toBe('small');
  });

  it('refuses incr on a value that is no integer, and arguments the SDK or the host refuse', async () => {
    const out = await calls('/user', ['local', 'set', 's', 'text'], ['local', 'incr', 's'], ['local', 'incr', 'f', 1.5], ['local', 'get', ''], ['local', 'set', 'u'], ['local', 'set', 't', 1, { ttlMs: 0 }], ['local', 'get', 'k'.repeat(1025)]);
    expect(out[1]!.error).toEqual({ kind: 'BadRequest', status: 400, message: 'incr needs a value that is an integer' });
    expect(out.slice(2, 6).map((o) => o.error?.kind)).toEqual(['TypeError', 'TypeError', 'TypeError', 'TypeError']);
    expect(out[6]!.error?.message).toMatch(/invalid arguments for cache\.get: key/);
  });
});

describe('who may use a cache', () => {
  it('refuses a service the cache does not list, and an unknown name', async () => {
    const [forbidden, missing] = await calls('/user', ['theirs', 'get', 'k'], ['nope', 'set', 'k', 1]);
    expect(forbidden!.error).toEqual({ kind: 'Forbidden', status: 403, message: "Cache 'theirs' is not granted to service 'user'" });
    expect(missing!.error).toEqual({ kind: 'NotFound', status: 404, message: "No cache named 'nope'" });
    expect(values(await calls('/stranger', ['theirs', 'set', 'k', 1], ['theirs', 'get', 'k'], ['local', 'get', 'a']))).toEqual([undefined, 1, 'Forbidden']);
  });

  it('lets an uncaught refusal reach the caller as its status', async () => {
    const forbidden = await k.app.inject({ method: 'POST', url: '/raw', payload: { name: 'local', value: 1 } });
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json()).toMatchObject({ result: 'Error', details: "Cache 'local' is not granted to service 'raw'" });
  });
});

describe('a redis cache whose Redis is down', () => {
  it('answers every call with ServiceUnavailable, at once, and the server goes on serving', async () => {
    const started = performance.now();
    const out = await calls('/user', ['down', 'get', 'k'], ['down', 'set', 'k', 1], ['down', 'incr', 'n'], ['down', 'delete', 'k'], ['local', 'set', 'up', 1], ['local', 'get', 'up']);
    expect(out.slice(0, 4).map((o) => o.error)).toEqual(Array(4).fill({ kind: 'ServiceUnavailable', status: 503, message: "Cache 'down' is unavailable (its Redis does not answer)" }));
    expect(values(out.slice(4))).toEqual([undefined, 1]);
    expect(performance.now() - started).toBeLessThan(2000);
    const raw = await k.app.inject({ method: 'POST', url: '/user', payload: { calls: [] } });
    expect(raw.statusCode).toBe(200);
  });
});

describe.skipIf(!redis)('a redis cache through real isolates', () => {
  it('stores, reads, deletes and counts in Redis under the prefix and the cache name, with PX expiry', async () => {
    expect(values(await calls('/user', ['shared', 'set', 'doc', { a: 1 }], ['shared', 'get', 'doc'], ['shared', 'incr', 'n', 2, { ttlMs: 10_000 }], ['shared', 'incr', 'n', 3]))).toEqual([undefined, { a: 1 }, 2, 5]);
    const keys = await keysUnder(PREFIX);
    expect([...keys.keys()].sort()).toEqual([`${PREFIX}shared:k:doc`, `${PREFIX}shared:k:n`]);
    expect(keys.get(`${PREFIX}shared:k:doc`)).toBeGreaterThan(299_000);
    expect(keys.get(`${PREFIX}shared:k:doc`)).toBeLessThanOrEqual(300_000);
    expect(keys.get(`${PREFIX}shared:k:n`)).toBeLessThanOrEqual(10_000);
    expect(values(await calls('/user', ['shared', 'delete', 'doc'], ['shared', 'get', 'doc']))).toEqual([true, undefined]);
  });

  it('refuses what memory refuses, alike', async () => {
    const out = await calls('/user', ['shared', 'set', 'big', 'x'.repeat(100)], ['shared', 'set', 's', 'text'], ['shared', 'incr', 's'], ['shared', 'set', 'max', Number.MAX_SAFE_INTEGER], ['shared', 'incr', 'max'], ['shared', 'get', 'max']);
    expect(out[0]!.error).toEqual({ kind: 'BadRequest', status: 400, message: "Value of 102 bytes is larger than cache 'shared' takes (max_value_bytes 64)" });
    expect(out[2]!.error).toEqual({ kind: 'BadRequest', status: 400, message: 'incr needs a value that is an integer' });
    expect(out[4]!.error).toMatchObject({ kind: 'BadRequest', message: expect.stringMatching(/past 9007199254740991/) });
    expect(out[5]!.value).toBe(Number.MAX_SAFE_INTEGER);
  });
});
