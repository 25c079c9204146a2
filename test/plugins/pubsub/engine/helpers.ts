import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import type { DataStore } from '../../../../sdk/plugin/store.ts';
import type { TenantQuotaApi } from '../../../../sdk/plugin/contract.ts';
import { openTestStore } from '../../../helpers/store.ts';
import { PubSubEngine, type ResourceSet } from '../../../../plugins/pubsub/engine/engine.ts';
import type { PubSubPublishRequest } from '../../../../plugins/capabilities.ts';

export const RESOURCES: ResourceSet = {
  topics: [{ name: '/orders/new' }, { name: '/orders/paid' }, { name: '/small', max_depth: 3 }],
  endpoints: [
    { name: 'ep.a', security: 'sec.a', pub: ['/orders/*', '/small'], sub: ['/orders/**', '/small'] },
    { name: 'ep.b', security: 'sec.b', pub: ['/orders/new'], sub: ['/orders/*'] },
  ],
  subscriptions: [],
};

/** Two tenants' topics of one name beside the platform's, and their endpoints (acme has two, to hold a message in two queues). */
export const TENANT_RESOURCES: ResourceSet = {
  topics: [{ name: 'acme/orders' }, { name: 'globex/orders' }, { name: '/orders' }],
  endpoints: [
    { name: 'acme/a', security: 'acme/sa', pub: ['acme/**'], sub: ['acme/**'] },
    { name: 'acme/b', security: 'acme/sb', pub: [], sub: ['acme/**'] },
    { name: 'globex/a', security: 'globex/sa', pub: ['globex/**'], sub: ['globex/**'] },
    { name: 'ep.a', security: 'sec.a', pub: ['/**'], sub: ['/**'] },
  ],
  subscriptions: [],
};

export interface EngineFixture {
  engine: PubSubEngine;
  store: DataStore;
  clock: ManualClock;
  file: string;
  reopen(resources?: ResourceSet): Promise<EngineFixture>;
  close(): Promise<void>;
}

export async function openEngine(resources: ResourceSet = RESOURCES, dir?: string, clock = new ManualClock(), quotas?: TenantQuotaApi): Promise<EngineFixture> {
  const base = dir ?? mkdtempSync(join(tmpdir(), 'svc-pubsub-'));
  const file = join(base, 'svc.db');
  const store = await openTestStore(file);
  const engine = await PubSubEngine.open({ store, clock, log: pino({ level: 'silent' }), defaultMaxDepth: 10_000, sweepIntervalMs: 0, quotas });
  await engine.applyConfig(resources);
  const fixture: EngineFixture = {
    engine,
    store,
    clock,
    file,
    async reopen(next = resources) {
      await engine.close();
      await store.close();
      return openEngine(next, base, clock, quotas);
    },
    async close() {
      await engine.close();
      await store.close();
      if (!dir) rmSync(base, { recursive: true, force: true });
    },
  };
  return fixture;
}

export function msg(topic: string, data: unknown, extra: Partial<PubSubPublishRequest> = {}): PubSubPublishRequest {
  return { topic, data, mimeType: 'application/json', priority: 5, expiration: undefined, hasGd: false, publisher: 'ep.a', ...extra };
}
