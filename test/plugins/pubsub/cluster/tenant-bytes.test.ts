import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { TenantLedger } from '../../../../kernel/tenants/ledger.ts';
import type { ClusterEngine } from '../../../../plugins/pubsub/engine/cluster.ts';
import type { PgStore } from '../../../../plugins/store/postgres/store.ts';
import { pgSchemaUrl } from '../../../helpers/store.ts';
import { msg, TENANT_RESOURCES } from '../engine/helpers.ts';
import { clusterSuitesRun, openClusterNode } from './helpers.ts';

/**
 * pubsub_bytes on two nodes sharing PostgreSQL: the bytes are counted from the messages the
 * database holds (a message once, however many queues hold it), and near the quota a tenant's
 * publishes take turns across the nodes, so publishing from both at once never passes it.
 */
const FILE = fileURLToPath(import.meta.url);
const run = await clusterSuitesRun(FILE);
const LIMIT = 100;

const clock = new ManualClock();
const stores: PgStore[] = [];
const engines: ClusterEngine[] = [];
const ledgers: TenantLedger[] = [];

async function node(url: string): Promise<ClusterEngine> {
  const ledger = new TenantLedger(clock);
  ledger.configure([
    { name: 'acme', processes: 0, weight: 1, quotas: { pubsub_bytes: LIMIT } },
    { name: 'globex', processes: 0, weight: 1, quotas: { pubsub_bytes: LIMIT } },
  ]);
  ledgers.push(ledger);
  const { store, engine } = await openClusterNode(url, TENANT_RESOURCES, clock, { quotas: ledger });
  stores.push(store);
  engines.push(engine);
  return engine;
}

beforeAll(async () => {
  if (!run) return;
  const url = await pgSchemaUrl(`${FILE}:bytes`);
  await node(url);
  await node(url);
});
afterAll(async () => {
  for (const e of engines) await e.close();
  for (const s of stores) await s.close();
});

const outcome = (p: Promise<unknown>) => p.then(() => 'ok', (err: { code?: string }) => err.code ?? String(err));
const TEN = '0123456789';

describe.runIf(run)('pubsub_bytes on two nodes sharing PostgreSQL', () => {
  it('publishing from both nodes at once stops exactly at the quota; each message counts once for its two queues', async () => {
    const [a, b] = engines as [ClusterEngine, ClusterEngine];
    await a.subscribe('acme/a', 'acme/orders');
    await b.subscribe('acme/b', 'acme/orders');
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => outcome((i % 2 ? a : b).publish(msg('acme/orders', TEN)))));
    expect(results.filter((r) => r === 'ok')).toHaveLength(LIMIT / TEN.length);
    expect(new Set(results.filter((r) => r !== 'ok'))).toEqual(new Set(['TENANT_QUOTA']));
    const stored = await stores[0]!.one<{ n: number }>("SELECT sum(size) AS n FROM pubsub_message WHERE topic = 'acme/orders'");
    expect(Number(stored?.n)).toBe(LIMIT);
    const refusals = ledgers.reduce((n, l) => n + (l.figures().find((f) => f.tenant === 'acme')?.throttled.pubsub_bytes ?? 0), 0);
    expect(refusals).toBe(20);
    // Another tenant and the platform publish on.
    expect(await outcome(b.publish(msg('globex/orders', TEN)))).toBe('ok');
    expect(await outcome(a.publish(msg('/orders', 'x'.repeat(1000))))).toBe('ok');
  });

  it('frees the bytes once both queues had a message delivered', async () => {
    const [a, b] = engines as [ClusterEngine, ClusterEngine];
    const [keyA] = await a.subscriptionKeys('acme/a');
    const [keyB] = await b.subscriptionKeys('acme/b');
    (await a.take([keyA!], { order: 'lifo', maxMessages: 1, maxBytes: Infinity })).ack();
    await a.idle();
    // The other queue still holds that message.
    expect(await outcome(b.publish(msg('acme/orders', TEN)))).toBe('TENANT_QUOTA');
    const got = await b.take([keyB!], { order: 'lifo', maxMessages: 100, maxBytes: Infinity });
    got.ack();
    await b.idle();
    // keyB's queue is empty now; keyA's holds 9 messages, 90 bytes.
    expect(await outcome(a.publish(msg('acme/orders', TEN)))).toBe('ok');
    expect(await outcome(b.publish(msg('acme/orders', '1')))).toBe('TENANT_QUOTA');
  });
});
