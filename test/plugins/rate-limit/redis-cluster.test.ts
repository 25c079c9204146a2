import { rmSync } from 'node:fs';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../kernel/platform/clock.ts';
import { makeProject, runCli } from '../../helpers/cli.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';
import { closedRedisUrl, dropKeys, redisForTests, TEST_REDIS_URL, uniquePrefix } from '../../helpers/redis.ts';

/** The redis policy across nodes: two kernels on real sockets sharing one real Redis. */

const run = await redisForTests('test/plugins/rate-limit/redis-cluster.test.ts');
const T0 = Date.UTC(2026, 0, 1, 12);
const ECHO = { 'echo.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n` };
const PARTNER = `Basic ${Buffer.from('partner:partner-pass-1').toString('base64')}`;
const K = 57;

const FENCE = "{ cidr_list: [198.51.100.0/24], time_range: [{ is_all_day: true, disallowed: true }] }";

/** `saved`: the config after an edit that moves the cap rule up and doubles its limit (same counter). */
const config = (prefix: string, saved = false) => `
plugins:
  rate-limit:
    config: { redis: '${TEST_REDIS_URL}', redis_key_prefix: '${prefix}' }
security:
  - name: partner
    type: basic_auth
    username: partner
    password: partner-pass-1
    rate_limiting_policy: redis
    rate_limiting: [{ time_range: [{ is_all_day: true, limit: 4, limit_unit: hour }] }]
channel_rest:
  - { name: shared, url_path: /shared, service: echo, security: none, rate_limiting_policy: redis,
      rate_limiting: [{ time_range: [{ is_all_day: true, limit: ${K}, limit_unit: day }] }] }
  - { name: spike, url_path: /spike, service: echo, security: none, rate_limiting_policy: redis,
      rate_limiting: [{ time_range: [{ is_all_day: true, rate: 1, burst: ${K} }] }] }
  - { name: per-node, url_path: /per-node, service: echo, security: none,
      rate_limiting: [{ time_range: [{ is_all_day: true, limit: 3, limit_unit: day }] }] }
  - name: cap
    url_path: /cap
    service: echo
    security: none
    rate_limiting_policy: redis
    rate_limiting:
      ${saved ? '' : `- ${FENCE}`}
      - { time_range: [{ is_all_day: true, limit: ${saved ? 10 : 5}, limit_unit: hour }] }
      ${saved ? `- ${FENCE}` : ''}
  - { name: partners, url_path: /partners, service: echo, security: partner }
`;

describe.skipIf(!run)('redis policy on two nodes', () => {
  const prefix = uniquePrefix();
  const clock = new ManualClock(T0);
  let a: TestKernel;
  let b: TestKernel;

  beforeAll(async () => {
    [a, b] = await Promise.all([
      startKernel({ config: config(prefix), services: ECHO, clock, listen: true }),
      startKernel({ config: config(prefix), services: ECHO, clock, listen: true }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await dropKeys(prefix);
  });

  const get = async (k: TestKernel, path: string, headers: Record<string, string> = {}) => {
    const res = await request(`${k.url}${path}`, { headers });
    await res.body.text();
    return { status: res.statusCode, remaining: res.headers['x-ratelimit-remaining'] as string | undefined };
  };

  /** 100 clients at once, each sending `each` requests in turn, half of them to each node. */
  async function crowd(path: string, each: number) {
    const answers = await Promise.all(
      Array.from({ length: 100 }, async (_, client) => {
        const out = [];
        for (let i = 0; i < each; i++) out.push(await get((client + i) % 2 === 0 ? a : b, path));
        return out;
      }),
    );
    return answers.flat();
  }

  it(`a cluster-wide cap of ${K} admits exactly ${K} of 300 requests from 100 concurrent clients over both nodes`, async () => {
    const answers = await crowd('/shared', 3);
    const admitted = answers.filter((r) => r.status === 200);
    expect(admitted).toHaveLength(K);
    expect(answers.filter((r) => r.status === 429)).toHaveLength(300 - K);
    // Every admission saw its own count: the remaining figures are K-1 down to 0, each once.
    expect(admitted.map((r) => Number(r.remaining)).sort((x, y) => x - y)).toEqual(Array.from({ length: K }, (_, i) => i));
  });

  it(`a cluster-wide burst of ${K} admits exactly ${K} at one instant`, async () => {
    const answers = await crowd('/spike', 2);
    expect(answers.filter((r) => r.status === 200)).toHaveLength(K);
    clock.advance(1000);
    expect((await get(b, '/spike')).status).toBe(200);
    expect((await get(a, '/spike')).status).toBe(429);
  });

  it('keeps the local policy per node', async () => {
    const statuses = async (k: TestKernel) => [await get(k, '/per-node'), await get(k, '/per-node'), await get(k, '/per-node'), await get(k, '/per-node')].map((r) => r.status);
    expect(await statuses(a)).toEqual([200, 200, 200, 429]);
    expect(await statuses(b)).toEqual([200, 200, 200, 429]);
  });

  it("counts a security definition's budget across nodes and channels", async () => {
    const auth = { authorization: PARTNER };
    const statuses = [];
    for (const k of [a, b, a, b, a]) statuses.push((await get(k, '/partners', auth)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
  });

  it('keeps counters through a config save, as the local policy does (limit 5 -> 10 after 3 used: 7 left)', async () => {
    const statuses = async (k: TestKernel, n: number) => {
      const out = [];
      for (let i = 0; i < n; i++) out.push((await get(k, '/cap')).status);
      return out;
    };
    expect(await statuses(a, 3)).toEqual([200, 200, 200]);
    const saved = config(prefix, true);
    expect(await a.writeConfig(saved)).toBe(true);
    expect(await b.writeConfig(saved)).toBe(true);
    expect([...(await statuses(b, 4)), ...(await statuses(a, 4))]).toEqual([200, 200, 200, 200, 200, 200, 200, 429]);
  });

  it('limits clear on one node clears the shared counters for both', async () => {
    expect((await get(b, '/shared')).status).toBe(429);
    expect(await a.kernel.runControl('limits.clear', { kind: 'channel', name: 'shared' })).toEqual({ cleared: 1 });
    expect((await get(b, '/shared')).status).toBe(200);
    expect((await get(a, '/shared')).status).toBe(200);
  });

  it('counters outlive a node: a restarted node goes on counting', async () => {
    for (let i = 0; i < K - 2; i++) await get(a, '/shared');
    expect((await get(a, '/shared')).status).toBe(429);
    await a.close();
    a = await startKernel({ config: config(prefix), services: ECHO, clock, listen: true });
    expect((await get(a, '/shared')).status).toBe(429);
  });

  it('svc limits clear without a running server clears the Redis counters directly', async () => {
    const dir = makeProject(config(prefix).replace('plugins:', 'server: { data_dir: ./data, services_dir: ./services }\nplugins:'), ECHO);
    try {
      const rule = runCli(['limits', 'clear', '--channel', 'cap', '--rule', '2'], dir);
      expect(rule.stderr).toBe('');
      expect(rule.stdout).toMatch(/no running server: cleared 1 Redis counter\(s\) of channel 'cap' \(rule 2\)/);
      expect(rule.status).toBe(0);
      expect(runCli(['limits', 'clear', '--channel', 'shared'], dir).stdout).toMatch(/cleared 1 Redis counter/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect((await get(b, '/shared')).status).toBe(200);
  });
});

describe.skipIf(!run)('redis policy without its Redis', () => {
  const channels = `
channel_rest:
  - { name: shared, url_path: /shared, service: echo, security: none, rate_limiting_policy: redis,
      rate_limiting: [{ time_range: [{ is_all_day: true, limit: 0, limit_unit: day }] }] }
  - { name: local, url_path: /local, service: echo, security: none,
      rate_limiting: [{ time_range: [{ is_all_day: true, limit: 2, limit_unit: day }] }] }
`;
  /** A node whose Redis is not there; on_redis_error left to its default when not given. */
  const down = async (onError: 'deny' | undefined, logs?: Array<Record<string, unknown>>) =>
    startKernel({
      config: `plugins:\n  rate-limit:\n    config: { redis: '${await closedRedisUrl()}', ${onError ? `on_redis_error: ${onError}, ` : ''}redis_connect_timeout_ms: 300 }\n${channels}`,
      services: ECHO,
      clock: new ManualClock(T0),
      logs,
    });

  it('fails open by default: admitted without headers, counted in the metric, logged once, local sets unaffected', async () => {
    const logs: Array<Record<string, unknown>> = [];
    const k = await down(undefined, logs);
    try {
      for (let i = 0; i < 5; i++) {
        const res = await k.app.inject({ method: 'GET', url: '/shared' });
        expect(res.statusCode).toBe(200);
        expect(res.headers['x-ratelimit-limit']).toBeUndefined();
      }
      const local = await k.app.inject({ method: 'GET', url: '/local' });
      expect(local.headers['x-ratelimit-remaining']).toBe('1');
      expect(k.kernel.api.lookup('rate-limit.stats')!().redisErrors).toEqual([{ outcome: 'allow', count: 5 }]);
      const warnings = logs.filter((l) => String(l.msg).startsWith('rate-limit: Redis cannot decide'));
      expect(warnings).toHaveLength(1);
      expect(JSON.stringify(logs)).not.toContain('not-this-password');
    } finally {
      await k.close();
    }
  });

  it('fails closed with on_redis_error deny: 429 with Retry-After a second later', async () => {
    const k = await down('deny');
    try {
      const res = await k.app.inject({ method: 'GET', url: '/shared' });
      expect(res.statusCode).toBe(429);
      expect(res.json()).toMatchObject({ result: 'Error', details: 'Too many requests' });
      expect(Date.parse(String(res.headers['retry-after']))).toBe(T0 + 1000);
      expect(res.headers['x-ratelimit-remaining']).toBe('0');
      expect(k.kernel.api.lookup('rate-limit.stats')!().redisErrors).toEqual([{ outcome: 'deny', count: 1 }]);
    } finally {
      await k.close();
    }
  });
});

describe('redis policy config checks', () => {
  const channel = `
channel_rest:
  - { name: orders, url_path: /orders, service: echo, security: none, rate_limiting_policy: redis,
      rate_limiting: [{ time_range: [{ is_all_day: true, rate: 5 }] }] }
`;

  it('refuses a redis rule set when the plugin names no Redis', async () => {
    await expect(startKernel({ config: channel, services: ECHO })).rejects.toThrow(/channel 'orders': rate_limiting_policy redis needs plugins\.rate-limit\.config\.redis/);
  });

  it('refuses policy redis as the plugin default without a Redis', async () => {
    await expect(startKernel({ config: `plugins: { rate-limit: { config: { policy: redis } } }\n`, services: ECHO })).rejects.toThrow(/required when policy is redis/);
  });

  it('refuses a saved config that turns a rule set to redis on a server started without one (plugin options need a restart)', async () => {
    const k = await startKernel({ config: channel.replace('rate_limiting_policy: redis', 'rate_limiting_policy: local'), services: ECHO });
    try {
      const withRedis = `plugins: { rate-limit: { config: { redis: '${TEST_REDIS_URL}' } } }\n${channel}`;
      expect(await k.writeConfig(withRedis)).toBe(false);
      expect((await k.app.inject({ method: 'GET', url: '/orders' })).headers['x-ratelimit-limit']).toBe('5');
    } finally {
      await k.close();
    }
  });
});
