import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { ALICE, BOB, CAROL, PUBSUB_CONFIG, WRONG, json, startPubSub, type PubSubKernel } from './helpers.ts';

let k: PubSubKernel;
const clock = new ManualClock(Date.UTC(2026, 2, 1, 12, 0, 0));

// Bob's subscriptions come from config (variant B: credentials and subscriptions assigned by administrators).
const CONFIG = `${PUBSUB_CONFIG}
pubsub_subscription:
  - { endpoint: ep.bob, topics: [/orders/new, /orders/paid] }
`;

beforeAll(async () => {
  k = await startPubSub({ config: CONFIG, clock });
});
afterAll(async () => {
  await k?.close();
});

type Body = Record<string, unknown>;
type Item = { data: unknown; meta: Body };

async function get(auth = BOB, body?: unknown): Promise<Body> {
  const res = await k.call('POST', '/pubsub/messages/get', auth, body);
  expect(res.statusCode).toBe(200);
  const out = json(res) as Body;
  expect(out.cid).toBe(res.headers['x-svc-cid']);
  return out;
}

async function drain(auth = BOB): Promise<Item[]> {
  return (await get(auth, { max_messages: 1000 })).messages as Item[];
}

async function publish(topic: string, body: unknown, auth = ALICE): Promise<Body> {
  const res = await k.call('POST', `/pubsub/topic${topic}`, auth, body);
  expect(res.statusCode).toBe(200);
  return json(res) as Body;
}

function expectError(res: { statusCode: number; body: string; headers: Record<string, unknown> }, status: number, details: string, statusText: string): void {
  expect(res.statusCode).toBe(status);
  expect(JSON.parse(res.body)).toEqual({ is_ok: false, cid: res.headers['x-svc-cid'], details, status: statusText });
}

beforeEach(async () => {
  await drain();
});

describe('variant B publish', () => {
  it('answers {is_ok, cid, msg_id, status}', async () => {
    const res = await k.call('POST', '/pubsub/topic/orders/new', ALICE, { data: 'hello' });
    expect(res.statusCode).toBe(200);
    const body = json(res) as Body;
    expect(body).toEqual({ is_ok: true, cid: res.headers['x-svc-cid'], msg_id: expect.stringMatching(/^svcpsm/), status: '200 OK' });
    const [m] = await drain();
    expect(m!.meta.msg_id).toBe(body.msg_id);
  });

  it('an empty payload: 400 Invalid request data', async () => {
    for (const body of [undefined, {}, { data: '' }, { data: null }, 'nonsense', [1]]) {
      expectError(await k.call('POST', '/pubsub/topic/orders/new', ALICE, body), 400, 'Invalid request data', '400 Bad Request');
    }
    expect(await drain()).toEqual([]);
  });

  it('a body nested deeper than 100 levels: 400 Invalid request data', async () => {
    const nested = '['.repeat(5000) + ']'.repeat(5000);
    expectError(await k.call('POST', '/pubsub/topic/orders/new', ALICE, `{"data": ${nested}}`), 400, 'Invalid request data', '400 Bad Request');
    expectError(await k.call('POST', '/pubsub/messages/get', BOB, `{"max_messages": 1, "x": ${nested}}`), 400, 'Invalid request data', '400 Bad Request');
    expect(await drain()).toEqual([]);
  });

  it('poisoning keys are refused as on a json channel, however they are spelled', async () => {
    const body = String.raw`{"data": {"a": 1, "\u005F\u005Fproto__": {"admin": true}, "b": {"\u0063onstructor": {"\u0070rototype": {}}}}}`;
    expectError(await k.call('POST', '/pubsub/topic/orders/new', ALICE, body), 400, 'Invalid request data', '400 Bad Request');
    expect(await drain()).toEqual([]);
  });

  it('data may be a string or a JSON object', async () => {
    await publish('/orders/new', { data: 'text' });
    await publish('/orders/new', { data: { a: [1, 2] } });
    expect((await drain()).map((m) => m.data)).toEqual(['text', { a: [1, 2] }]);
  });

  it('priority: 0 to 9, default 5; out of range is 400', async () => {
    for (const priority of [0, 9]) await publish('/orders/new', { data: String(priority), priority });
    await publish('/orders/new', { data: 'default' });
    expect((await drain()).map((m) => m.meta.priority)).toEqual([9, 5, 0]);
    for (const priority of [-1, 10, 1.5]) {
      expectError(await k.call('POST', '/pubsub/topic/orders/new', ALICE, { data: 'x', priority }), 400, 'Invalid request data', '400 Bad Request');
    }
  });

  it('expiration: seconds, default 31536000', async () => {
    await publish('/orders/new', { data: 'default' });
    await publish('/orders/new', { data: 'short', expiration: 30 });
    const [d, s] = await drain();
    expect(d!.meta.expiration).toBe(31_536_000);
    expect(d!.meta.expiration_time_iso).toBe(new Date(clock.now() + 31_536_000_000).toISOString());
    expect(s!.meta.expiration).toBe(30);
    expect(s!.meta.expiration_time_iso).toBe(new Date(clock.now() + 30_000).toISOString());
    expectError(await k.call('POST', '/pubsub/topic/orders/new', ALICE, { data: 'x', expiration: 0 }), 400, 'Invalid request data', '400 Bad Request');
  });

  it('expired messages are never delivered', async () => {
    await publish('/orders/new', { data: 'short', expiration: 30 });
    clock.advance(30_000);
    expect(await drain()).toEqual([]);
  });

  it('correl_id defaults to the CID of the publish request', async () => {
    const res = await k.call('POST', '/pubsub/topic/orders/new', ALICE, { data: 'x' });
    await publish('/orders/new', { data: 'y', correl_id: 'mine' });
    const [x, y] = await drain();
    expect(x!.meta.correl_id).toBe(res.headers['x-svc-cid']);
    expect(y!.meta.correl_id).toBe('mine');
  });

  it('in_reply_to and ext_client_id appear in meta only when given', async () => {
    await publish('/orders/new', { data: 'x', in_reply_to: 'svcpsm1', ext_client_id: 'erp' });
    await publish('/orders/new', { data: 'y' });
    const [x, y] = await drain();
    expect(x!.meta).toMatchObject({ in_reply_to: 'svcpsm1', ext_client_id: 'erp' });
    expect(y!.meta).not.toHaveProperty('in_reply_to');
    expect(y!.meta).not.toHaveProperty('ext_client_id');
  });

  it('pub_time: ISO 8601 with a time zone, the current time when omitted', async () => {
    clock.set(Date.UTC(2026, 2, 1, 12, 0, 0));
    const t0 = clock.now();
    await publish('/orders/new', { data: 'claimed', pub_time: '2026-03-01T13:30:00.250+02:00' });
    await publish('/orders/new', { data: 'now' });
    clock.advance(2_250);
    const [claimed, now] = await drain();
    expect(claimed!.meta.pub_time_iso).toBe('2026-03-01T11:30:00.250Z');
    expect(claimed!.meta.recv_time_iso).toBe(new Date(t0).toISOString());
    expect(claimed!.meta.time_since_pub).toBe('0:30:02.000000');
    expect(claimed!.meta.time_since_recv).toBe('0:00:02.250000');
    expect(now!.meta.pub_time_iso).toBe(new Date(t0).toISOString());
    for (const pub_time of ['2026-03-01T13:30:00', 'yesterday', 5]) {
      expectError(await k.call('POST', '/pubsub/topic/orders/new', ALICE, { data: 'x', pub_time }), 400, 'Invalid request data', '400 Bad Request');
    }
  });

  it('durations past a day keep counting hours', async () => {
    await publish('/orders/new', { data: 'old', pub_time: new Date(clock.now() - 90_061_500).toISOString() });
    expect((await drain())[0]!.meta.time_since_pub).toBe('25:01:01.500000');
  });

  it('every publish is durable (Guaranteed Delivery)', async () => {
    const { msg_id } = await publish('/orders/new', { data: 'gd' });
    const row = await k.kernel.store.one('SELECT topic FROM pubsub_message WHERE msg_id = ?', [msg_id]);
    expect(row).toEqual({ topic: '/orders/new' });
    await drain();
  });

  it('publication permission (403), unknown topic (404), credentials (401)', async () => {
    expectError(await k.call('POST', '/pubsub/topic/orders/paid', BOB, { data: 'x' }), 403, 'Forbidden', '403 Forbidden');
    expectError(await k.call('POST', '/pubsub/topic/orders/none', ALICE, { data: 'x' }), 404, 'Topic not found', '404 Not Found');
    const res = await k.call('POST', '/pubsub/topic/orders/new', WRONG, { data: 'x' });
    expectError(res, 401, 'Unauthorized', '401 Unauthorized');
    expect(res.headers['www-authenticate']).toMatch(/^Basic /);
    expectError(await k.call('POST', '/pubsub/topic/orders/new', CAROL, { data: 'x' }), 401, 'Unauthorized', '401 Unauthorized');
  });

  it('wrong methods: 405 in the variant B shape', async () => {
    const res = await k.call('GET', '/pubsub/topic/orders/new', ALICE);
    expectError(res, 405, 'Method not allowed', '405 Method Not Allowed');
    expect(res.headers.allow).toBe('POST');
  });
});

describe('variant B get messages', () => {
  it('one queue per user across all subscribed topics, highest priority first, oldest first within one', async () => {
    await publish('/orders/new', { data: 'n5', priority: 5 });
    await publish('/orders/paid', { data: 'p9', priority: 9 });
    await publish('/orders/new', { data: 'n0', priority: 0 });
    await publish('/orders/paid', { data: 'p5', priority: 5 });
    const body = await get(BOB, {});
    expect((body.messages as Item[]).map((m) => m.data)).toEqual(['p9', 'n5', 'p5', 'n0']);
    expect(body.message_count).toBe(4);
    expect(body.is_ok).toBe(true);
    expect(body.status).toBe('200 OK');
    expect(body).not.toHaveProperty('data');
    expect(body).not.toHaveProperty('meta');
  });

  it('each item has data and meta with every field of the spec table', async () => {
    await publish('/orders/new', { data: 'abc', priority: 7, expiration: 60, ext_client_id: 'x', in_reply_to: 'm0', correl_id: 'c' });
    clock.advance(1_000);
    const [m] = await drain();
    const keys = Object.keys(m!.meta).sort();
    expect(keys).toEqual(
      [
        'topic_name', 'size', 'priority', 'expiration', 'msg_id', 'correl_id', 'pub_time_iso', 'recv_time_iso',
        'expiration_time_iso', 'time_since_pub', 'time_since_recv', 'ext_client_id', 'in_reply_to', 'sub_key',
      ].sort(),
    );
    expect(m!.meta).toMatchObject({ topic_name: '/orders/new', size: 3, priority: 7, expiration: 60, correl_id: 'c', time_since_pub: '0:00:01.000000' });
    expect(m!.meta.sub_key).toBe(k.engine.subscriptionKey('ep.bob', '/orders/new'));
    for (const f of ['pub_time_iso', 'recv_time_iso', 'expiration_time_iso']) expect(m!.meta[f]).toMatch(/Z$|[+-]\d\d:\d\d$/);
  });

  it('a single message also comes as top-level data and meta', async () => {
    await publish('/orders/new', { data: 'only' });
    const body = await get(BOB);
    expect(body.message_count).toBe(1);
    expect(body.data).toBe('only');
    expect(body.meta).toEqual((body.messages as Item[])[0]!.meta);
  });

  it('an empty queue: is_ok true, no messages, message_count 0, 200 OK', async () => {
    const body = await get(BOB);
    expect(body).toEqual({ is_ok: true, cid: body.cid, messages: [], message_count: 0, status: '200 OK' });
  });

  it('no subscription: 401 No subscription found for user', async () => {
    await k.call('DELETE', '/pubsub/subscribe/topic/orders/new', ALICE);
    await k.call('DELETE', '/pubsub/subscribe/topic/orders/paid', ALICE);
    const res = await k.call('POST', '/pubsub/messages/get', ALICE);
    expectError(res, 401, 'No subscription found for user', '401 Unauthorized');
  });

  it('max_messages: default 50, maximum 1000', async () => {
    for (let i = 0; i < 55; i++) await publish('/orders/new', { data: i });
    const first = await get(BOB);
    expect(first.message_count).toBe(50);
    expect((first.messages as Item[]).map((m) => m.data)).toEqual([...Array(50).keys()]);
    expect((await get(BOB, { max_messages: 3 })).message_count).toBe(3);
    expect((await get(BOB, { max_messages: 1000 })).message_count).toBe(2);
    for (const max_messages of [0, 1001, 'ten']) {
      expectError(await k.call('POST', '/pubsub/messages/get', BOB, { max_messages }), 400, 'Invalid request data', '400 Bad Request');
    }
  });

  it('max_len: total data bytes, default and maximum 20000000', async () => {
    await publish('/orders/new', { data: 'aaaa' });
    await publish('/orders/new', { data: 'bbbb' });
    await publish('/orders/new', { data: 'cc' });
    const limited = await get(BOB, { max_len: 6 });
    expect((limited.messages as Item[]).map((m) => m.data)).toEqual(['aaaa', 'cc']);
    expect((await get(BOB, { max_len: 20_000_000 })).message_count).toBe(1);
    for (const max_len of [0, 20_000_001]) {
      expectError(await k.call('POST', '/pubsub/messages/get', BOB, { max_len }), 400, 'Invalid request data', '400 Bad Request');
    }
  });

  it('wrong credentials: 401', async () => {
    expectError(await k.call('POST', '/pubsub/messages/get', WRONG), 401, 'Unauthorized', '401 Unauthorized');
    expectError(await k.call('POST', '/pubsub/messages/get', undefined), 401, 'Unauthorized', '401 Unauthorized');
  });

  it('a body that is not a JSON object: 400', async () => {
    expectError(await k.call('POST', '/pubsub/messages/get', BOB, '[1]'), 400, 'Invalid request data', '400 Bad Request');
    expectError(await k.call('POST', '/pubsub/messages/get', BOB, '{'), 400, 'Invalid request data', '400 Bad Request');
  });
});

describe('variant B subscriptions (svc extension)', () => {
  it('subscribing several times is safe and has no effect', async () => {
    const first = await k.call('POST', '/pubsub/subscribe/topic/orders/eu/new', ALICE);
    const a = json(first) as Body;
    expect(a).toEqual({ is_ok: true, cid: first.headers['x-svc-cid'], sub_key: expect.stringMatching(/^svcpsk\./), queue_depth: 0, status: '200 OK' });
    const b = json(await k.call('POST', '/pubsub/subscribe/topic/orders/eu/new', ALICE)) as Body;
    expect(b.sub_key).toBe(a.sub_key);
    expect(b).not.toHaveProperty('queue_depth');
    expect(k.engine.subscriptionKeys('ep.alice')).toHaveLength(1);
    await publish('/orders/eu/new', { data: 'once' });
    expect((await drain(ALICE)).map((m) => m.data)).toEqual(['once']);
  });

  it('a config subscription subscribed again through the API stays one subscription', async () => {
    const before = k.engine.subscriptionKey('ep.bob', '/orders/new');
    const res = json(await k.call('POST', '/pubsub/subscribe/topic/orders/new', BOB)) as Body;
    expect(res.sub_key).toBe(before);
    await publish('/orders/new', { data: 'one copy' });
    expect((await drain()).map((m) => m.data)).toEqual(['one copy']);
  });

  it('unsubscribe answers {is_ok, cid, status} with or without a subscription', async () => {
    await k.call('POST', '/pubsub/subscribe/topic/orders/eu/new', ALICE);
    for (let i = 0; i < 2; i++) {
      const res = await k.call('DELETE', '/pubsub/subscribe/topic/orders/eu/new', ALICE);
      expect(json(res)).toEqual({ is_ok: true, cid: res.headers['x-svc-cid'], status: '200 OK' });
    }
    expect(k.engine.subscriptionKeys('ep.alice')).toEqual([]);
  });

  it('subscription permission (403) and unknown topics (404)', async () => {
    expectError(await k.call('POST', '/pubsub/subscribe/topic/orders/eu/new', BOB), 403, 'Forbidden', '403 Forbidden');
    expectError(await k.call('POST', '/pubsub/subscribe/topic/orders/zzz', ALICE), 404, 'Topic not found', '404 Not Found');
  });
});
