import type { KernelApi } from '../../sdk/plugin/index.ts';
import type { AddressCache } from './addresses.ts';
import type { Limiter } from './limiter.ts';
import type { RedisCounterStore } from './policies/redis.ts';
import type { CounterStore } from './policies/types.ts';
import type { Refusals } from './refusals.ts';
import type { RuleSet, WindowPool } from './rules.ts';
import type { Policy } from './schema.ts';

/** What the plugin keeps between requests; shared by its hooks and its clear command. */
export interface RateLimitState {
  kernel: KernelApi;
  /** The local policy's store (this node's memory). */
  store: CounterStore;
  /** The redis policy's store, when the plugin options name a Redis. */
  redis: RedisCounterStore | undefined;
  /** The policy of rule sets whose entry names none. */
  defaultPolicy: Policy;
  addresses: AddressCache;
  pool: WindowPool;
  limiter: Limiter;
  /** Compiled rules of the current config, by owner name (only owners that have rules). */
  channels: Map<string, RuleSet>;
  securities: Map<string, RuleSet>;
  /** Every security definition name, with rules or not. */
  definitionNames: Set<string>;
  refusals: Refusals;
}
