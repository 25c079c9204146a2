import type { ClientAddress } from './addresses.ts';
import type { ZoneTime } from './calendar.ts';
import type { CounterStore, Decision, DecisionRequest } from './policies/types.ts';
import { matchRule, rangeAt, type CompiledRange, type RuleSet } from './rules.ts';

export const ALLOW = 0;
export const DROP = 1;
export const DENY = 2;
export type Outcome = typeof ALLOW | typeof DROP | typeof DENY;

/**
 * What one request's checks came to, over one or both levels. Allocated once per request
 * (it is also the store's output slot, which keeps it safe with an asynchronous store).
 */
export class Verdict implements Decision {
  outcome: Outcome = ALLOW;
  allowed = true;
  remaining = 0;
  retryAtMs = 0;
  uncounted = false;
  /** Set once a limited range was counted: the tightest level's figures go to the X-RateLimit headers. */
  counted = false;
  headerLimit = 0;
  headerRemaining = 0;
  /** When the outcome is DROP: the rule set and the disallowed range that decided it (for the log line). */
  droppedBy: RuleSet | undefined = undefined;
  droppedRange: CompiledRange | undefined = undefined;
}

/** Applies compiled rule sets to requests against the counter store of each set's policy. */
export class Limiter {
  /** Read synchronously by the stores (the Redis store too, before it awaits), so one object serves every request. */
  private readonly request: DecisionRequest = {
    rate: 0,
    burst: 0,
    limit: 0,
    windowStart: 0,
    windowEnd: 0,
    now: 0,
    evictable: false,
  };

  constructor(
    readonly store: CounterStore,
    readonly time: ZoneTime,
    /** The store of `redis` rule sets; the plugin refuses such sets without one. */
    readonly redis?: CounterStore,
  ) {}

  /**
   * The firewall alone: the range in force for this client when it is `disallowed`, else
   * undefined. Touches no counter, so it can run before authentication.
   */
  disallowedRange(set: RuleSet, client: ClientAddress, now: number): CompiledRange | undefined {
    const rule = matchRule(set, client);
    if (rule === undefined) return undefined;
    const range = rangeAt(rule, this.time.minuteOfDay(now));
    return range?.disallowed ? range : undefined;
  }

  /** Checks one level; the verdict's outcome says whether to go on. */
  check(set: RuleSet, client: ClientAddress, now: number, verdict: Verdict): Verdict | Promise<Verdict> {
    const rule = matchRule(set, client);
    if (rule === undefined) return verdict;
    const range = rangeAt(rule, this.time.minuteOfDay(now));
    if (range === undefined) return verdict;
    if (range.disallowed) {
      verdict.outcome = DROP;
      verdict.droppedBy = set;
      verdict.droppedRange = range;
      return verdict;
    }
    if (!range.limited) return verdict;

    const req = this.request;
    req.rate = range.rate;
    req.burst = range.burst;
    req.limit = range.limit;
    if (range.window !== undefined) {
      const window = range.window.at(now);
      req.windowStart = window.start;
      req.windowEnd = window.end;
    }
    req.now = now;
    req.evictable = range.perClient;
    const key = range.perClient ? range.key + client.counterKey : range.key;
    const store = set.policy === 'redis' && this.redis !== undefined ? this.redis : this.store;
    const decided = store.decide(key, req, verdict);
    if (decided instanceof Promise) return decided.then(() => settle(verdict, range.headerLimit));
    return settle(verdict, range.headerLimit);
  }
}

function settle(verdict: Verdict, headerLimit: number): Verdict {
  if (verdict.uncounted) {
    // Admitted without figures (a store failing open): this level sends no headers.
    verdict.uncounted = false;
    return verdict;
  }
  if (!verdict.allowed) verdict.outcome = DENY;
  if (!verdict.counted || verdict.remaining < verdict.headerRemaining) {
    verdict.headerLimit = headerLimit;
    verdict.headerRemaining = verdict.remaining;
  }
  verdict.counted = true;
  return verdict;
}
