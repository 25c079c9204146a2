import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import type { ClusterEngine } from '../../../../plugins/pubsub/engine/cluster.ts';
import type { ResourceSet } from '../../../../plugins/pubsub/engine/model.ts';
import type { PgStore } from '../../../../plugins/store/postgres/store.ts';
import { pgSchemaUrl } from '../../../helpers/store.ts';
import { msg } from '../engine/helpers.ts';
import { clusterSuitesRun, openClusterNode } from './helpers.ts';

/**
 * Each node keeps the last count of a queue for a moment (200 ms) instead of counting it at every
 * publish. How old that count is must be time that passed: with the wall clock set back, a count
 * that seemed fresh for the whole jump let one node publish past max_depth, blind to the others.
 */
const FILE = fileURLToPath(import.meta.url);
const run = await clusterSuitesRun(FILE);
const RESOURCES: ResourceSet = {
  topics: [{ name: '/ten', max_depth: 10 }],
  endpoints: [{ name: 'ep.a', security: 'sec.a', pub: ['/ten'], sub: ['/ten'] }],
  subscriptions: [],
};

const clock = new ManualClock();
const stores: PgStore[] = [];
const engines: ClusterEngine[] = [];

async function node(url: string): Promise<ClusterEngine> {
  const { store, engine } = await openClusterNode(url, RESOURCES, clock);
  stores.push(store);
  engines.push(engine);
  return engine;
}

beforeAll(async () => {
  if (!run) return;
  const url = await pgSchemaUrl(`${FILE}:depth`);
  await node(url);
  await node(url);
});
afterAll(async () => {
  for (const e of engines) await e.close();
  for (const s of stores) await s.close();
});

describe.runIf(run)('max_depth on several nodes, with the wall clock set back', () => {
  it('a node counts the queue again once its count is 200 ms old in time that passed, whatever the wall clock says', async () => {
    const [a, b] = engines as [ClusterEngine, ClusterEngine];
    await a.subscribe('ep.a', '/ten');
    await a.publish(msg('/ten', 1));
    clock.set(clock.now() - 3_600_000);
    for (let i = 0; i < 8; i++) await b.publish(msg('/ten', `b${i}`));
    await new Promise((r) => setTimeout(r, 300));

    const outcomes: string[] = [];
    for (let i = 0; i < 3; i++) outcomes.push(await a.publish(msg('/ten', `a${i}`)).then(() => 'accepted', (err: { code?: string }) => err.code ?? String(err)));
    expect(outcomes).toEqual(['accepted', 'QUEUE_FULL', 'QUEUE_FULL']);
  });
});
