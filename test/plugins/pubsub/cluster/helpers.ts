import pino from 'pino';
import type { Clock } from '../../../../kernel/platform/clock.ts';
import { ClusterEngine, type ClusterEngineOptions } from '../../../../plugins/pubsub/engine/cluster.ts';
import type { ResourceSet } from '../../../../plugins/pubsub/engine/model.ts';
import { PgStore } from '../../../../plugins/store/postgres/store.ts';
import { pgAnswers, PG_URL } from '../../../helpers/store.ts';

/**
 * Whether the cluster suites run: always on CI (they fail there if PostgreSQL is down), elsewhere
 * when PostgreSQL answers; a skip says why.
 */
export async function clusterSuitesRun(file: string): Promise<boolean> {
  if (process.env.CI === 'true') return true;
  if (await pgAnswers()) return true;
  process.stderr.write(`${file}: PostgreSQL does not answer at ${PG_URL}, the pub/sub cluster tests are skipped\n`);
  return false;
}

export type Body = Record<string, unknown>;
export interface Caller {
  call(method: string, url: string, auth: string | undefined, body?: unknown): Promise<{ statusCode: number; body: string }>;
}

/** Variant B get of up to `max` messages: their msg_ids and data. */
export async function getB(node: Caller, auth: string, max = 100): Promise<Array<{ data: unknown; meta: Body }>> {
  const res = await node.call('POST', '/pubsub/messages/get', auth, { max_messages: max });
  if (res.statusCode !== 200) throw new Error(`get answered ${res.statusCode}: ${res.body}`);
  return (JSON.parse(res.body) as { messages: Array<{ data: unknown; meta: Body }> }).messages;
}

/** Variant A get (every queued message, last published first). */
export async function getA(node: Caller, auth: string, topic: string): Promise<Body[]> {
  const res = await node.call('PATCH', `/svc/pubsub/topic${topic}`, auth);
  if (res.statusCode !== 200) throw new Error(`get answered ${res.statusCode}: ${res.body}`);
  return JSON.parse(res.body) as Body[];
}

/** A node's engine alone (no kernel) on the store at `url`, configured with `resources`; close the engine, then the store. */
export async function openClusterNode(url: string, resources: ResourceSet, clock: Clock, options: Partial<ClusterEngineOptions> = {}): Promise<{ store: PgStore; engine: ClusterEngine }> {
  const store = await PgStore.open(url, { log: pino({ level: 'silent' }) });
  const engine = await ClusterEngine.open({ store, clock, log: pino({ level: 'silent' }), defaultMaxDepth: 10_000, sweepIntervalMs: 0, leaseMs: 30_000, ...options });
  await engine.applyConfig(resources);
  return { store, engine };
}
