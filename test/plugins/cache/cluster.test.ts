import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';
import { PG_URL, pgAnswers, pgSchemaUrl } from '../../helpers/store.ts';
import { waitFor } from '../../helpers/wait.ts';

/** Two nodes on one PostgreSQL database: what lives in each node's memory is cleared and purged on both. */

const pgRuns = process.env.CI === 'true' || (await pgAnswers());

const CONFIG = `
cache:
  - { name: lookups, services: [user] }
channel_rest:
  - { name: user, url_path: /user, service: user, security: none }
  - { name: page, url_path: '/page/{id}', service: page, security: none, response_cache: {} }
`;
const SERVICES = {
  'user.ts': `import { cache, service } from 'svc/sdk';\nexport default service({ async handle(ctx) { const c = cache('lookups'); if (ctx.query.set) await c.set('k', ctx.query.set); return { value: await c.get('k') }; } });\n`,
  'page.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ cid: ctx.cid }) });\n`,
};

describe.skipIf(!pgRuns)('caches on two nodes of one PostgreSQL', () => {
  let store: string;
  let a: TestKernel;
  let b: TestKernel;
  beforeAll(async () => {
    store = await pgSchemaUrl(`cache-cluster-${randomUUID()}`);
    a = await startKernel({ config: CONFIG, services: SERVICES, env: { SVC_STORE: store } });
    b = await startKernel({ config: CONFIG, services: SERVICES, env: { SVC_STORE: store } });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    if (store === undefined) return;
    const schema = /search_path=(\w+)/.exec(decodeURIComponent(store))![1]!;
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  });

  const json = async (k: TestKernel, url: string) => (await k.app.inject({ method: 'GET', url })).json() as { value?: string };
  const cacheOf = async (k: TestKernel, url: string) => (await k.app.inject({ method: 'GET', url })).headers['x-svc-cache'];

  it('keeps a memory cache per node, and `cache.clear` on one empties both', async () => {
    await json(a, '/user?set=on-a');
    await json(b, '/user?set=on-b');
    expect([(await json(a, '/user')).value, (await json(b, '/user')).value]).toEqual(['on-a', 'on-b']);
    expect(await a.kernel.runControl('cache.clear', { name: 'lookups' })).toEqual({ cache: 'lookups', cleared: 1 });
    await waitFor('the cache cleared on B', async () => (await json(b, '/user')).value === undefined, 3_000);
    expect((await json(a, '/user')).value).toBeUndefined();
  });

  it('`cache.purge` on one node drops the answers both keep in memory', async () => {
    await cacheOf(a, '/page/1');
    await cacheOf(b, '/page/1');
    expect([await cacheOf(a, '/page/1'), await cacheOf(b, '/page/1')]).toEqual(['HIT', 'HIT']);
    expect(await a.kernel.runControl('cache.purge', { channel: 'page' })).toEqual({ channel: 'page', purged: 1 });
    await waitFor('the answers purged on B', async () => (await cacheOf(b, '/page/1')) === 'MISS', 3_000);
    expect(await cacheOf(a, '/page/1')).toBe('MISS');
  });
});
