import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { pgSchemaUrl } from '../../../helpers/store.ts';
import { ALICE, BOB, PUBSUB_CONFIG, json, startPubSub, type PubSubKernel } from '../http/helpers.ts';
import type { PubSubEngineApi } from '../../../../plugins/capabilities.ts';
import { clusterSuitesRun, getA, getB } from './helpers.ts';

/**
 * Three nodes (kernels in this process, each its own data_dir) on one PostgreSQL schema: what one
 * node publishes or subscribes, the others deliver; concurrent getters on every node never share
 * a message; a get nobody answers comes back after the lease.
 */

const FILE = fileURLToPath(import.meta.url);
const run = await clusterSuitesRun(FILE);
const LEASE_MS = 600;

const nodes: PubSubKernel[] = [];
beforeAll(async () => {
  if (!run) return;
  const store = await pgSchemaUrl(`${FILE}:nodes`);
  const config = `${PUBSUB_CONFIG}
server:
  store: "${store}"
plugins:
  pubsub:
    config: { lease_ms: ${LEASE_MS}, sweep_interval_ms: 200 }
`;
  // One after the other: the first migrates, the others find the tables.
  for (let i = 0; i < 3; i++) nodes.push(await startPubSub({ config }));
}, 120_000);
afterAll(async () => {
  for (const n of nodes) await n.close();
});

const [a, b, c] = [0, 1, 2].map((i) => ({ call: (...args: Parameters<PubSubKernel['call']>) => nodes[i]!.call(...args) }));

async function publishB(node: typeof a, topic: string, data: unknown, auth = ALICE): Promise<string> {
  const res = await node!.call('POST', `/pubsub/topic${topic}`, auth, { data });
  expect(res.statusCode, res.body).toBe(200);
  return (json(res) as { msg_id: string }).msg_id;
}

describe.runIf(run)('pub/sub on three nodes sharing PostgreSQL', () => {
  it('variant A: subscribe on one node, publish on another, get on the third; then the queue is empty everywhere', async () => {
    const sub = await a!.call('POST', '/svc/pubsub/subscribe/topic/orders/paid', ALICE);
    expect(sub.statusCode).toBe(200);
    const again = await b!.call('POST', '/svc/pubsub/subscribe/topic/orders/paid', ALICE);
    expect((json(again) as { sub_key: string }).sub_key).toBe((json(sub) as { sub_key: string }).sub_key);

    const first = await b!.call('POST', '/svc/pubsub/topic/orders/paid', ALICE, { data: 'one', has_gd: true });
    const second = await b!.call('POST', '/svc/pubsub/topic/orders/paid', ALICE, { data: { n: 2 }, has_gd: false });
    expect([first.statusCode, second.statusCode]).toEqual([200, 200]);
    const got = await getA(c!, ALICE, '/orders/paid');
    expect(got.map((m) => m.data)).toEqual([{ n: 2 }, 'one']);
    expect(got.map((m) => m.has_gd)).toEqual([false, true]);
    expect(got[0]!.msg_id).toBe((json(second) as { msg_id: string }).msg_id);
    await nodes[2]!.engine.idle();
    for (const n of [a, b, c]) expect(await getA(n!, ALICE, '/orders/paid')).toEqual([]);
  });

  it('variant B: subscriptions made on one node are seen by all; priority order across the user’s subscriptions', async () => {
    for (const topic of ['/orders/new', '/orders/eu/new']) {
      expect((await b!.call('POST', `/pubsub/subscribe/topic${topic}`, BOB)).statusCode).toBe(topic === '/orders/new' ? 200 : 403);
    }
    await publishB(a, '/orders/new', 'low');
    const res = await a!.call('POST', '/pubsub/topic/orders/new', ALICE, { data: 'high', priority: 9 });
    expect(res.statusCode).toBe(200);
    const got = await getB(c!, BOB);
    expect(got.map((m) => m.data)).toEqual(['high', 'low']);
    expect(await getB(a!, BOB)).toEqual([]);
  });

  it('a message published while a topic has no subscriber is retained and moved to the first one, on any node', async () => {
    await publishB(c, '/orders/eu/new', 'kept for the first subscriber');
    const topics = (await nodes[0]!.kernel.runControl('pubsub.topics', {})) as Array<{ name: string; retained: number }>;
    expect(topics.find((t) => t.name === '/orders/eu/new')!.retained).toBe(1);
    expect((await a!.call('POST', '/svc/pubsub/subscribe/topic/orders/eu/new', ALICE)).statusCode).toBe(200);
    expect((await getA(b!, ALICE, '/orders/eu/new')).map((m) => m.data)).toEqual(['kept for the first subscriber']);
  });

  it('concurrent getters on every node never get the same message', async () => {
    const total = 300;
    const published = new Set<string>();
    await Promise.all(
      [a, b, c].map(async (node, n) => {
        for (let i = 0; i < total / 3; i++) published.add(await publishB(node, '/orders/new', `m${n}.${i}`));
      }),
    );
    const seen = new Map<string, number>();
    const getter = async (node: typeof a) => {
      let empty = 0;
      while (empty < 3) {
        const got = await getB(node!, BOB, 7);
        if (got.length === 0) empty++;
        for (const m of got) seen.set(m.meta.msg_id as string, (seen.get(m.meta.msg_id as string) ?? 0) + 1);
      }
    };
    await Promise.all([a, b, c, a, b, c].map(getter));
    const duplicates = [...seen.values()].filter((n) => n > 1).length;
    expect({ delivered: seen.size, duplicates }).toEqual({ delivered: total, duplicates: 0 });
    expect([...seen.keys()].every((id) => published.has(id))).toBe(true);
  });

  it('messages taken by a node that never answers come back on another node after the lease, their delivery count raised', async () => {
    const msgId = await publishB(a, '/orders/new', 'taken, never answered');
    const engine = nodes[0]!.kernel.api.lookup('pubsub.engine') as PubSubEngineApi;
    const keys = await engine.subscriptionKeys('ep.bob');
    const taken = await engine.take(keys, { order: 'priority', maxMessages: 10, maxBytes: 1e6 });
    expect(taken.messages.map((m) => m.msgId)).toEqual([msgId]);
    expect(await getB(b!, BOB)).toEqual([]);
    await new Promise((r) => setTimeout(r, LEASE_MS + 100));
    const again = await getA(b!, BOB, '/orders/new');
    expect(again.map((m) => [m.msg_id, m.delivery_count])).toEqual([[msgId, 1]]);
  });

  it('a failed response puts the messages back for every node at once', async () => {
    const msgId = await publishB(a, '/orders/new', 'response lost');
    const engine = nodes[1]!.kernel.api.lookup('pubsub.engine') as PubSubEngineApi;
    const taken = await engine.take(await engine.subscriptionKeys('ep.bob'), { order: 'priority', maxMessages: 10, maxBytes: 1e6 });
    expect(taken.messages).toHaveLength(1);
    taken.nack();
    await nodes[1]!.engine.idle();
    const again = await getA(c!, BOB, '/orders/new');
    expect(again.map((m) => [m.msg_id, m.delivery_count])).toEqual([[msgId, 1]]);
  });

  it('max_depth counts the queue in the database, whichever node published', async () => {
    expect((await c!.call('POST', '/svc/pubsub/subscribe/topic/small', ALICE)).statusCode).toBe(200);
    await publishB(a, '/small', 1);
    await publishB(b, '/small', 2);
    const refused = await c!.call('POST', '/pubsub/topic/small', ALICE, { data: 3 });
    expect(refused.statusCode).toBe(503);
    expect((await getA(a!, ALICE, '/small')).map((m) => m.data)).toEqual([2, 1]);
    await nodes[0]!.engine.idle();
    await publishB(c, '/small', 4);
  });

  it('expired messages are never delivered and are swept by one of the nodes', async () => {
    const res = await a!.call('POST', '/pubsub/topic/orders/new', ALICE, { data: 'short-lived', expiration: 1 });
    expect(res.statusCode).toBe(200);
    await new Promise((r) => setTimeout(r, 1_300));
    expect(await getB(b!, BOB)).toEqual([]);
    const subs = (await nodes[2]!.kernel.runControl('pubsub.subscriptions', { endpoint: 'ep.bob' })) as Array<{ queue_depth: number }>;
    expect(subs.map((s) => s.queue_depth)).toEqual([0]);
  });

  it('unsubscribing on one node deletes the queue for all', async () => {
    await publishB(a, '/orders/new', 'dropped with the subscription');
    expect((await c!.call('DELETE', '/pubsub/subscribe/topic/orders/new', BOB)).statusCode).toBe(200);
    const res = await a!.call('POST', '/pubsub/messages/get', BOB, {});
    expect(res.statusCode).toBe(401);
    const topics = (await nodes[1]!.kernel.runControl('pubsub.topics', {})) as Array<{ name: string; subscriptions: number; queued: number }>;
    expect(topics.find((t) => t.name === '/orders/new')).toMatchObject({ subscriptions: 0, queued: 0 });
  });
});
