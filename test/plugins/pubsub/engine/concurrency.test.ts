import { afterEach, describe, expect, it } from 'vitest';
import type { SqliteStore } from '../../../../kernel/store/sqlite.ts';
import { openEngine, msg, type EngineFixture } from './helpers.ts';

let fx: EngineFixture;
afterEach(async () => {
  await fx?.close();
});

describe('concurrency', () => {
  it('parallel publishers and getters: every message delivered exactly once, none lost', async () => {
    fx = await openEngine();
    const { subKey } = await fx.engine.subscribe('ep.a', '/orders/new');
    const publishers = 20;
    const perPublisher = 50;
    const seen: string[] = [];
    let publishing = true;

    const publish = async (p: number) => {
      for (let i = 0; i < perPublisher; i++) {
        await fx.engine.publish(msg('/orders/new', `${p}:${i}`, { hasGd: i % 2 === 0, priority: i % 10 }));
      }
    };
    const get = async (g: number) => {
      for (;;) {
        const d = fx.engine.take([subKey], { order: g % 2 ? 'lifo' : 'priority', maxMessages: 7, maxBytes: 20_000_000 });
        // Let other getters and publishers run while this delivery is "being written".
        await new Promise((r) => setImmediate(r));
        // Some deliveries fail and come back; they must still arrive exactly once in the end.
        if (d.messages.length > 0 && Math.random() < 0.2) {
          d.nack();
          continue;
        }
        for (const m of d.messages) seen.push(m.data as string);
        d.ack();
        if (!publishing && d.messages.length === 0 && fx.engine.queueDepth(subKey) === 0) return;
      }
    };

    const getters = Array.from({ length: 8 }, (_, g) => get(g));
    await Promise.all(Array.from({ length: publishers }, (_, p) => publish(p)));
    publishing = false;
    await Promise.all(getters);
    await fx.engine.idle();

    expect(seen).toHaveLength(publishers * perPublisher);
    expect(new Set(seen).size).toBe(publishers * perPublisher);
    const rows = await fx.store.one<{ n: number }>('SELECT COUNT(*) AS n FROM pubsub_message');
    expect(rows?.n).toBe(0);
  });

  it('two getters in the same turn never share a message', async () => {
    fx = await openEngine();
    const { subKey } = await fx.engine.subscribe('ep.a', '/orders/new');
    await Promise.all(Array.from({ length: 100 }, (_, i) => fx.engine.publish(msg('/orders/new', i, { hasGd: true }))));
    const a = fx.engine.take([subKey], { order: 'priority', maxMessages: 60, maxBytes: Infinity });
    const b = fx.engine.take([subKey], { order: 'priority', maxMessages: 60, maxBytes: Infinity });
    expect(a.messages).toHaveLength(60);
    expect(b.messages).toHaveLength(40);
    const ids = new Set([...a.messages, ...b.messages].map((m) => m.msgId));
    expect(ids.size).toBe(100);
    a.ack();
    b.ack();
  });

  it('concurrent GD publishes share commits and flushes (group commit)', async () => {
    fx = await openEngine();
    await fx.engine.subscribe('ep.a', '/orders/new');
    await fx.engine.idle();
    const realTransaction = fx.store.transaction.bind(fx.store);
    let commits = 0;
    fx.store.transaction = ((fn, opts) => {
      commits++;
      return realTransaction(fn, opts);
    }) as typeof fx.store.transaction;
    const flushesBefore = (fx.store as SqliteStore).flushCount;
    await Promise.all(Array.from({ length: 500 }, (_, i) => fx.engine.publish(msg('/orders/new', i, { hasGd: true }))));
    const rows = await fx.store.one<{ n: number }>('SELECT COUNT(*) AS n FROM pubsub_queue');
    expect(rows?.n).toBe(500);
    expect(commits).toBeGreaterThan(0);
    expect(commits).toBeLessThanOrEqual(2);
    // Every publish resolved after a flush of the WAL that began after its commit.
    const flushes = (fx.store as SqliteStore).flushCount - flushesBefore;
    expect(flushes).toBeGreaterThan(0);
    expect(flushes).toBeLessThanOrEqual(2);
  });
});
