import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openTestStore } from '../../../helpers/store.ts';
import { pubsubMigrations } from '../../../../plugins/pubsub/engine/persistence.ts';
import { openEngine, msg, RESOURCES, type EngineFixture } from './helpers.ts';

let fx: EngineFixture;
afterEach(async () => {
  await fx?.close();
});

const ALL = { maxMessages: Infinity, maxBytes: Infinity };

async function count(table: string): Promise<number> {
  const row = await fx.store.one<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`);
  return Number(row?.n);
}

describe('subscriptions', () => {
  it('subscribe creates a random key once; a second subscribe returns the same key', async () => {
    fx = await openEngine();
    const first = await fx.engine.subscribe('ep.a', '/orders/new');
    expect(first.created).toBe(true);
    expect(first.subKey).toMatch(/^svcpsk\.[A-Za-z0-9_-]{32}$/);
    expect(first.queueDepth).toBe(0);
    const again = await fx.engine.subscribe('ep.a', '/orders/new');
    expect(again).toMatchObject({ created: false, subKey: first.subKey });
    const other = await fx.engine.subscribe('ep.b', '/orders/new');
    expect(other.subKey).not.toBe(first.subKey);
    expect(await count('pubsub_subscription')).toBe(2);
  });

  it('unsubscribe invalidates the key and deletes its queue; unsubscribing again is not an error', async () => {
    fx = await openEngine();
    const { subKey } = await fx.engine.subscribe('ep.a', '/orders/new');
    await fx.engine.publish(msg('/orders/new', 'x', { hasGd: true }));
    expect(fx.engine.queueDepth(subKey)).toBe(1);
    expect(await fx.engine.unsubscribe('ep.a', '/orders/new')).toBe(true);
    expect(fx.engine.subscriptionKey('ep.a', '/orders/new')).toBeUndefined();
    expect(fx.engine.take([subKey], { order: 'lifo', ...ALL }).messages).toEqual([]);
    expect(await fx.engine.unsubscribe('ep.a', '/orders/new')).toBe(false);
    await fx.engine.idle();
    expect(await count('pubsub_subscription')).toBe(0);
    expect(await count('pubsub_queue')).toBe(0);
    expect(await count('pubsub_message')).toBe(0);
    const fresh = await fx.engine.subscribe('ep.a', '/orders/new');
    expect(fresh.subKey).not.toBe(subKey);
  });

  it('unknown topics are refused', async () => {
    fx = await openEngine();
    await expect(fx.engine.subscribe('ep.a', '/nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(fx.engine.publish(msg('/nope', 1))).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('endpoint permissions follow patterns', async () => {
    fx = await openEngine();
    const b = fx.engine.endpointBySecurity('sec.b')!;
    expect(b.name).toBe('ep.b');
    expect(b.canPublish('/orders/new')).toBe(true);
    expect(b.canPublish('/orders/paid')).toBe(false);
    expect(b.canSubscribe('/orders/paid')).toBe(true);
    expect(b.canSubscribe('/orders/x/y')).toBe(false);
    expect(fx.engine.endpointBySecurity('sec.unknown')).toBeUndefined();
  });
});

describe('retained messages', () => {
  it('are kept while a topic has no subscriber and moved to the first one in the background', async () => {
    fx = await openEngine();
    await fx.engine.publish(msg('/orders/new', 'gd', { hasGd: true }));
    await fx.engine.publish(msg('/orders/new', 'ram'));
    expect(fx.engine.retainedCount('/orders/new')).toBe(2);
    const sub = await fx.engine.subscribe('ep.a', '/orders/new');
    expect(sub.queueDepth).toBe(0); // the move is not part of the subscribe call
    await fx.engine.idle();
    expect(fx.engine.retainedCount('/orders/new')).toBe(0);
    expect(fx.engine.queueDepth(sub.subKey)).toBe(2);
    // A second subscriber does not get the moved messages again.
    const late = await fx.engine.subscribe('ep.b', '/orders/new');
    await fx.engine.idle();
    expect(fx.engine.queueDepth(late.subKey)).toBe(0);
    const rows = await fx.store.all<{ sub_key: string }>('SELECT sub_key FROM pubsub_queue');
    expect(rows).toEqual([{ sub_key: sub.subKey }]);
    expect(await fx.store.one('SELECT retained FROM pubsub_message')).toEqual({ retained: 0 });
  });

  it('retained messages survive a restart and move once a subscriber appears', async () => {
    fx = await openEngine();
    await fx.engine.publish(msg('/orders/new', 'kept', { hasGd: true }));
    fx = await fx.reopen();
    expect(fx.engine.retainedCount('/orders/new')).toBe(1);
    const sub = await fx.engine.subscribe('ep.a', '/orders/new');
    await fx.engine.idle();
    expect(fx.engine.take([sub.subKey], { order: 'lifo', ...ALL }).messages.map((m) => m.data)).toEqual(['kept']);
  });

  it('expired retained messages are not moved', async () => {
    fx = await openEngine();
    await fx.engine.publish(msg('/orders/new', 'old', { expiration: 5, hasGd: true }));
    fx.clock.advance(6_000);
    const sub = await fx.engine.subscribe('ep.a', '/orders/new');
    await fx.engine.idle();
    expect(fx.engine.queueDepth(sub.subKey)).toBe(0);
    expect(await count('pubsub_message')).toBe(0);
  });
});

describe('get', () => {
  it('lifo returns the most recently published first, whatever the priority', async () => {
    fx = await openEngine();
    const { subKey } = await fx.engine.subscribe('ep.a', '/orders/new');
    for (const [data, priority] of [['a', 9], ['b', 1], ['c', 5]] as const) await fx.engine.publish(msg('/orders/new', data, { priority }));
    const got = fx.engine.take([subKey], { order: 'lifo', ...ALL });
    expect(got.messages.map((m) => m.data)).toEqual(['c', 'b', 'a']);
    got.ack();
    expect(fx.engine.queueDepth(subKey)).toBe(0);
  });

  it('priority order: highest first, oldest first within a priority, across all topics of the endpoint', async () => {
    fx = await openEngine();
    const k1 = (await fx.engine.subscribe('ep.a', '/orders/new')).subKey;
    const k2 = (await fx.engine.subscribe('ep.a', '/orders/paid')).subKey;
    await fx.engine.publish(msg('/orders/new', 'n5a', { priority: 5 }));
    await fx.engine.publish(msg('/orders/paid', 'p9', { priority: 9 }));
    await fx.engine.publish(msg('/orders/paid', 'p5', { priority: 5 }));
    await fx.engine.publish(msg('/orders/new', 'n0', { priority: 0 }));
    await fx.engine.publish(msg('/orders/new', 'n5b', { priority: 5 }));
    const got = fx.engine.take(fx.engine.subscriptionKeys('ep.a'), { order: 'priority', ...ALL });
    expect(got.messages.map((m) => m.data)).toEqual(['p9', 'n5a', 'p5', 'n5b', 'n0']);
    expect(got.messages.map((m) => m.subKey)).toEqual([k2, k1, k2, k1, k1]);
    got.ack();
  });

  it('maxMessages and maxBytes leave the rest queued; a message too large for this get waits for a larger one', async () => {
    fx = await openEngine();
    const { subKey } = await fx.engine.subscribe('ep.a', '/orders/new');
    await fx.engine.publish(msg('/orders/new', 'aaaa'));
    await fx.engine.publish(msg('/orders/new', 'bbbbbbbbbb'));
    await fx.engine.publish(msg('/orders/new', 'cc'));
    const first = fx.engine.take([subKey], { order: 'priority', maxMessages: 2, maxBytes: 6 });
    expect(first.messages.map((m) => m.data)).toEqual(['aaaa', 'cc']);
    expect(first.messages.map((m) => m.size)).toEqual([4, 2]);
    first.ack();
    const second = fx.engine.take([subKey], { order: 'priority', maxMessages: 1, maxBytes: 100 });
    expect(second.messages.map((m) => m.data)).toEqual(['bbbbbbbbbb']);
    second.ack();
  });

  it('size counts UTF-8 bytes of strings and of the JSON text of other data', async () => {
    fx = await openEngine();
    const { subKey } = await fx.engine.subscribe('ep.a', '/orders/new');
    await fx.engine.publish(msg('/orders/new', 'żółw'));
    await fx.engine.publish(msg('/orders/new', { a: 1 }));
    const got = fx.engine.take([subKey], { order: 'priority', ...ALL });
    expect(got.messages.map((m) => m.size)).toEqual([7, 7]);
    got.ack();
  });

  it('taken messages are invisible to other getters; nack returns them with delivery_count + 1; ack deletes them', async () => {
    fx = await openEngine();
    const { subKey } = await fx.engine.subscribe('ep.a', '/orders/new');
    await fx.engine.publish(msg('/orders/new', 'm', { hasGd: true }));
    const first = fx.engine.take([subKey], { order: 'lifo', ...ALL });
    expect(first.messages).toHaveLength(1);
    expect(first.messages[0]!.deliveryCount).toBe(0);
    expect(fx.engine.take([subKey], { order: 'lifo', ...ALL }).messages).toHaveLength(0);
    first.nack();
    await fx.engine.idle();
    expect(await fx.store.one('SELECT delivery_count FROM pubsub_queue')).toEqual({ delivery_count: 1 });
    const second = fx.engine.take([subKey], { order: 'lifo', ...ALL });
    expect(second.messages[0]!.deliveryCount).toBe(1);
    second.ack();
    second.nack(); // settling twice does nothing
    await fx.engine.idle();
    expect(fx.engine.queueDepth(subKey)).toBe(0);
    expect(await count('pubsub_queue')).toBe(0);
    expect(await count('pubsub_message')).toBe(0);
  });

  it('a message delivered to two subscribers is deleted once both took it', async () => {
    fx = await openEngine();
    const a = await fx.engine.subscribe('ep.a', '/orders/new');
    const b = await fx.engine.subscribe('ep.b', '/orders/new');
    await fx.engine.publish(msg('/orders/new', 'both', { hasGd: true }));
    fx.engine.take([a.subKey], { order: 'lifo', ...ALL }).ack();
    await fx.engine.idle();
    expect(await count('pubsub_message')).toBe(1);
    expect(await count('pubsub_queue')).toBe(1);
    const gotB = fx.engine.take([b.subKey], { order: 'lifo', ...ALL });
    expect(gotB.messages.map((m) => m.data)).toEqual(['both']);
    gotB.ack();
    await fx.engine.idle();
    expect(await count('pubsub_message')).toBe(0);
  });

  it('an unknown key yields nothing', async () => {
    fx = await openEngine();
    expect(fx.engine.take(['svcpsk.nope'], { order: 'lifo', ...ALL }).messages).toEqual([]);
  });
});

describe('expiry', () => {
  it('expired messages are never delivered, and the sweep removes them from memory and the store', async () => {
    fx = await openEngine();
    const { subKey } = await fx.engine.subscribe('ep.a', '/orders/new');
    await fx.engine.publish(msg('/orders/new', 'short', { expiration: 10, hasGd: true }));
    await fx.engine.publish(msg('/orders/new', 'long', { expiration: 100, hasGd: true }));
    await fx.engine.publish(msg('/orders/new', 'forever', { hasGd: true }));
    fx.clock.advance(10_000);
    expect(fx.engine.sweep()).toBe(1);
    await fx.engine.idle();
    expect(await count('pubsub_message')).toBe(2);
    fx.clock.advance(90_000);
    // Expired but not swept yet: a get skips and drops it.
    const got = fx.engine.take([subKey], { order: 'lifo', ...ALL });
    expect(got.messages.map((m) => m.data)).toEqual(['forever']);
    got.ack();
    await fx.engine.idle();
    expect(await count('pubsub_message')).toBe(0);
  });

  it('expiration is reported with its absolute time; a message without one never expires', async () => {
    fx = await openEngine();
    const { subKey } = await fx.engine.subscribe('ep.a', '/orders/new');
    const t0 = fx.clock.now();
    await fx.engine.publish(msg('/orders/new', 'e', { expiration: 60 }));
    await fx.engine.publish(msg('/orders/new', 'n'));
    fx.clock.advance(10 * 365 * 86_400_000);
    const got = fx.engine.take([subKey], { order: 'priority', ...ALL });
    expect(got.messages.map((m) => [m.data, m.expiration, m.expiresAt])).toEqual([['n', undefined, undefined]]);
    got.ack();
    expect(t0).toBeGreaterThan(0);
  });

  it('a message that expires while in flight is dropped instead of going back', async () => {
    fx = await openEngine();
    const { subKey } = await fx.engine.subscribe('ep.a', '/orders/new');
    await fx.engine.publish(msg('/orders/new', 'x', { expiration: 1, hasGd: true }));
    const got = fx.engine.take([subKey], { order: 'lifo', ...ALL });
    fx.clock.advance(2_000);
    got.nack();
    await fx.engine.idle();
    expect(fx.engine.queueDepth(subKey)).toBe(0);
    expect(await count('pubsub_message')).toBe(0);
  });
});

describe('max_depth', () => {
  it('a full queue refuses the publish instead of dropping anything', async () => {
    fx = await openEngine();
    const { subKey } = await fx.engine.subscribe('ep.a', '/small');
    for (let i = 0; i < 3; i++) await fx.engine.publish(msg('/small', i, { hasGd: true }));
    await expect(fx.engine.publish(msg('/small', 3, { hasGd: true }))).rejects.toMatchObject({ code: 'QUEUE_FULL', status: 503 });
    await expect(fx.engine.publish(msg('/small', 3))).rejects.toMatchObject({ code: 'QUEUE_FULL' });
    fx.engine.take([subKey], { order: 'lifo', maxMessages: 1, maxBytes: Infinity }).ack();
    await fx.engine.publish(msg('/small', 4));
    expect(fx.engine.queueDepth(subKey)).toBe(3);
  });

  it('retained messages count against max_depth too, including GD publishes still committing', async () => {
    fx = await openEngine();
    const results = await Promise.allSettled([0, 1, 2, 3, 4].map((i) => fx.engine.publish(msg('/small', i, { hasGd: true }))));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(2);
    expect(fx.engine.retainedCount('/small')).toBe(3);
  });
});

describe('persistence', () => {
  it('GD messages, subscriptions and delivery counts survive a restart; non-GD messages do not', async () => {
    fx = await openEngine();
    const { subKey } = await fx.engine.subscribe('ep.a', '/orders/new');
    await fx.engine.publish(msg('/orders/new', { n: 1 }, { hasGd: true, priority: 7, expiration: 3600, correlId: 'c1', inReplyTo: 'm0', extClientId: 'x' }));
    await fx.engine.publish(msg('/orders/new', 'ram only'));
    fx.engine.take([subKey], { order: 'priority', maxMessages: 1, maxBytes: Infinity }).nack();
    fx = await fx.reopen();
    expect(fx.engine.subscriptionKey('ep.a', '/orders/new')).toBe(subKey);
    const got = fx.engine.take([subKey], { order: 'priority', ...ALL });
    expect(got.messages).toHaveLength(1);
    expect(got.messages[0]).toMatchObject({
      data: { n: 1 },
      priority: 7,
      expiration: 3600,
      correlId: 'c1',
      inReplyTo: 'm0',
      extClientId: 'x',
      hasGd: true,
      deliveryCount: 1,
      topic: '/orders/new',
      mimeType: 'application/json',
      subKey,
    });
    got.ack();
  });

  it('publication order is kept across restarts', async () => {
    fx = await openEngine();
    const { subKey } = await fx.engine.subscribe('ep.a', '/orders/new');
    await fx.engine.publish(msg('/orders/new', 'before', { hasGd: true }));
    fx = await fx.reopen();
    await fx.engine.publish(msg('/orders/new', 'after', { hasGd: true }));
    expect(fx.engine.take([subKey], { order: 'lifo', ...ALL }).messages.map((m) => m.data)).toEqual(['after', 'before']);
  });

  it('a data store of schema version 1 is migrated with its messages, queues and delivery counts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-pubsub-v1-'));
    const old = await openTestStore(join(dir, 'svc.db'));
    await old.migrate('pubsub', pubsubMigrations(old.dialect).slice(0, 1));
    const subKey = 'svcpsk.v1v1v1v1v1v1v1v1v1v1v1v1v1v1v1v1';
    await old.run("INSERT INTO pubsub_subscription VALUES (?, 'ep.a', '/orders/new', 'api', 1)", [subKey]);
    const insert = 'INSERT INTO pubsub_message (msg_id, seq, topic, data, size, mime_type, priority, pub_time, recv_time, publisher, retained) VALUES (?, ?, ?, ?, 1, ?, 5, 1, 1, ?, ?)';
    await old.run(insert, ['svcpsm-queued', 3, '/orders/new', '"queued"', 'application/json', 'ep.a', 0]);
    await old.run(insert, ['svcpsm-kept', 4, '/orders/paid', '"kept"', 'application/json', 'ep.a', 1]);
    await old.run('INSERT INTO pubsub_queue VALUES (?, ?, 2, 1)', [subKey, 'svcpsm-queued']);
    await old.run('INSERT INTO pubsub_queue VALUES (?, ?, 0, 1)', ['svcpsk.gone', 'svcpsm-queued']);
    await old.close();

    fx = await openEngine(RESOURCES, dir);
    await fx.engine.idle();
    expect(await fx.store.all('SELECT seq, sub_key, delivery_count FROM pubsub_queue')).toEqual([{ seq: 3, sub_key: subKey, delivery_count: 2 }]);
    expect(fx.engine.retainedCount('/orders/paid')).toBe(1);
    await fx.engine.publish(msg('/orders/new', 'new', { hasGd: true }));
    const got = fx.engine.take([subKey], { order: 'lifo', ...ALL });
    expect(got.messages.map((m) => [m.msgId.startsWith('svcpsm-') ? m.msgId : 'new', m.data, m.deliveryCount])).toEqual([
      ['new', 'new', 0],
      ['svcpsm-queued', 'queued', 2],
    ]);
    got.ack();
    await fx.engine.idle();
    expect(await count('pubsub_queue')).toBe(0);
    expect(await count('pubsub_message')).toBe(1);
    await fx.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('config reconciliation', () => {
  it('configured subscriptions are created, kept across reloads and removed with the config entry', async () => {
    fx = await openEngine({ ...RESOURCES, subscriptions: [{ endpoint: 'ep.b', topics: ['/orders/new', '/orders/paid'] }] });
    const keys = fx.engine.subscriptionKeys('ep.b');
    expect(keys).toHaveLength(2);
    await fx.engine.applyConfig({ ...RESOURCES, subscriptions: [{ endpoint: 'ep.b', topics: ['/orders/new'] }] });
    expect(fx.engine.subscriptionKeys('ep.b')).toEqual([fx.engine.subscriptionKey('ep.b', '/orders/new')]);
    expect(fx.engine.subscriptionKey('ep.b', '/orders/new')).toBe(keys[0]);
    await fx.engine.idle();
    expect(await count('pubsub_subscription')).toBe(1);
  });

  it('subscriptions made through the API stay when config reloads, and go with their endpoint or topic', async () => {
    fx = await openEngine();
    await fx.engine.subscribe('ep.a', '/orders/paid');
    await fx.engine.subscribe('ep.b', '/orders/paid');
    await fx.engine.applyConfig(RESOURCES);
    expect(fx.engine.subscriptionKeys('ep.a')).toHaveLength(1);
    await fx.engine.applyConfig({ ...RESOURCES, endpoints: RESOURCES.endpoints.filter((e) => e.name !== 'ep.a') });
    expect(fx.engine.subscriptionKeys('ep.a')).toHaveLength(0);
    expect(fx.engine.subscriptionKeys('ep.b')).toHaveLength(1);
    await fx.engine.applyConfig({ ...RESOURCES, topics: RESOURCES.topics.filter((t) => t.name !== '/orders/paid') });
    expect(fx.engine.subscriptionKeys('ep.b')).toHaveLength(0);
    expect(fx.engine.hasTopic('/orders/paid')).toBe(false);
  });

  it('ephemeral resources are usable, stored nowhere, and gone after a restart', async () => {
    fx = await openEngine();
    await fx.engine.addEphemeral({
      topics: [{ name: '/demo/a' }],
      endpoints: [{ name: 'demo.1', security: 'demo.sec.1', pub: ['/demo/**'], sub: ['/demo/**'] }],
      subscriptions: [{ endpoint: 'demo.1', topics: ['/demo/a'] }],
    });
    const [key] = fx.engine.subscriptionKeys('demo.1');
    await fx.engine.publish(msg('/demo/a', 'hi', { hasGd: true }));
    expect(fx.engine.take([key!], { order: 'priority', ...ALL }).messages.map((m) => m.data)).toEqual(['hi']);
    await fx.engine.applyConfig(RESOURCES); // a config reload keeps them
    expect(fx.engine.hasTopic('/demo/a')).toBe(true);
    await fx.engine.idle();
    expect(await count('pubsub_subscription')).toBe(0);
    expect(await count('pubsub_message')).toBe(0);
    fx = await fx.reopen();
    expect(fx.engine.hasTopic('/demo/a')).toBe(false);
    expect(fx.engine.endpointBySecurity('demo.sec.1')).toBeUndefined();
  });

  it('services publish through the endpoint that names them', async () => {
    fx = await openEngine({
      ...RESOURCES,
      endpoints: [...RESOURCES.endpoints, { name: 'svc.ep', pub: ['/orders/*'], sub: [], services: ['billing'] }],
    });
    expect(fx.engine.endpointForService('billing', '/orders/new')?.name).toBe('svc.ep');
    expect(fx.engine.endpointForService('billing', '/small')).toBeUndefined();
    expect(fx.engine.endpointForService('other', '/orders/new')).toBeUndefined();
  });
});
