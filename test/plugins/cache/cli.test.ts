import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeProject, runCli, startCli, type CliServer } from '../../helpers/cli.ts';
import { waitFor } from '../../helpers/wait.ts';
import { dropKeys, keysUnder, redisForTests, TEST_REDIS_URL, uniquePrefix } from '../../helpers/redis.ts';

/** `svc cache list|clear|purge` by the real binary, against a server started by the real `svc start`, and with none. */

const redis = await redisForTests('test/plugins/cache/cli.test.ts');
const PREFIX = uniquePrefix();

const CONFIG = `
server:
  data_dir: ./data
  services_dir: ./services
cache:
  - { name: lookups, ttl: 10m, max_entries: 100, services: [user] }
${redis ? `  - { name: answers, backend: redis, redis_url: '${TEST_REDIS_URL}', key_prefix: '${PREFIX}' }` : ''}
channel_rest:
  - { name: user, url_path: /user, service: user, security: none }
  - { name: page, url_path: '/page/{id}', service: page, security: none, response_cache: {} }
${redis ? "  - { name: shared, url_path: '/shared/{id}', service: page, security: none, response_cache: { cache: answers } }" : ''}
  - { name: plain, url_path: /plain, service: page, security: none }
`;

const SERVICES = {
  'user.ts': `import { cache, service } from 'svc/sdk';\nexport default service({ async handle(ctx) { const c = cache('lookups'); if (ctx.query.set) await c.set(ctx.query.set, 1); return { found: (await c.get(String(ctx.query.get))) !== undefined }; } });\n`,
  'page.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ cid: ctx.cid }) });\n`,
};

let dir: string;
let server: CliServer | undefined;
const cli = (...args: string[]) => runCli([...args, '--config', 'config/svc.yaml'], dir);
const cacheOf = async (path: string) => (await fetch(server!.url + path)).headers.get('x-svc-cache');

beforeAll(() => {
  dir = makeProject(CONFIG, SERVICES);
});
afterAll(async () => {
  if (server?.proc.exitCode === null) await server.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  if (redis) await dropKeys(PREFIX);
});

describe('svc cache (real processes)', () => {
  it('lists, clears and purges through the running server', async () => {
    server = await startCli(dir);
    await fetch(`${server.url}/user?set=a&get=a`);
    await fetch(`${server.url}/user?get=b`);
    for (const path of ['/page/1', '/page/1?x=1', '/page/2']) await fetch(server.url + path);

    const list = cli('cache', 'list');
    expect(list.status).toBe(0);
    expect(list.stdout).toMatch(/lookups\s+memory, 1\/100 entries, \d+\/67108864 bytes; hits 1, misses 1; ttl 600000 ms; services: user/);
    expect(JSON.parse(cli('cache', 'list', '--json').stdout)[0]).toMatchObject({ name: 'lookups', entries: 1, hits: 1, misses: 1 });

    expect(cli('cache', 'purge', 'page', '--path', '/page/1')).toMatchObject({ status: 0, stdout: "purged 2 stored answer(s) of channel 'page' for /page/1\n" });
    expect([await cacheOf('/page/1'), await cacheOf('/page/2')]).toEqual(['MISS', 'HIT']);
    expect(cli('cache', 'purge', 'page')).toMatchObject({ status: 0, stdout: "purged 2 stored answer(s) of channel 'page'\n" });

    expect(cli('cache', 'clear', 'lookups')).toMatchObject({ status: 0, stdout: "cleared 1 entry of cache 'lookups'\n" });
    expect(await (await fetch(`${server.url}/user?get=a`)).json()).toEqual({ found: false });

    if (redis) {
      await fetch(`${server.url}/shared/1`);
      // The store follows the answer, in Redis a moment later.
      await waitFor('the answer in Redis', async () => (await cacheOf('/shared/1')) === 'HIT');
      expect(cli('cache', 'list').stdout).toMatch(/answers\s+redis redis:\/\/127\.0\.0\.1:6379\/?; hits 0, misses 0/);
    }
    expect(await server.stop()).toBe(0);
  }, 120_000);

  it('refuses what is not there, and says what it cannot do without a server', async () => {
    expect(cli('cache', 'clear', 'nope')).toMatchObject({ status: 2, stderr: expect.stringMatching(/no cache named 'nope'/) });
    expect(cli('cache', 'purge', 'plain')).toMatchObject({ status: 2, stderr: expect.stringMatching(/channel 'plain' has no response_cache/) });
    expect(cli('cache', 'purge', 'page', '--path', 'no-slash')).toMatchObject({ status: 2, stderr: expect.stringMatching(/--path needs a path starting with \//) });
    expect(cli('cache', 'list').stdout).toMatch(/^no running server: the config only\nlookups\s+memory; ttl 600000 ms; services: user/);
    expect(cli('cache', 'clear', 'lookups')).toMatchObject({ status: 1, stderr: expect.stringMatching(/no running server: cache 'lookups' lives in its memory only/) });
    expect(cli('cache', 'purge', 'page')).toMatchObject({ status: 1, stderr: expect.stringMatching(/keeps its answers in the server's memory/) });
  }, 60_000);

  it.skipIf(!redis)('purges and clears a Redis cache directly when no server runs', async () => {
    expect((await keysUnder(`${PREFIX}answers:r:`)).size).toBe(1);
    expect(cli('cache', 'purge', 'shared', '--path', '/shared/1')).toMatchObject({ status: 0, stdout: "no running server: purged 1 stored answer(s) of channel 'shared' in the Redis of cache 'answers'\n" });
    expect((await keysUnder(PREFIX)).size).toBe(0);
    expect(cli('cache', 'clear', 'answers')).toMatchObject({ status: 0, stdout: "no running server: cleared 0 entries of cache 'answers' in its Redis\n" });
  }, 60_000);
});
