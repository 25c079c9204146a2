import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { ALICE, BOB, basic, json, startPubSub, type PubSubKernel } from './helpers.ts';

/**
 * Pub/sub routes run through the same hook chain as channels: rate_limiting on the caller's
 * basic_auth definition counts its pub/sub calls (one budget with its channels), a disallowed
 * range drops them, and each variant shapes those refusals in its own body.
 */
const CONFIG = `
security:
  - { name: sec.alice, type: basic_auth, username: alice, password: alice-password-1,
      rate_limiting: [{ time_range: [{ is_all_day: true, limit: 3, limit_unit: day }] }] }
  - { name: sec.bob, type: basic_auth, username: bob, password: bob-password-1 }
  - { name: sec.dave, type: basic_auth, username: dave, password: dave-password-1,
      rate_limiting: [{ cidr_list: [127.0.0.0/8], time_range: [{ is_all_day: true, disallowed: true }] }] }
channel_rest:
  - { name: alice-channel, url_path: /alice, service: echo, security: sec.alice }
pubsub_topic:
  - { name: /orders/new }
pubsub_endpoint:
  - { name: ep.alice, security: sec.alice, pub: ['/orders/**'], sub: ['/orders/**'] }
  - { name: ep.bob, security: sec.bob, pub: ['/orders/**'], sub: ['/orders/**'] }
  - { name: ep.dave, security: sec.dave, pub: ['/orders/**'], sub: ['/orders/**'] }
`;
const ECHO = { 'echo.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n` };
const DAVE = basic('dave', 'dave-password-1');

let k: PubSubKernel;
const clock = new ManualClock(Date.UTC(2026, 2, 1, 12, 0, 0));

beforeAll(async () => {
  k = await startPubSub({ config: CONFIG, clock, services: ECHO, listen: true });
});
afterAll(async () => {
  await k?.close();
});

describe('pub/sub routes in the hook chain', () => {
  it("count against the caller's definition limit, across both variants and its channels", async () => {
    const a = await k.call('POST', '/svc/pubsub/topic/orders/new', ALICE, { data: 1 });
    expect(a.statusCode).toBe(200);
    expect(a.headers['x-ratelimit-remaining']).toBe('2');
    expect((await k.call('POST', '/pubsub/topic/orders/new', ALICE, { data: 2 })).headers['x-ratelimit-remaining']).toBe('1');
    expect((await k.call('POST', '/alice', ALICE, {})).statusCode).toBe(200);

    const refusedA = await k.call('POST', '/svc/pubsub/topic/orders/new', ALICE, { data: 3 });
    expect(refusedA.statusCode).toBe(429);
    expect(refusedA.headers['retry-after']).toBeDefined();
    expect(json(refusedA)).toEqual({ result: 'Error', cid: refusedA.headers['x-svc-cid'], details: 'Too many requests' });

    const refusedB = await k.call('POST', '/pubsub/topic/orders/new', ALICE, { data: 3 });
    expect(refusedB.statusCode).toBe(429);
    expect(json(refusedB)).toEqual({ is_ok: false, cid: refusedB.headers['x-svc-cid'], details: 'Too many requests', status: '429 Too Many Requests' });
  });

  it('leave other definitions alone', async () => {
    const res = await k.call('POST', '/pubsub/topic/orders/new', BOB, { data: 'b' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-ratelimit-remaining']).toBeUndefined();
  });

  it("drop the connection of a definition's disallowed client", async () => {
    // Over a real socket: a drop is a reset connection, not a response.
    await expect(fetch(`${k.url}/pubsub/topic/orders/new`, { method: 'POST', headers: { authorization: DAVE }, body: '{"data":"d"}' })).rejects.toThrow();
    expect(k.logged('connection dropped: client disallowed by rate_limiting').at(-1)).toMatchObject({ security: 'sec.dave', channel: 'pubsub-b publish' });
  });

  it('authenticate before reading the body: a wrong password with a broken body is 401', async () => {
    const res = await k.call('POST', '/pubsub/topic/orders/new', basic('bob', 'nope'), '{not json');
    expect(res.statusCode).toBe(401);
    expect(json(res)).toEqual({ is_ok: false, cid: res.headers['x-svc-cid'], details: 'Unauthorized', status: '401 Unauthorized' });
  });

  it('body parsing comes from the json format, with each variant its own details', async () => {
    const b = await k.call('POST', '/pubsub/topic/orders/new', BOB, '{not json');
    expect(json(b)).toEqual({ is_ok: false, cid: b.headers['x-svc-cid'], details: 'Invalid request data', status: '400 Bad Request' });
    const a = await k.call('POST', '/svc/pubsub/topic/orders/new', BOB, '{"__proto__": {"x": 1}}');
    expect(a.statusCode).toBe(400);
    expect(json(a)).toEqual({ result: 'Error', cid: a.headers['x-svc-cid'], details: 'Invalid input' });
  });

  it('a wrong method is the kernel 405, shaped by the variant, before authentication', async () => {
    const res = await k.call('GET', '/pubsub/messages/get', undefined);
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('POST');
    expect(json(res)).toEqual({ is_ok: false, cid: res.headers['x-svc-cid'], details: 'Method not allowed', status: '405 Method Not Allowed' });
  });

  it('the service never sees pub/sub credentials in logs', () => {
    expect(JSON.stringify(k.logs)).not.toContain('alice-password-1');
  });
});
