import { z } from 'zod';
import { scopedRef } from '../../../sdk/plugin/index.ts';
import type { ConfigIssue, SvcConfig } from '../../../sdk/plugin/index.ts';
import { cacheNameSchema, ttlSchema } from '../shared/schema.ts';

const MiB = 1024 * 1024;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export const responseCacheSchema = z
  .object({
    ttl: ttlSchema
      .default(60_000)
      .describe("How long an answer is served from the cache: milliseconds, or `30s`, `5m`, `1h`; the service's Cache-Control max-age or s-maxage may lower it for one answer. Default one minute."),
    vary_query: z
      .array(z.string().min(1))
      .optional()
      .describe('Query parameters that make answers differ, part of the key; requests that differ only in others share an answer. Absent: every query parameter is part of the key.'),
    vary_headers: z
      .array(z.string().regex(HEADER_NAME, 'must be a header name').transform((name) => name.toLowerCase()))
      .default([])
      .describe('Request headers that make answers differ (accept-language, accept), part of the key; any case.'),
    vary_user: z
      .boolean()
      .default(true)
      .describe('The authenticated caller (security definition and username) is part of the key, so no caller gets an answer made for another. false: every caller the channel admits shares the answers (data the same for all).'),
    cache: scopedRef(cacheNameSchema)
      .optional()
      .describe("A named cache (cache: section) to keep the answers in: with backend redis every node shares them. Absent: this node's memory (plugins.response-cache.config limits)."),
    max_body_bytes: z
      .number()
      .int()
      .min(0)
      .max(64 * MiB)
      .default(MiB)
      .describe('Larger answers are not stored (bytes of the body as sent). Default 1 MiB.'),
  })
  .strict();

export type ResponseCacheSettings = z.infer<typeof responseCacheSchema>;

export const channelFields = {
  response_cache: responseCacheSchema
    .optional()
    .describe("Answers to GET (and HEAD) kept and served again without calling the service, after security and rate limits, honouring Cache-Control; X-Svc-Cache says HIT, MISS or BYPASS (plugins/cache/response)."),
};

declare module '../../../sdk/plugin/extensions.ts' {
  interface ChannelFields {
    response_cache?: ResponseCacheSettings;
  }
}

export const optionsSchema = z
  .object({
    max_entries: z.number().int().min(1).max(10_000_000).default(10_000).describe("Most answers this node keeps in memory for channels whose response_cache names no cache; past it the least recently used go."),
    max_bytes: z.number().int().min(1024).default(64 * MiB).describe('Most bytes those answers take (keys, headers and bodies); past it the least recently used go. Default 64 MiB.'),
  })
  .strict()
  .default({ max_entries: 10_000, max_bytes: 64 * MiB });

export type ResponseCacheOptions = z.infer<typeof optionsSchema>;

/** The named caches of a config, as far as this plugin needs them (the cache plugin owns the section; it may be off). */
function namedCaches(config: SvcConfig): Array<{ name: string }> | undefined {
  return (config as { cache?: Array<{ name: string }> }).cache;
}

export function validateResponseCache(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const caches = namedCaches(config);
  config.channel_rest.forEach((channel, i) => {
    const settings = channel.response_cache;
    if (settings === undefined) return;
    const at = (...path: (string | number)[]) => ['channel_rest', i, 'response_cache', ...path];
    if (channel.method !== undefined && channel.method !== 'GET' && channel.method !== 'HEAD') {
      issues.push({ path: at(), message: `only answers to GET and HEAD are cached, and channel '${channel.name}' accepts ${channel.method} only` });
    }
    if ((channel as { use_queue?: unknown }).use_queue === true) issues.push({ path: at(), message: `channel '${channel.name}' is queued (use_queue): its answer is a receipt, not one to serve again` });
    if (settings.cache !== undefined && caches === undefined) issues.push({ path: at('cache'), message: 'names a cache, but the cache plugin (named caches) is disabled' });
    else if (settings.cache !== undefined && !caches!.some((c) => c.name === settings.cache)) issues.push({ path: at('cache'), message: `no cache named '${settings.cache}' in the cache: section` });
  });
  return issues;
}
