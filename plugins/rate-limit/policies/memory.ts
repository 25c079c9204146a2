import type { CounterStore, Decision, DecisionRequest } from './types.ts';

/**
 * One key's counters.
 *
 * Rate/burst is a GCRA kept in exact integer arithmetic: the theoretical arrival time is
 * `anchor + n * 1000 / rate` ms, stored as an integer anchor and an integer count so that
 * no rounding accumulates however long the bucket stays busy (doubles at epoch
 * magnitudes would drift by a request now and then).
 * The cap is a fixed-window counter: `count` requests admitted in the window starting at `windowStart`.
 */
class Counter {
  anchor = 0;
  n = 0;
  rate = 0;
  windowStart = Number.NaN;
  windowEnd = 0;
  count = 0;
  lastSeen = 0;
  evictable = false;

  /** Holds no information any more: the bucket has refilled and the cap window is over or unused. */
  isSpent(now: number): boolean {
    const bucketFull = this.rate === 0 || (this.anchor - now) * this.rate + this.n * 1000 <= 0;
    return bucketFull && (this.count === 0 || this.windowEnd <= now);
  }
}

export interface MemoryStoreOptions {
  /** Counters kept before idle evictable ones are dropped. */
  maxCounters?: number;
  /** How often (in clock time, checked on decisions) counters that hold nothing are swept. */
  sweepIntervalMs?: number;
}

export class MemoryCounterStore implements CounterStore {
  private readonly counters = new Map<string, Counter>();
  private readonly maxCounters: number;
  private readonly sweepIntervalMs: number;
  private lastSweep = Number.NEGATIVE_INFINITY;

  constructor(options: MemoryStoreOptions = {}) {
    this.maxCounters = options.maxCounters ?? 100_000;
    this.sweepIntervalMs = options.sweepIntervalMs ?? 60_000;
  }

  get size(): number {
    return this.counters.size;
  }

  decide(key: string, req: DecisionRequest, out: Decision): Decision {
    const now = Math.floor(req.now);
    if (now - this.lastSweep >= this.sweepIntervalMs) this.sweep(now);
    let c = this.counters.get(key);
    if (c === undefined) {
      if (this.counters.size >= this.maxCounters) this.makeRoom(now);
      c = new Counter();
      this.counters.set(key, c);
    }
    c.lastSeen = now;
    c.evictable = req.evictable;

    let allowed = true;
    let remaining = Number.POSITIVE_INFINITY;
    let retryAt = 0;

    // Rate/burst: admitting means (TAT' - now) <= burst / rate, with TAT' = max(TAT, now) + 1/rate.
    const rate = req.rate;
    let anchor = c.anchor;
    let n = c.n;
    if (rate > 0) {
      const burstScaled = req.burst * 1000;
      const owed = (anchor - now) * rate + n * 1000;
      if (owed <= 0) {
        anchor = now;
        n = 0;
      } else if (owed > burstScaled) {
        // More owed than a whole burst: admitting never leaves that much, so the clock was set back
        // since (or burst lowered). Counted as a burst just spent, not as the jump's length of
        // debt; kept even if this request is refused, or every request would start it again.
        anchor = c.anchor = now;
        n = c.n = req.burst;
        c.rate = rate;
      }
      const excess = (anchor - now) * rate + (n + 1) * 1000;
      if (excess <= burstScaled) {
        n += 1;
        remaining = Math.floor((burstScaled - excess) / 1000);
      } else {
        allowed = false;
        remaining = 0;
        retryAt = anchor + Math.ceil(((n + 1 - req.burst) * 1000) / rate);
      }
    }

    const limit = req.limit;
    let count = 0;
    if (limit !== Number.POSITIVE_INFINITY) {
      count = c.windowStart === req.windowStart ? c.count : 0;
      if (count < limit) {
        const left = limit - count - 1;
        if (left < remaining) remaining = left;
      } else {
        if (allowed || req.windowEnd > retryAt) retryAt = req.windowEnd;
        allowed = false;
        remaining = 0;
      }
    }

    if (allowed) {
      if (rate > 0) {
        if (n >= rate) {
          // Keep n below rate so the integer products stay small.
          const seconds = Math.floor(n / rate);
          anchor += seconds * 1000;
          n -= seconds * rate;
        }
        c.anchor = anchor;
        c.n = n;
        c.rate = rate;
      }
      if (limit !== Number.POSITIVE_INFINITY) {
        c.windowStart = req.windowStart;
        c.windowEnd = req.windowEnd;
        c.count = count + 1;
      }
    }
    out.allowed = allowed;
    out.remaining = remaining === Number.POSITIVE_INFINITY ? 0 : remaining;
    out.retryAtMs = allowed ? 0 : retryAt;
    return out;
  }

  clear(prefix: string): number {
    let dropped = 0;
    for (const key of this.counters.keys()) {
      if (key.startsWith(prefix)) {
        this.counters.delete(key);
        dropped++;
      }
    }
    return dropped;
  }

  /** Drops every counter that holds no information (lossless). */
  sweep(now: number): void {
    this.lastSweep = now;
    for (const [key, c] of this.counters) {
      if (c.isSpent(now)) this.counters.delete(key);
    }
  }

  /** Full: sweep, then evict the least recently seen per-client counters down to 90% of the budget. */
  private makeRoom(now: number): void {
    this.sweep(now);
    const target = Math.floor(this.maxCounters * 0.9);
    if (this.counters.size <= target) return;
    const evictable: Array<[string, number]> = [];
    for (const [key, c] of this.counters) if (c.evictable) evictable.push([key, c.lastSeen]);
    evictable.sort((a, b) => a[1] - b[1]);
    const excess = this.counters.size - target;
    for (let i = 0; i < excess && i < evictable.length; i++) this.counters.delete(evictable[i]![0]);
  }
}
