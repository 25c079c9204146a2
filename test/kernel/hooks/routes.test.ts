import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { definePlugin, errorBody, type Exchange } from '../../../sdk/plugin/index.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/**
 * A plugin route (the way pub/sub, admin and health serve their APIs) runs through the channel
 * hook chain: other plugins authenticate it, limit it and parse its body from the settings it
 * declares; its handler takes the service's place; its onError shapes its errors, 405 included.
 */
const api = definePlugin({
  name: 'status-api',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.0.0',
  configSchema: z.object({}),
  setup(kernel) {
    const shape = (ex: Exchange, err: unknown) => {
      const status = (err as { status?: number }).status ?? 500;
      ex.reply(status, { ok: false, status, cid: ex.cid });
    };
    kernel.addRoute({
      name: 'status',
      method: 'POST',
      url: '/_status/echo',
      channel: { security: 'ops', data_format: 'json', rate_limiting: [{ cidr_list: [], per_client: false, time_range: [{ is_all_day: true, disabled: false, disallowed: false, limit: 2, limit_unit: 'day' }] }] },
      handler: (ex) => ex.reply(200, { you: ex.auth?.username, sent: ex.payload }),
      onError: shape,
    });
    kernel.addRoute({ name: 'open', method: 'GET', url: '/_status/open', handler: (ex) => ex.reply(200, { format: ex.channel.data_format, security: ex.channel.security }) });
    return undefined;
  },
  hooks: {},
});

const CONFIG = `
security:
  - { name: ops, type: basic_auth, username: ops, password: ops-password-1 }
channel_rest:
  # Named like the route, with rules of its own: they must not leak onto the route.
  - { name: status, url_path: /status, service: hello, security: none,
      rate_limiting: [{ time_range: [{ is_all_day: true, limit: 100, limit_unit: day }] }] }
`;
const OPS = `Basic ${Buffer.from('ops:ops-password-1').toString('base64')}`;

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, extraPlugins: [api] });
});
afterAll(async () => {
  await k?.close();
});

const post = (auth: string | undefined, payload: string) =>
  k.app.inject({ method: 'POST', url: '/_status/echo', headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) }, payload });

describe('plugin routes in the hook chain', () => {
  it('are authenticated by the security plugin their settings name, and shaped by their onError', async () => {
    const res = await post(undefined, '{}');
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Basic/);
    expect(res.json()).toEqual({ ok: false, status: 401, cid: res.headers['x-svc-cid'] });
  });

  it('get their body from the data format plugin, and their own rate limits (not a same-named channel’s)', async () => {
    const first = await post(OPS, '{"a":1}');
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual({ you: 'ops', sent: { a: 1 } });
    expect(first.headers['x-ratelimit-limit']).toBe('2');
    const bad = await post(OPS, '{nope');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ ok: false, status: 400, cid: bad.headers['x-svc-cid'] });
    const over = await post(OPS, '{}');
    expect(over.statusCode).toBe(429);
    expect(over.json()).toMatchObject({ ok: false, status: 429 });
  });

  it('answer a wrong method with the kernel’s 405 through their onError', async () => {
    const res = await k.app.inject({ method: 'DELETE', url: '/_status/echo' });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('POST');
    expect(res.json()).toEqual({ ok: false, status: 405, cid: res.headers['x-svc-cid'] });
  });

  it('without settings: no security, no data format, errors in the kernel body', async () => {
    const res = await k.app.inject({ method: 'GET', url: '/_status/open' });
    expect(res.json()).toEqual({ format: '', security: 'none' });
    const wrong = await k.app.inject({ method: 'PUT', url: '/_status/open' });
    expect(wrong.json()).toEqual(errorBody(wrong.headers['x-svc-cid'] as string, 'Method not allowed'));
  });

  it('route security targets are not config names', async () => {
    const { validate, readSource } = { ...(await import('../../../kernel/config/store.ts')) };
    const plugins = [(await import('../../../plugins/security/basic-auth/plugin.ts')).default];
    expect(() => validate(readSource('security:\n  - { name: "@status-api", type: basic_auth, username: u, password: long-password-1 }\n', {}), plugins, {})).toThrow(/must not start with '@'/);
  });
});
