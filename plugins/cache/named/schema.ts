import { z } from 'zod';
import type { ConfigIssue, SvcConfig } from '../../../sdk/plugin/index.ts';
import { namedCacheSchema, type NamedCache } from '../shared/schema.ts';

export const cacheSectionSchema = z
  .array(namedCacheSchema)
  .default([])
  .describe("Named caches services keep JSON values in (`cache(name)` in the SDK), per node in memory or shared in Redis; channels' response_cache may keep answers in one (plugins/cache/named).").meta({ title: 'Caches' });

declare module '../../../sdk/plugin/extensions.ts' {
  interface ConfigSections {
    cache: NamedCache[];
  }
}

export function cachesOf(config: SvcConfig): NamedCache[] {
  return config.cache;
}

export function validateCaches(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const seen = new Map<string, number>();
  cachesOf(config).forEach((entry, index) => {
    const first = seen.get(entry.name);
    if (first !== undefined) issues.push({ path: ['cache', index, 'name'], message: `duplicate cache name '${entry.name}' (also cache[${first}])` });
    else seen.set(entry.name, index);
  });
  return issues;
}
