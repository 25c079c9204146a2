import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';

const channels = `
channel_rest:
  - { name: user, url_path: /user, service: user, method: POST, data_format: json, security: none }
`;
const config = (caches: string) => `cache:\n${caches}\n${channels}`;

const PROBE = `import { cache, service } from 'svc/sdk';
export default service({
  async POST(ctx) {
    const { name, op, key, value } = ctx.payload;
    try {
      return { value: await (op === 'set' ? cache(name).set(key, value) : cache(name).get(key)) };
    } catch (e) {
      return { error: e.kind };
    }
  },
});
`;

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: config('  - { name: a, services: [user] }\n  - { name: b, services: [user] }'), services: { 'user.ts': PROBE } });
});
afterAll(() => k?.close());

async function call(payload: Record<string, unknown>): Promise<{ value?: unknown; error?: string }> {
  const res = await k.app.inject({ method: 'POST', url: '/user', payload });
  return res.json();
}

describe('named caches across config reloads', () => {
  it('keeps the entries of a cache whose services change, rebuilds one whose settings change, drops one removed', async () => {
    await call({ name: 'a', op: 'set', key: 'k', value: 1 });
    await call({ name: 'b', op: 'set', key: 'k', value: 2 });
    expect(await k.writeConfig(config('  - { name: a, services: [user, other] }\n  - { name: b, ttl: 5m, services: [user] }'))).toBe(true);
    expect(await call({ name: 'a', op: 'get', key: 'k' })).toEqual({ value: 1 });
    expect(await call({ name: 'b', op: 'get', key: 'k' })).toEqual({});
    expect(await k.writeConfig(config('  - { name: b, ttl: 5m, services: [user] }'))).toBe(true);
    expect(await call({ name: 'a', op: 'get', key: 'k' })).toEqual({ error: 'NotFound' });
    expect(await k.writeConfig(config('  - { name: b, ttl: 5m, services: [] }'))).toBe(true);
    expect(await call({ name: 'b', op: 'get', key: 'k' })).toEqual({ error: 'Forbidden' });
  });

  it('lists the caches with what they hold and their hits and misses (cache.list), and clears one (cache.clear)', async () => {
    expect(await k.writeConfig(config('  - { name: c, max_entries: 50, services: [user] }'))).toBe(true);
    await call({ name: 'c', op: 'set', key: 'k', value: 'abc' });
    await call({ name: 'c', op: 'get', key: 'k' });
    await call({ name: 'c', op: 'get', key: 'nope' });
    expect(await k.kernel.runControl('cache.list', {})).toEqual([
      { name: 'c', backend: 'memory', ttl_ms: 3_600_000, max_value_bytes: 1024 * 1024, services: ['user'], hits: 1, misses: 1, entries: 1, bytes: 8, max_entries: 50, max_bytes: 64 * 1024 * 1024 },
    ]);
    expect(await k.kernel.runControl('cache.clear', { name: 'c' })).toEqual({ cache: 'c', cleared: 1 });
    expect(await call({ name: 'c', op: 'get', key: 'k' })).toEqual({});
    await expect(k.kernel.runControl('cache.clear', { name: 'nope' })).rejects.toThrow("No cache named 'nope'");
  });
});
