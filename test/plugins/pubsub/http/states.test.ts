import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALICE, json, startPubSub, type PubSubKernel } from './helpers.ts';

/** The spec's state tables (Subscription; Published message), row by row, through both variants. */

let k: PubSubKernel;
beforeAll(async () => {
  k = await startPubSub();
});
afterAll(async () => {
  await k?.close();
});

interface Variant {
  name: string;
  subscribe: string;
  publish: string;
  get: (topicPath: string) => Promise<unknown[]>;
  /** The data of what a get returned. */
  dataOf: (items: unknown[]) => unknown[];
}

const VARIANTS: Variant[] = [
  {
    name: 'A',
    subscribe: '/svc/pubsub/subscribe/topic',
    publish: '/svc/pubsub/topic',
    get: async (topicPath) => json(await k.call('PATCH', `/svc/pubsub/topic${topicPath}`, ALICE)) as unknown[],
    dataOf: (items) => items.map((m) => (m as { data: unknown }).data),
  },
  {
    name: 'B',
    subscribe: '/pubsub/subscribe/topic',
    publish: '/pubsub/topic',
    get: async () => {
      const res = await k.call('POST', '/pubsub/messages/get', ALICE, { max_messages: 1000 });
      return res.statusCode === 401 ? [] : ((json(res) as { messages: unknown[] }).messages ?? []);
    },
    dataOf: (items) => items.map((m) => (m as { data: unknown }).data),
  },
];

describe.each(VARIANTS)('variant $name: subscription states', (v) => {
  const topic = v.name === 'A' ? '/orders/new' : '/orders/paid';

  it('none → subscribe (with permission) → subscribed: a sub_key is generated; retained messages move in the background', async () => {
    await k.call('DELETE', `${v.subscribe}${topic}`, ALICE);
    await k.call('POST', `${v.publish}${topic}`, ALICE, { data: `retained-${v.name}` });
    expect(k.engine.retainedCount(topic)).toBe(1);
    const res = await k.call('POST', `${v.subscribe}${topic}`, ALICE);
    expect(res.statusCode).toBe(200);
    const body = json(res) as { sub_key: string; queue_depth?: number };
    expect(body.sub_key).toBe(k.engine.subscriptionKey('ep.alice', topic));
    expect(body.queue_depth).toBe(0);
    await k.engine.idle();
    expect(k.engine.retainedCount(topic)).toBe(0);
    expect(v.dataOf(await v.get(topic))).toEqual([`retained-${v.name}`]);
    expect(k.logged('retained messages moved to a new subscriber').at(-1)).toMatchObject({ topic, endpoint: 'ep.alice', moved: 1 });
  });

  it('subscribed → subscribe (same endpoint and topic) → subscribed: no second subscription, a log entry, no queue_depth', async () => {
    const key = k.engine.subscriptionKey('ep.alice', topic);
    const logged = k.logged('already subscribed').length;
    const body = json(await k.call('POST', `${v.subscribe}${topic}`, ALICE)) as Record<string, unknown>;
    expect(body.sub_key).toBe(key);
    expect(body).not.toHaveProperty('queue_depth');
    expect(k.logged('already subscribed')).toHaveLength(logged + 1);
    await k.call('POST', `${v.publish}${topic}`, ALICE, { data: 'single copy' });
    expect(v.dataOf(await v.get(topic))).toEqual(['single copy']);
  });

  it('subscribed → unsubscribe → none: the key is invalidated and deleted; a get needs a new subscription', async () => {
    const key = k.engine.subscriptionKey('ep.alice', topic)!;
    expect((await k.call('DELETE', `${v.subscribe}${topic}`, ALICE)).statusCode).toBe(200);
    expect(k.engine.subscriptionKey('ep.alice', topic)).toBeUndefined();
    expect(await k.kernel.store.one('SELECT sub_key FROM pubsub_subscription WHERE sub_key = ?', [key])).toBeUndefined();
    await k.call('POST', `${v.publish}${topic}`, ALICE, { data: 'after unsubscribe' });
    expect(v.dataOf(await v.get(topic))).toEqual([]);
    const fresh = json(await k.call('POST', `${v.subscribe}${topic}`, ALICE)) as { sub_key: string };
    expect(fresh.sub_key).not.toBe(key);
    await k.engine.idle();
    expect(v.dataOf(await v.get(topic))).toEqual(['after unsubscribe']);
  });

  it('none → unsubscribe → none: not an error, an informational log entry', async () => {
    await k.call('DELETE', `${v.subscribe}${topic}`, ALICE);
    const logged = k.logged('unsubscribe without a subscription').length;
    const res = await k.call('DELETE', `${v.subscribe}${topic}`, ALICE);
    expect(res.statusCode).toBe(200);
    expect(k.logged('unsubscribe without a subscription')).toHaveLength(logged + 1);
    expect(k.logged('unsubscribe without a subscription').at(-1)!.level).toBe(30);
  });
});

describe('published message states', () => {
  it('a message published to a topic without subscribers is retained, GD ones in the store', async () => {
    await k.call('DELETE', '/svc/pubsub/subscribe/topic/orders/eu/new', ALICE);
    const res = json(await k.call('POST', '/svc/pubsub/topic/orders/eu/new', ALICE, { data: 'kept', has_gd: true })) as { msg_id: string };
    expect(k.engine.retainedCount('/orders/eu/new')).toBe(1);
    expect(await k.kernel.store.one('SELECT retained FROM pubsub_message WHERE msg_id = ?', [res.msg_id])).toEqual({ retained: 1 });
  });

  it('when a subscriber appears, retained messages move to its queue in the background', async () => {
    await k.call('POST', '/svc/pubsub/subscribe/topic/orders/eu/new', ALICE);
    await k.engine.idle();
    expect(k.engine.retainedCount('/orders/eu/new')).toBe(0);
    const rows = await k.kernel.store.all('SELECT m.retained, q.sub_key FROM pubsub_message m JOIN pubsub_queue q ON q.seq = m.seq WHERE m.topic = ?', ['/orders/eu/new']);
    expect(rows).toEqual([{ retained: 0, sub_key: k.engine.subscriptionKey('ep.alice', '/orders/eu/new') }]);
    const got = json(await k.call('PATCH', '/svc/pubsub/topic/orders/eu/new', ALICE)) as Array<{ data: unknown }>;
    expect(got.map((m) => m.data)).toEqual(['kept']);
  });
});
