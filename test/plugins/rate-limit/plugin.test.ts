import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../kernel/platform/clock.ts';
import type { HookName } from '../../../kernel/hooks.ts';
import type { KernelApi } from '../../../kernel/plugin.ts';
import rateLimit from '../../../plugins/rate-limit/plugin.ts';
import { optionsSchema } from '../../../plugins/rate-limit/schema.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

const T0 = Date.UTC(2026, 0, 1, 12);
const ECHO = { 'echo.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n` };
const PARTNER = `Basic ${Buffer.from('partner:partner-pass-1').toString('base64')}`;

const CONFIG = `
security:
  - name: partner
    type: basic_auth
    username: partner
    password: partner-pass-1
    rate_limiting:
      - time_range: [{ is_all_day: true, limit: 3, limit_unit: minute }]
channel_rest:
  - { name: open, url_path: /open, service: echo, security: none,
      rate_limiting: [{ time_range: [{ is_all_day: true, rate: 1, burst: 2 }] }] }
  - { name: plain, url_path: /plain, service: echo, security: none }
  - { name: a, url_path: /a, service: echo, security: partner }
  - { name: b, url_path: /b, service: echo, security: partner,
      rate_limiting: [{ time_range: [{ is_all_day: true, limit: 1, limit_unit: minute }] }] }
  - { name: cap, url_path: /cap, service: echo, security: none,
      rate_limiting: [{ time_range: [{ is_all_day: true, limit: 5, limit_unit: hour }] }] }
  - { name: fenced, url_path: /fenced, service: echo, security: partner,
      rate_limiting: [{ time_range: [{ is_all_day: true }, { time_from: '22:00', time_to: '06:00', disallowed: true }] }] }
  - { name: fence-off, url_path: /fence-off, service: echo, security: none,
      rate_limiting: [{ time_range: [{ is_all_day: true, rate: 5 }, { time_from: '22:00', time_to: '06:00', disallowed: true, disabled: true }] }] }
`;

let k: TestKernel;
const clock = new ManualClock(T0);

beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: ECHO, clock });
});
afterAll(() => k?.close());

const get = (url: string, headers: Record<string, string> = {}) => k.app.inject({ method: 'GET', url, headers });
const statuses = async (url: string, count: number, headers?: Record<string, string>) => {
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push((await get(url, headers)).statusCode);
  return out;
};

describe('rate limiting on a channel', () => {
  it('counts down X-RateLimit-Remaining, then answers 429 with the error body, CID and an HTTP-date Retry-After', async () => {
    const first = await get('/open');
    expect(first.statusCode).toBe(200);
    expect(first.headers['x-ratelimit-limit']).toBe('2');
    expect(first.headers['x-ratelimit-remaining']).toBe('1');
    expect((await get('/open')).headers['x-ratelimit-remaining']).toBe('0');

    const denied = await get('/open');
    expect(denied.statusCode).toBe(429);
    const cid = denied.headers['x-svc-cid'];
    expect(cid).toMatch(/^[0-9a-f]+$/);
    expect(denied.json()).toEqual({ result: 'Error', cid, details: 'Too many requests' });
    const retryAfter = String(denied.headers['retry-after']);
    expect(retryAfter).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    expect(Date.parse(retryAfter)).toBe(T0 + 1000);
    expect(denied.headers['x-ratelimit-remaining']).toBe('0');

    clock.advance(1000);
    expect((await get('/open')).statusCode).toBe(200);
  });

  it('leaves channels without rules alone', async () => {
    const res = await get('/plain');
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
  });
});

describe('security definition and channel levels', () => {
  it('one budget per credential across channels, checked before the channel rules', async () => {
    const auth = { authorization: PARTNER };
    // b: definition 1/3, channel 1/1; then the channel denies (the definition counted 2/3).
    expect(await statuses('/b', 2, auth)).toEqual([200, 429]);
    // a has no rules of its own but shares the definition's budget: 3/3, then denied.
    expect(await statuses('/a', 2, auth)).toEqual([200, 429]);

    // With the channel counter cleared, the definition still denies first...
    await k.kernel.runControl('limits.clear', { kind: 'channel', name: 'b' });
    expect(await statuses('/b', 1, auth)).toEqual([429]);
    // ...so that denial took nothing from the channel: once the definition is cleared, b admits one.
    await k.kernel.runControl('limits.clear', { kind: 'security', name: 'partner' });
    expect(await statuses('/b', 2, auth)).toEqual([200, 429]);
  });

  it('an unauthenticated request is refused before it is counted', async () => {
    clock.advance(60_000);
    expect((await get('/a')).statusCode).toBe(401);
    expect(await statuses('/a', 4, { authorization: PARTNER })).toEqual([200, 200, 200, 429]);
  });
});

describe('reload and clear', () => {
  it('a raised limit after a reload leaves the difference', async () => {
    expect(await statuses('/cap', 4)).toEqual([200, 200, 200, 200]);
    expect(await k.writeConfig(CONFIG.replace('limit: 5, limit_unit: hour', 'limit: 10, limit_unit: hour'))).toBe(true);
    expect(await statuses('/cap', 7)).toEqual([200, 200, 200, 200, 200, 200, 429]);
  });

  it('clears one rule by position and refuses a rule that does not exist', async () => {
    expect(await k.kernel.runControl('limits.clear', { kind: 'channel', name: 'cap', rule: 1 })).toEqual({ cleared: 1 });
    expect((await get('/cap')).statusCode).toBe(200);
    await expect(k.kernel.runControl('limits.clear', { kind: 'channel', name: 'cap', rule: 2 })).rejects.toThrow(/no rule 2/);
  });
});

describe('hook factories', () => {
  it('add the firewall (onRequest) only where a channel rule has an enabled disallowed range, counting (limit) where any rule may apply', async () => {
    // A state of its own, built from the running kernel's config (its control op is not re-registered).
    const api: KernelApi = { ...k.kernel.api, addControl: () => undefined };
    const state = await rateLimit.setup!(api, optionsSchema.parse({ max_counters: 1000 }));
    const config = k.kernel.configStore.current();
    await rateLimit.onConfig!(state, config);
    const hooked = (phase: HookName) =>
      config.channel_rest.filter((channel) => rateLimit.hooks[phase]!({ channel, config, state, kernel: api }) !== undefined).map((c) => c.name);
    expect(hooked('onRequest')).toEqual(['fenced']);
    expect(hooked('limit')).toEqual(['open', 'a', 'b', 'cap', 'fenced', 'fence-off']);
  });

  it('the firewall leaves a secured channel to authentication outside its disallowed hours', async () => {
    clock.set(Date.UTC(2026, 0, 1, 21, 59));
    expect((await get('/fenced')).statusCode).toBe(401);
    expect((await get('/fenced', { authorization: PARTNER })).statusCode).toBe(200);
  });
});

describe('config checks', () => {
  it('accepts the README example', async () => {
    const readme = readFileSync(new URL('../../../plugins/rate-limit/README.md', import.meta.url), 'utf8');
    const yaml = /```yaml\n([\s\S]*?)```/.exec(readme)![1]!;
    const started = await startKernel({ config: yaml, services: ECHO });
    try {
      expect(started.kernel.configStore.current().channel_rest.map((c) => (c.rate_limiting as unknown[]).length)).toEqual([2, 2, 2]);
    } finally {
      await started.close();
    }
  });

  it('refuses a rule without an all-day range, naming the channel and the rule', async () => {
    const bad = `
channel_rest:
  - { name: orders, url_path: /orders, service: echo, security: none,
      rate_limiting: [{ time_range: [{ is_all_day: true }] }, { time_range: [{ time_from: '09:00', time_to: '17:00', rate: 1 }] }] }
`;
    await expect(startKernel({ config: bad, services: ECHO })).rejects.toThrow(/channel 'orders', rate_limiting rule 2: needs exactly one all-day/);
  });
});
