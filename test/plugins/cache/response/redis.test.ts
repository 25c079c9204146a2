import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../../../../plugins/cache/shared/backend.ts';
import type { RedisCache } from '../../../../plugins/cache/shared/redis.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { dropKeys, keysUnder, redisForTests, redisProxy, uniquePrefix, type RedisProxy } from '../../../helpers/redis.ts';

/** Two nodes keeping a channel's answers in one named Redis cache: one stores, the other serves. */

const run = await redisForTests('test/plugins/cache/response/redis.test.ts');
const PREFIX = uniquePrefix();

const PAGE = `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ cid: ctx.cid }) });\n`;
const config = (url: string) => `
cache:
  - { name: answers, backend: redis, redis_url: '${url}', key_prefix: '${PREFIX}', timeout_ms: 200, connect_timeout_ms: 500 }
channel_rest:
  - { name: page, url_path: '/page/{id}', service: page, security: none, response_cache: { ttl: 2m, cache: answers } }
`;

describe.skipIf(!run)('response cache in a named Redis cache', () => {
  let proxy: RedisProxy;
  let a: TestKernel;
  let b: TestKernel;
  beforeAll(async () => {
    proxy = await redisProxy();
    a = await startKernel({ config: config(proxy.url), services: { 'page.ts': PAGE } });
    b = await startKernel({ config: config(proxy.url), services: { 'page.ts': PAGE } });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await proxy?.close();
    await dropKeys(PREFIX);
  });

  const answersOf = (k: TestKernel) => k.kernel.api.lookup('cache.named')!('answers') as RedisCache;
  const get = async (k: TestKernel, url: string) => {
    const res = await k.app.inject({ method: 'GET', url });
    return { status: res.statusCode, cache: res.headers['x-svc-cache'], cid: (res.json() as { cid: string }).cid };
  };

  it('is shared by every node: one stores, the other answers from it, with Redis keeping the ttl', async () => {
    const stored = await get(a, '/page/1');
    expect(stored.cache).toBe('MISS');
    // The store follows the answer: b sees it once it is in Redis.
    await waitFor('the answer to be stored', async () => (await keysUnder(`${PREFIX}answers:r:`)).size === 1);
    expect(await get(b, '/page/1')).toEqual({ status: 200, cache: 'HIT', cid: stored.cid });
    const keys = await keysUnder(`${PREFIX}answers:r:`);
    expect([...keys.keys()]).toEqual([`${PREFIX}answers:r:page /page/1 `]);
    expect([...keys.values()][0]).toBeGreaterThan(110_000);
    expect([...keys.values()][0]).toBeLessThanOrEqual(120_000);
  });

  it('is purged once for every node', async () => {
    await get(a, '/page/2');
    await waitFor('the answer to be stored', async () => (await keysUnder(`${PREFIX}answers:r:page /page/2 `)).size === 1);
    expect(await b.kernel.runControl('cache.purge', { channel: 'page', path: '/page/2' })).toEqual({ channel: 'page', path: '/page/2', purged: 1 });
    expect((await get(a, '/page/2')).cache).toBe('MISS');
    expect((await get(b, '/page/2')).cache).toBe('HIT');
  });

  it('serves from the service while Redis is down, and caches again once it is back', async () => {
    await get(a, '/page/3');
    // Stored (the store follows the answer): b finds it.
    await waitFor('the answer to be stored', async () => (await get(b, '/page/3')).cache === 'HIT');
    proxy.down();
    await waitFor('the connection to drop', () => !answersOf(a).ready);
    const during = await Promise.all([get(a, '/page/3'), get(a, '/page/3')]);
    expect(during.map((d) => [d.status, d.cache])).toEqual([
      [200, 'MISS'],
      [200, 'MISS'],
    ]);
    proxy.up();
    await waitFor('the connection to come back', () => answersOf(a).ready);
    expect((await get(a, '/page/3')).cache).toBe('HIT');
  });
});
