import { z } from 'zod';
import { definePlugin } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import '../shared/backend.ts';
import { NamedCaches } from './caches.ts';
import { cacheControls, clearCommand, followClears, listCommand } from './cli.ts';
import { cacheHostCalls } from './host-calls.ts';
import { cacheSectionSchema, cachesOf, validateCaches } from './schema.ts';

/**
 * Named caches for services: JSON values by key, per node in memory (LRU, TTL, size limits) or
 * shared by every node in Redis, used through host calls (`cache(name)` in the SDK) by the services
 * each cache grants. The response cache keeps channels' answers in one too. See README.md.
 */
export default definePlugin<Record<string, never>, NamedCaches>({
  name: 'cache',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.7.0',
  provides: ['cache.named', 'cache.stats'],
  configSchema: z.object({}).strict().default({}),
  contributes: {
    sections: { cache: cacheSectionSchema },
    validateConfig: validateCaches,
  },
  setup(kernel) {
    const caches = new NamedCaches(kernel.clock, kernel.log.child({ plugin: 'cache' }));
    for (const call of cacheHostCalls(caches)) kernel.addHostCall(call);
    for (const op of cacheControls(kernel, caches)) kernel.addControl(op);
    followClears(kernel, caches);
    kernel.provide('cache.named', (name) => caches.backend(name));
    kernel.provide('cache.stats', () => ({ caches: caches.list().map((c) => ({ cache: c.name, backend: c.backend, hits: c.hits, misses: c.misses, entries: c.entries, bytes: c.bytes })) }));
    return caches;
  },
  onConfig: (caches, config) => caches.apply(cachesOf(config)),
  stop: (caches) => caches.close(),
  hooks: {},
  cli: [listCommand, clearCommand],
});
