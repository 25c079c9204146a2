/**
 * The counter store: where rate/burst and cap counters live. Narrow on purpose so that a
 * cluster-wide strategy (Redis, one script per decision) can replace the in-memory one:
 * the only operations are "decide for one key, atomically" and "forget keys by prefix".
 * The in-memory store answers synchronously (no promise per request on the local path); the
 * Redis store answers with a promise, which the limiter and the hook pass through.
 */

/** What one decision is measured against. The store reads it before returning (callers may reuse the object). */
export interface DecisionRequest {
  /** Sustained requests per second; 0 = no rate limit. */
  rate: number;
  /** Largest spike admitted at once (GCRA tolerance, in requests); used when rate > 0. */
  burst: number;
  /** Hard cap per calendar window; Infinity = no cap. */
  limit: number;
  /** Current calendar window [windowStart, windowEnd) in ms; a different start means a new window (count 0). */
  windowStart: number;
  windowEnd: number;
  /** Milliseconds since the epoch. */
  now: number;
  /**
   * True for counters that exist per client address: the store may evict them when idle
   * (the client starts afresh). Shared counters are dropped only once they hold no information.
   */
  evictable: boolean;
}

/** The outcome, written into the caller's object (no allocation per request in the in-memory store). */
export interface Decision {
  allowed: boolean;
  /** Requests left right now: the smaller of burst capacity and cap headroom, after this request. */
  remaining: number;
  /** When denied: the earliest instant (ms) at which the same request would be admitted. */
  retryAtMs: number;
  /**
   * Set by a store that could not count (Redis down, failing open): the request is admitted
   * without figures, so its level adds no X-RateLimit headers. The limiter resets it.
   */
  uncounted?: boolean;
}

export interface CounterStore {
  /**
   * Admits or denies one request on `key`, atomically: admitted requests consume from both
   * the rate/burst bucket and the cap window; a denied request consumes nothing.
   */
  decide(key: string, request: DecisionRequest, out: Decision): Decision | Promise<Decision>;
  /** Forgets every counter whose key starts with prefix; resolves how many were dropped. */
  clear(prefix: string): number | Promise<number>;
}

export function newDecision(): Decision {
  return { allowed: true, remaining: 0, retryAtMs: 0 };
}
