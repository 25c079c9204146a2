import { definePlugin } from '../../sdk/plugin/index.ts';
import '../capabilities.ts';
import type { Exchange } from '../../sdk/plugin/index.ts';
import type { Channel, SvcConfig } from '../../sdk/plugin/index.ts';
import { SvcError } from '../../sdk/plugin/index.ts';
import { AddressCache, type ClientAddress } from './addresses.ts';
import { ZoneTime } from './calendar.ts';
import { clearCommand, clearControl, followClears } from './clear.ts';
import { ALLOW, DENY, DROP, Limiter, Verdict } from './limiter.ts';
import { MemoryCounterStore } from './policies/memory.ts';
import { maskRedisUrl, RedisCounterStore } from './policies/redis.ts';
import { Refusals } from './refusals.ts';
import { compileRuleSet, WindowPool, type CompiledRange, type RuleSet } from './rules.ts';
import type { RateLimitState } from './state.ts';
import { optionsSchema, policyOf, policySchema, rateLimitingSchema, validateRateLimiting, type Policy, type RateLimitOptions, type Rule } from './schema.ts';


/**
 * The policy of an entry's rule set. A Redis named in a saved config only after the start
 * is not connected (plugin options apply after a restart): such a config is refused, not run
 * with counters that would silently stay local.
 */
function policyFor(state: RateLimitState, entry: object, owner: string): Policy {
  const policy = policyOf(entry, { policy: state.defaultPolicy });
  if (policy === 'redis' && state.redis === undefined) {
    throw new Error(`${owner}: rate_limiting_policy redis, but the server started without plugins.rate-limit.config.redis (plugin options apply after a restart)`);
  }
  return policy;
}

function onConfig(state: RateLimitState, config: SvcConfig): void {
  if (state.pool.time.zone !== config.server.timezone) {
    const time = new ZoneTime(config.server.timezone);
    state.pool = new WindowPool(time);
    state.limiter = new Limiter(state.store, time, state.redis);
  }
  const securities = new Map<string, RuleSet>();
  for (const def of config.security) {
    const rules = def.rate_limiting as Rule[] | undefined;
    if (rules?.length) securities.set(def.name, compileRuleSet('security', def.name, rules, state.pool, policyFor(state, def, `security '${def.name}'`)));
  }
  const channels = new Map<string, RuleSet>();
  for (const channel of config.channel_rest) {
    const rules = channel.rate_limiting;
    if (rules?.length) channels.set(channel.name, compileRuleSet('channel', channel.name, rules, state.pool, policyFor(state, channel, `channel '${channel.name}'`)));
  }
  state.securities = securities;
  state.channels = channels;
  state.definitionNames = new Set(config.security.map((d) => d.name));
}

/**
 * A channel's own rules: compiled with the config for channel_rest entries, here for a plugin
 * route that sets rate_limiting (a route may share a channel's name, so never looked up by name).
 */
function channelRules(channel: Channel, config: SvcConfig, state: RateLimitState): RuleSet | undefined {
  const rules = channel.rate_limiting;
  if (!rules?.length) return undefined;
  if (config.channel_rest.includes(channel)) return state.channels.get(channel.name);
  // A route's rules come from plugin code, not through the config schema: its defaults are filled here.
  return compileRuleSet('channel', channel.name, rateLimitingSchema.parse(rules) as Rule[], state.pool, policyFor(state, channel, `route '${channel.name}'`));
}

/** The definitions whose rules may apply on this channel (looked up by ex.auth.definition per request). */
function securitiesFor(channel: Channel, state: RateLimitState): Map<string, RuleSet> | undefined {
  if (channel.security === 'none' || state.securities.size === 0) return undefined;
  // A group (or another target) may admit any definition; a named definition only itself.
  if (state.definitionNames.has(channel.security) && !state.securities.has(channel.security)) return undefined;
  return state.securities;
}

/** Whether rules may apply on a channel: its own, or those of a definition its security admits (as securitiesFor picks them). */
function mayLimit(channel: Channel, config: SvcConfig): boolean {
  if (channel.rate_limiting?.length) return true;
  if (channel.security === 'none') return false;
  const limited = config.security.filter((d) => (d.rate_limiting as Rule[] | undefined)?.length);
  return config.security.some((d) => d.name === channel.security) ? limited.some((d) => d.name === channel.security) : limited.length > 0;
}

function httpDate(ms: number): string {
  return new Date(Math.ceil(ms / 1000) * 1000).toUTCString();
}

/** A dropped request gets no response, so the kernel writes no request line for it: this is its line. */
function dropConnection(ex: Exchange, by: RuleSet, range: CompiledRange, refusals: Refusals): void {
  refusals.dropped(ex.channel.name);
  ex.log.info(
    { channel: ex.channel.name, client: ex.clientAddress, peer: ex.remoteAddress, [by.kind]: by.name, rule: range.ruleIndex + 1, range: range.label },
    'connection dropped: client disallowed by rate_limiting',
  );
  ex.drop();
}

function conclude(ex: Exchange, verdict: Verdict, refusals: Refusals): void {
  if (verdict.outcome === DROP) {
    dropConnection(ex, verdict.droppedBy!, verdict.droppedRange!, refusals);
    return;
  }
  if (verdict.outcome === DENY) {
    refusals.denied(ex.channel.name);
    throw new SvcError('TOO_MANY_REQUESTS', 'Too many requests', {
      headers: {
        'Retry-After': httpDate(verdict.retryAtMs),
        'X-RateLimit-Limit': String(verdict.headerLimit),
        'X-RateLimit-Remaining': '0',
      },
    });
  }
  if (verdict.counted) {
    ex.response.headers['X-RateLimit-Limit'] = String(verdict.headerLimit);
    ex.response.headers['X-RateLimit-Remaining'] = String(verdict.headerRemaining);
  }
}

export default definePlugin<RateLimitOptions, RateLimitState>({
  name: 'rate-limit',
  kind: 'limit',
  version: '1.0.0',
  sdk: '^1.7.0',
  provides: ['rate-limit.stats'],
  configSchema: optionsSchema,
  contributes: {
    channelFields: { rate_limiting: rateLimitingSchema, rate_limiting_policy: policySchema },
    securityFields: { rate_limiting: rateLimitingSchema, rate_limiting_policy: policySchema },
    validateConfig: validateRateLimiting,
    channelOpenApi: { responses: (channel, config) => (mayLimit(channel, config) ? { 429: 'a rate limit was reached; Retry-After says when to come back (TOO_MANY_REQUESTS)' } : undefined) },
  },

  async setup(kernel, options) {
    const time = new ZoneTime(kernel.server().timezone);
    const store = new MemoryCounterStore({ maxCounters: options.max_counters });
    const refusals = new Refusals();
    let redis: RedisCounterStore | undefined;
    if (options.redis !== undefined) {
      redis = new RedisCounterStore({
        url: options.redis,
        keyPrefix: options.redis_key_prefix,
        connectTimeoutMs: options.redis_connect_timeout_ms,
        timeoutMs: options.redis_timeout_ms,
        onError: options.on_redis_error,
        log: kernel.log,
        onFailure: (outcome) => refusals.redisError(outcome),
      });
      await redis.connect();
      kernel.log.info({ redis: maskRedisUrl(options.redis), connected: redis.ready, on_redis_error: options.on_redis_error }, 'rate-limit: redis policy store');
    }
    const state: RateLimitState = {
      kernel,
      store,
      redis,
      defaultPolicy: options.policy,
      addresses: new AddressCache(),
      pool: new WindowPool(time),
      limiter: new Limiter(store, time, redis),
      channels: new Map(),
      securities: new Map(),
      definitionNames: new Set(),
      refusals,
    };
    kernel.addControl(clearControl(state));
    followClears(state);
    kernel.provide('rate-limit.stats', () => state.refusals.stats());
    return state;
  },

  onConfig,

  hooks: {
    // The channel's firewall runs before authentication: a disallowed client must not even learn
    // (from a 401) that credentials are wanted. It counts nothing; counting waits for `limit`.
    // A definition's disallowed ranges apply to its credential, so they can only act in `limit`.
    onRequest: ({ channel, config, state }) => {
      const rules = channelRules(channel, config, state);
      if (rules === undefined || !rules.disallows) return undefined;
      const { limiter, addresses, refusals } = state;
      const clock = state.kernel.clock;
      return function firewall(ex: Exchange): void {
        const range = limiter.disallowedRange(rules, addresses.get(ex.clientAddress), clock.now());
        if (range !== undefined) dropConnection(ex, rules, range, refusals);
      };
    },

    limit: ({ channel, config, state }) => {
      const ownRules = channelRules(channel, config, state);
      const securities = securitiesFor(channel, state);
      if (ownRules === undefined && securities === undefined) return undefined;
      const { limiter, addresses, refusals } = state;
      const clock = state.kernel.clock;

      function channelLevel(ex: Exchange, verdict: Verdict, client: ClientAddress, now: number): void | Promise<void> {
        if (verdict.outcome === ALLOW && ownRules !== undefined) {
          const checked = limiter.check(ownRules, client, now, verdict);
          if (checked instanceof Promise) return checked.then((v) => conclude(ex, v, refusals));
        }
        conclude(ex, verdict, refusals);
      }

      // Definition rules first (one budget per credential across channels), then the channel's.
      // The channel's disallowed ranges were applied in onRequest; checked again here only
      // because the time range in force may have changed in between.
      return function rateLimit(ex: Exchange): void | Promise<void> {
        const now = clock.now();
        const client = addresses.get(ex.clientAddress);
        const verdict = new Verdict();
        const definition = ex.auth?.definition;
        const definitionRules = definition === undefined ? undefined : securities?.get(definition);
        if (definitionRules !== undefined) {
          const checked = limiter.check(definitionRules, client, now, verdict);
          if (checked instanceof Promise) return checked.then((v) => channelLevel(ex, v, client, now));
        }
        return channelLevel(ex, verdict, client, now);
      };
    },
  },

  stop: (state) => state.redis?.close(),

  cli: [clearCommand],
});
