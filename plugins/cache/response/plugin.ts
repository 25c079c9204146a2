import { definePlugin, type Channel, type KernelApi } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import type { ResponseCacheStats } from '../../capabilities.ts';
import '../shared/backend.ts';
import type { CacheBackend } from '../shared/backend.ts';
import { MemoryCache } from '../shared/memory.ts';
import { answerPrefix } from './entry.ts';
import { followPurges, purgeCommand, purgeControl } from './purge.ts';
import { channelFields, optionsSchema, validateResponseCache, type ResponseCacheOptions } from './schema.ts';
import { lookupStep, RESULTS, storeStep, type ChannelCache, type Result } from './steps.ts';

interface ResponseCacheState {
  kernel: KernelApi;
  /** This node's answers, for channels whose response_cache names no cache. */
  memory: MemoryCache;
  /** Requests by channel and outcome, counted from the start. */
  counts: Map<string, Record<Result, number>>;
  pending: ChannelCache['pending'];
  /** Each channel's steps, built by the invoke factory and found again by the onResponse one. */
  channels: WeakMap<Channel, ChannelCache>;
}

/** Where a channel's answers live: the named cache it names (looked up now), else this node's memory. */
function backendOf(state: ResponseCacheState, channel: Channel): CacheBackend | undefined {
  const name = channel.response_cache?.cache;
  return name === undefined ? state.memory : state.kernel.lookup('cache.named')?.(name);
}

function channelCache(state: ResponseCacheState, channel: Channel): ChannelCache | undefined {
  const settings = channel.response_cache;
  if (settings === undefined) return undefined;
  let c = state.channels.get(channel);
  if (c === undefined) {
    let counts = state.counts.get(channel.name);
    if (counts === undefined) state.counts.set(channel.name, (counts = { HIT: 0, MISS: 0, BYPASS: 0 }));
    c = { settings, prefix: answerPrefix(channel.name), backend: () => backendOf(state, channel), open: channel.security === 'none', clock: state.kernel.clock, counts, pending: state.pending };
    state.channels.set(channel, c);
  }
  return c;
}

function stats(state: ResponseCacheState): ResponseCacheStats {
  return { requests: [...state.counts].flatMap(([channel, counts]) => RESULTS.map((result) => ({ channel, result, count: counts[result] }))) };
}

/**
 * Response caching for channels (`response_cache:`): answers to GET and HEAD stored and served again
 * without calling the service, keyed by path, chosen query parameters and headers, and caller;
 * Cache-Control honoured both ways. Lookup in the invoke phase (after security, rate limits and
 * input checks), storing once the answer went out. See README.md.
 */
export default definePlugin<ResponseCacheOptions, ResponseCacheState>({
  name: 'response-cache',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.7.0',
  provides: ['response-cache.stats'],
  configSchema: optionsSchema,
  contributes: {
    channelFields,
    validateConfig: validateResponseCache,
  },
  setup(kernel, options) {
    const state: ResponseCacheState = {
      kernel,
      memory: new MemoryCache({ maxEntries: options.max_entries, maxBytes: options.max_bytes }, kernel.clock),
      counts: new Map(),
      pending: new WeakMap(),
      channels: new WeakMap(),
    };
    const where = (channel: Channel) => backendOf(state, channel);
    kernel.addControl(purgeControl(kernel, where));
    followPurges(kernel, where);
    kernel.provide('response-cache.stats', () => stats(state));
    return state;
  },
  hooks: {
    invoke: ({ channel, state }) => {
      const c = channelCache(state, channel);
      return c === undefined ? undefined : lookupStep(c);
    },
    onResponse: ({ channel, state }) => {
      const c = channelCache(state, channel);
      return c === undefined ? undefined : storeStep(c);
    },
  },
  stop: (state) => state.memory.close(),
  cli: [purgeCommand],
});
