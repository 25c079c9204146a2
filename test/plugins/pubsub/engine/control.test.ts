import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALICE, BOB, json, startPubSub, type PubSubKernel } from '../http/helpers.ts';

/**
 * The operators' pub/sub ops through the running kernel (k.kernel.runControl, as the control
 * socket and the admin API call them), checked against what the REST API (variant A) sees.
 */

let k: PubSubKernel;
beforeAll(async () => {
  k = await startPubSub();
});
afterAll(() => k?.close());

interface SubscriptionView {
  id: string;
  endpoint: string;
  topic: string;
  sub_key: string;
  source: string;
  queue_depth: number;
  creation_time_iso: string;
}
interface Browsed {
  subscription: SubscriptionView;
  messages: Array<Record<string, unknown> & { msg_id: string; data_preview: string; truncated: boolean; priority: number; delivery_count: number }>;
}

const op = <T>(name: string, args: object = {}) => k.kernel.runControl(name, args) as Promise<T>;
const subscriptions = (args: object = {}) => op<SubscriptionView[]>('pubsub.subscriptions', args);
const browse = (args: object) => op<Browsed>('pubsub.messages', args);

async function subscribeRest(auth: string, topic: string): Promise<string> {
  const res = await k.call('POST', `/svc/pubsub/subscribe/topic${topic}`, auth);
  expect(res.statusCode).toBe(200);
  return (json(res) as { sub_key: string }).sub_key;
}
async function publish(topic: string, body: Record<string, unknown>): Promise<string> {
  const res = await k.call('POST', `/svc/pubsub/topic${topic}`, ALICE, body);
  expect(res.statusCode).toBe(200);
  return (json(res) as { msg_id: string }).msg_id;
}
async function getRest(auth: string, topic: string): Promise<Array<{ msg_id: string; data: unknown }>> {
  const res = await k.call('PATCH', `/svc/pubsub/topic${topic}`, auth);
  expect(res.statusCode).toBe(200);
  return json(res) as Array<{ msg_id: string; data: unknown }>;
}

describe('topics and subscriptions', () => {
  it('lists topics with subscriptions, queued and retained counts; subscriptions with a masked key only', async () => {
    const aliceKey = await subscribeRest(ALICE, '/orders/new');
    const bobKey = await subscribeRest(BOB, '/orders/new');
    await publish('/orders/new', { data: 'one' });
    await publish('/orders/new', { data: 'two' });
    await publish('/orders/paid', { data: 'nobody listens yet' });

    const topics = await op<Array<Record<string, unknown>>>('pubsub.topics');
    expect(topics.find((t) => t.name === '/orders/new')).toEqual({ name: '/orders/new', max_depth: 10000, in_memory_only: false, subscriptions: 2, retained: 0, queued: 4 });
    expect(topics.find((t) => t.name === '/orders/paid')).toMatchObject({ subscriptions: 0, retained: 1, queued: 0 });
    expect(topics.find((t) => t.name === '/small')).toMatchObject({ max_depth: 2 });

    const onNew = await subscriptions({ topic: '/orders/new' });
    expect(onNew.map((s) => [s.endpoint, s.topic, s.queue_depth, s.source])).toEqual([
      ['ep.alice', '/orders/new', 2, 'api'],
      ['ep.bob', '/orders/new', 2, 'api'],
    ]);
    expect((await subscriptions({ endpoint: 'ep.bob' })).map((s) => s.topic)).toEqual(['/orders/new']);
    for (const s of onNew) {
      expect(s.id).toMatch(/^[0-9a-f]{20}$/);
      expect(s.sub_key).toMatch(/^svcpsk\.[A-Za-z0-9_-]{4}…$/);
      expect(Number.isNaN(Date.parse(s.creation_time_iso))).toBe(false);
    }
    expect(onNew[0]!.sub_key).toBe(`${aliceKey.slice(0, 11)}…`);
    const everything = JSON.stringify([topics, await subscriptions()]);
    expect(everything).not.toContain(aliceKey);
    expect(everything).not.toContain(bobKey);
    expect(everything).not.toContain(aliceKey.slice(7, 20));

    await getRest(ALICE, '/orders/new');
    await getRest(BOB, '/orders/new');
  });
});

describe('pubsub.messages', () => {
  it('shows queued messages in delivery order without taking them: a later get still returns every one', async () => {
    await subscribeRest(ALICE, '/orders/eu/new');
    const long = 'x'.repeat(500);
    const low = await publish('/orders/eu/new', { data: { order: 1 }, priority: 2, expiration: 3600, correl_id: 'corr-1' });
    const high = await publish('/orders/eu/new', { data: long, priority: 8 });
    const [sub] = await subscriptions({ endpoint: 'ep.alice', topic: '/orders/eu/new' });

    const byId = await browse({ id: sub!.id });
    expect(byId.subscription).toEqual(sub);
    expect(byId.messages.map((m) => m.msg_id)).toEqual([high, low]);
    const [first, second] = byId.messages;
    expect(first).toMatchObject({ truncated: true, size: 500, mime_type: 'application/json', priority: 8, delivery_count: 0, expiration: null, expiration_time_iso: null });
    expect(first!.data_preview).toBe(`${'x'.repeat(200)}…`);
    expect(second).toMatchObject({ data_preview: '{"order":1}', truncated: false, priority: 2, expiration: 3600, correl_id: 'corr-1', publisher: 'ep.alice' });
    expect(Date.parse(String(second!.expiration_time_iso)) - Date.parse(String(second!.recv_time_iso))).toBe(3_600_000);

    // Again, by endpoint and topic, with a limit: still both there.
    expect((await browse({ endpoint: 'ep.alice', topic: '/orders/eu/new', limit: 1 })).messages.map((m) => m.msg_id)).toEqual([high]);
    expect((await subscriptions({ topic: '/orders/eu/new' }))[0]!.queue_depth).toBe(2);

    const got = await getRest(ALICE, '/orders/eu/new');
    expect(got.map((m) => m.msg_id).sort()).toEqual([low, high].sort());
    expect((await browse({ id: sub!.id })).messages).toEqual([]);
  });

  it('names the subscription it cannot find, and wants exactly one way of naming it', async () => {
    await expect(browse({ id: '0123456789abcdef0123' })).rejects.toThrow('no subscription with id 0123456789abcdef0123');
    await expect(browse({ endpoint: 'ep.bob', topic: '/orders/paid' })).rejects.toThrow("endpoint 'ep.bob' has no subscription to '/orders/paid'");
    await expect(browse({})).rejects.toThrow(/invalid arguments for 'pubsub.messages': .*by id, or by endpoint and topic/);
    await expect(browse({ endpoint: 'ep.bob' })).rejects.toThrow(/by id, or by endpoint and topic/);
    await expect(browse({ id: '0123456789abcdef0123', endpoint: 'ep.bob', topic: '/orders/new' })).rejects.toThrow(/by id, or by endpoint and topic/);
    await expect(browse({ endpoint: 'ep.bob', topic: '/orders/new', limit: 101 })).rejects.toThrow(/limit/);
    await expect(browse({ endpoint: 'ep.bob', topic: 'orders/*' })).rejects.toThrow(/topic: a topic name/);
  });
});

describe('pubsub.subscribe and pubsub.unsubscribe', () => {
  it('subscribes as the endpoint itself would: the REST API then sees the same subscription, retained messages included', async () => {
    const retained = (await op<Array<{ name: string; retained: number }>>('pubsub.topics')).find((t) => t.name === '/orders/paid')!.retained;
    expect(retained).toBeGreaterThan(0);
    const made = await op<SubscriptionView & { created: boolean }>('pubsub.subscribe', { endpoint: 'ep.alice', topic: '/orders/paid' });
    expect(made).toMatchObject({ created: true, endpoint: 'ep.alice', topic: '/orders/paid', source: 'api' });
    expect(made.sub_key).toMatch(/^svcpsk\.[A-Za-z0-9_-]{4}…$/);
    await k.engine.idle();

    // The endpoint subscribing itself finds it there: same key (created: false, so no queue_depth).
    const res = await k.call('POST', '/svc/pubsub/subscribe/topic/orders/paid', ALICE);
    const rest = json(res) as Record<string, unknown>;
    expect(Object.keys(rest)).toEqual(['sub_key']);
    expect(`${String(rest.sub_key).slice(0, 11)}…`).toBe(made.sub_key);
    const again = await op<{ created: boolean; id: string }>('pubsub.subscribe', { endpoint: 'ep.alice', topic: '/orders/paid' });
    expect(again).toMatchObject({ created: false, id: made.id });

    expect((await getRest(ALICE, '/orders/paid')).map((m) => m.data)).toEqual(['nobody listens yet']);
  });

  it('honours the endpoint permissions and names what is wrong', async () => {
    await expect(op('pubsub.subscribe', { endpoint: 'ep.bob', topic: '/orders/eu/new' })).rejects.toThrow("endpoint 'ep.bob' has no subscription permission for '/orders/eu/new'");
    await expect(op('pubsub.subscribe', { endpoint: 'ep.bob', topic: '/secret' })).rejects.toThrow(/no subscription permission/);
    // Same answer over REST: 403.
    expect((await k.call('POST', '/svc/pubsub/subscribe/topic/orders/eu/new', BOB)).statusCode).toBe(403);
    await expect(op('pubsub.subscribe', { endpoint: 'ep.nobody', topic: '/orders/new' })).rejects.toThrow("no pub/sub endpoint 'ep.nobody'");
    await expect(op('pubsub.subscribe', { endpoint: 'ep.alice', topic: '/orders/none' })).rejects.toThrow("no topic '/orders/none'");
    await expect(op('pubsub.subscribe', { endpoint: 'ep.alice' })).rejects.toThrow(/topic/);
    expect(await subscriptions({ endpoint: 'ep.bob', topic: '/orders/eu/new' })).toEqual([]);
  });

  it('unsubscribes by id or by endpoint and topic: the queue goes, as after a REST unsubscribe', async () => {
    await op('pubsub.subscribe', { endpoint: 'ep.bob', topic: '/orders/new' });
    await publish('/orders/new', { data: 'for bob' });
    const [bob] = await subscriptions({ endpoint: 'ep.bob', topic: '/orders/new' });
    expect(bob!.queue_depth).toBe(1);

    expect(await op('pubsub.unsubscribe', { id: bob!.id })).toEqual({ unsubscribed: true, id: bob!.id, endpoint: 'ep.bob', topic: '/orders/new', messages_deleted: 1 });
    expect(await subscriptions({ endpoint: 'ep.bob', topic: '/orders/new' })).toEqual([]);
    expect(await getRest(BOB, '/orders/new')).toEqual([]);
    await expect(op('pubsub.unsubscribe', { id: bob!.id })).rejects.toThrow(`no subscription with id ${bob!.id}`);

    // A fresh subscription gets a fresh key, so a fresh id.
    const fresh = await op<{ id: string; created: boolean }>('pubsub.subscribe', { endpoint: 'ep.bob', topic: '/orders/new' });
    expect(fresh.created).toBe(true);
    expect(fresh.id).not.toBe(bob!.id);
    expect(await op('pubsub.unsubscribe', { endpoint: 'ep.bob', topic: '/orders/new' })).toMatchObject({ unsubscribed: true, id: fresh.id, messages_deleted: 0 });
  });

  it('survives a restart: the stored subscription keeps its id', async () => {
    const [before] = await subscriptions({ endpoint: 'ep.alice', topic: '/orders/paid' });
    await k.kernel.close();
    const restarted = await startPubSub({ dir: k.dir });
    try {
      const [after] = await (restarted.kernel.runControl('pubsub.subscriptions', { endpoint: 'ep.alice', topic: '/orders/paid' }) as Promise<SubscriptionView[]>);
      expect(after).toEqual(before);
    } finally {
      await restarted.close();
    }
  });
});
