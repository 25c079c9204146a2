import { describe, expect, it } from 'vitest';
import type { SvcConfig } from '../../../../kernel/config/schema.ts';
import { ConfigError, readSource, validate } from '../../../../kernel/config/store.ts';
import type { Plugin } from '../../../../kernel/plugin.ts';
import cachePlugin from '../../../../plugins/cache/named/plugin.ts';
import responseCachePlugin from '../../../../plugins/cache/response/plugin.ts';
import jsonPlugin from '../../../../plugins/formats/json/plugin.ts';
import useQueuePlugin from '../../../../plugins/delivery/use-queue/plugin.ts';

const PLUGINS: Plugin[] = [cachePlugin, responseCachePlugin, jsonPlugin, useQueuePlugin];

function parse(yaml: string, plugins = PLUGINS): SvcConfig {
  return validate(readSource(yaml, {}), plugins, {});
}

function issues(yaml: string, plugins = PLUGINS): string {
  try {
    parse(yaml, plugins);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.join('\n');
    throw err;
  }
  throw new Error('the config was accepted');
}

const channel = (fields: string) => `channel_rest:\n  - { name: c, url_path: /c, service: s, security: none, ${fields} }\n`;

describe('channel_rest[].response_cache', () => {
  it('is absent unless given; {} is a minute, every query parameter, no header, per caller, 1 MiB bodies', () => {
    expect(parse(channel('method: GET')).channel_rest[0]!.response_cache).toBeUndefined();
    expect(parse(channel('response_cache: {}')).channel_rest[0]!.response_cache).toEqual({ ttl: 60_000, vary_headers: [], vary_user: true, max_body_bytes: 1024 * 1024 });
  });

  it('takes a ttl as people write it, vary lists (header names in any case), and a named cache', () => {
    const settings = parse(`cache:\n  - { name: answers }\n${channel('method: GET, response_cache: { ttl: 5m, vary_query: [page, q], vary_headers: [Accept-Language], vary_user: false, cache: answers, max_body_bytes: 0 }')}`).channel_rest[0]!.response_cache;
    expect(settings).toEqual({ ttl: 300_000, vary_query: ['page', 'q'], vary_headers: ['accept-language'], vary_user: false, cache: 'answers', max_body_bytes: 0 });
  });

  it.each([
    ['a channel of another method', 'method: POST, response_cache: {}', /channel_rest\[0\]\.response_cache: only answers to GET and HEAD are cached, and channel 'c' accepts POST only/],
    ['a queued channel', 'use_queue: true, response_cache: {}', /channel_rest\[0\]\.response_cache: channel 'c' is queued/],
    ['an unknown named cache', 'response_cache: { cache: nope }', /channel_rest\[0\]\.response_cache\.cache: no cache named 'nope' in the cache: section/],
    ['a ttl that is none', 'response_cache: { ttl: soon }', /response_cache\.ttl: 'soon' is not a time to live/],
    ['a header that is not a name', 'response_cache: { vary_headers: ["a b"] }', /response_cache\.vary_headers\[0\]: must be a header name/],
    ['an unknown field', 'response_cache: { vary: [a] }', /response_cache/],
  ])('refuses %s', (_label, fields, message) => {
    expect(issues(channel(fields))).toMatch(message);
  });

  it('refuses a named cache when the cache plugin is off', () => {
    expect(issues(channel('response_cache: { cache: answers }'), [responseCachePlugin, jsonPlugin])).toMatch(/response_cache\.cache: names a cache, but the cache plugin \(named caches\) is disabled/);
  });
});

describe('plugins.response-cache.config', () => {
  it('defaults to 10000 answers and 64 MiB', () => {
    expect(responseCachePlugin.configSchema.parse(undefined)).toEqual({ max_entries: 10_000, max_bytes: 64 * 1024 * 1024 });
    expect(responseCachePlugin.configSchema.safeParse({ max_entries: 0 }).success).toBe(false);
  });
});
