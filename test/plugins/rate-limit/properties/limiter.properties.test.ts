import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryCounterStore } from '../../../../plugins/rate-limit/policies/memory.ts';
import { newDecision, type DecisionRequest } from '../../../../plugins/rate-limit/policies/types.ts';

const T0 = Date.UTC(2026, 0, 1);
const WINDOW = 60_000;

/**
 * The textbook GCRA in BigInt (theoretical arrival time scaled by the rate, so exact) and a
 * fixed-window counter: what the store's normalised integer bookkeeping must always agree with.
 */
class RefCounter {
  /** TAT x rate, in ms x requests/s. */
  private tat = 0n;
  private windowStart = Number.NaN;
  private count = 0;

  decide(req: DecisionRequest): { allowed: boolean; remaining: number; retryAtMs: number } {
    const rate = BigInt(req.rate);
    const now = BigInt(req.now) * rate;
    const burst = BigInt(req.burst) * 1000n;
    let allowed = true;
    let remaining = Number.POSITIVE_INFINITY;
    let retryAt = 0;
    const from = this.tat > now ? this.tat : now;
    if (req.rate > 0) {
      const excess = from - now + 1000n;
      if (excess <= burst) remaining = Number((burst - excess) / 1000n);
      else {
        allowed = false;
        remaining = 0;
        // The earliest instant t with TAT - t*rate <= (burst - 1) * 1000.
        const num = this.tat - burst + 1000n;
        retryAt = Number((num + rate - 1n) / rate);
      }
    }
    const count = this.windowStart === req.windowStart ? this.count : 0;
    if (req.limit !== Number.POSITIVE_INFINITY) {
      if (count < req.limit) remaining = Math.min(remaining, req.limit - count - 1);
      else {
        retryAt = allowed ? req.windowEnd : Math.max(retryAt, req.windowEnd);
        allowed = false;
        remaining = 0;
      }
    }
    if (allowed) {
      if (req.rate > 0) this.tat = from + 1000n;
      if (req.limit !== Number.POSITIVE_INFINITY) {
        this.windowStart = req.windowStart;
        this.count = count + 1;
      }
    }
    return { allowed, remaining: remaining === Number.POSITIVE_INFINITY ? 0 : remaining, retryAtMs: allowed ? 0 : retryAt };
  }
}

interface Limits {
  rate: number;
  burst: number;
  limit: number;
}

const limitsArb: fc.Arbitrary<Limits> = fc
  .record({
    rate: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 10 }), fc.integer({ min: 1, max: 100_000 })),
    burstFactor: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 5 }), fc.double({ min: 0.01, max: 3, noNaN: true })),
    limit: fc.oneof(fc.constant(Number.POSITIVE_INFINITY), fc.integer({ min: 0, max: 30 })),
  })
  .map(({ rate, burstFactor, limit }) => ({ rate, burst: rate === 0 ? 0 : Math.max(1, Math.round(rate * burstFactor)), limit }))
  .filter((l) => l.rate > 0 || l.limit !== Number.POSITIVE_INFINITY);

/** Gaps between requests: bunched, about the emission interval, or idle for hours or years. */
const gapArb = fc.oneof(
  { weight: 5, arbitrary: fc.constant(0) },
  { weight: 5, arbitrary: fc.integer({ min: 1, max: 1_500 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1_500, max: 3 * WINDOW }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 10 * 365 * 86_400_000 }) },
);

describe('the in-memory counter store', () => {
  it('decides, counts down and names the retry instant exactly as a textbook GCRA and window counter would, over any gaps', () => {
    fc.assert(
      fc.property(
        fc.array(limitsArb, { minLength: 1, maxLength: 3 }),
        fc.array(fc.tuple(fc.nat(), gapArb), { minLength: 1, maxLength: 300 }),
        (keys, steps) => {
          const store = new MemoryCounterStore({ maxCounters: 1_000 });
          const refs = keys.map(() => new RefCounter());
          let now = T0;
          for (const [pick, gap] of steps) {
            now += gap;
            const i = pick % keys.length;
            const windowStart = now - (now % WINDOW);
            const req: DecisionRequest = { ...keys[i]!, windowStart, windowEnd: windowStart + WINDOW, now, evictable: false };
            const expected = refs[i]!.decide(req);
            expect(store.decide(`k${i}`, req, newDecision()), `key ${i} ${JSON.stringify(keys[i])} at +${now - T0} ms`).toEqual(expected);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a denied request is admitted at its retry instant and not a millisecond before', () => {
    fc.assert(
      fc.property(limitsArb, fc.array(gapArb, { minLength: 1, maxLength: 60 }), (limits, gaps) => {
        const store = new MemoryCounterStore();
        let now = T0;
        for (const gap of gaps) {
          now += gap;
          const windowStart = now - (now % WINDOW);
          const at = (t: number): DecisionRequest => {
            const start = t - (t % WINDOW);
            return { ...limits, windowStart: start, windowEnd: start + WINDOW, now: t, evictable: false };
          };
          const d = store.decide('k', at(now), newDecision());
          if (d.allowed) continue;
          expect(d.retryAtMs).toBeGreaterThan(now);
          // A cap of 0 never admits: the window end is only when the count restarts.
          if (limits.limit === 0) {
            expect(d.retryAtMs).toBe(windowStart + WINDOW);
            continue;
          }
          // Probing consumes nothing when denied; the probe at the retry instant is the next request.
          expect(store.decide('k', at(d.retryAtMs - 1), newDecision()).allowed).toBe(false);
          expect(store.decide('k', at(d.retryAtMs), newDecision()).allowed).toBe(true);
          now = d.retryAtMs;
        }
      }),
      { numRuns: 500 },
    );
  });
});
