import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../kernel/platform/clock.ts';
import { MemoryCounterStore } from '../../../plugins/rate-limit/policies/memory.ts';
import { newDecision, type DecisionRequest } from '../../../plugins/rate-limit/policies/types.ts';

const T0 = Date.UTC(2026, 0, 1);

function request(over: Partial<DecisionRequest>): DecisionRequest {
  return { rate: 0, burst: 0, limit: Number.POSITIVE_INFINITY, windowStart: 0, windowEnd: 0, now: T0, evictable: false, ...over };
}

/** Tries `count` requests at the same instant; returns how many were admitted. */
function burstAt(store: MemoryCounterStore, key: string, req: DecisionRequest, count: number): number {
  let admitted = 0;
  for (let i = 0; i < count; i++) if (store.decide(key, req, newDecision()).allowed) admitted++;
  return admitted;
}

describe('GCRA rate and burst', () => {
  it('admits exactly the burst at once, then tells when the next one fits', () => {
    const store = new MemoryCounterStore();
    const req = request({ rate: 100, burst: 200 });
    const remaining: number[] = [];
    for (let i = 0; i < 200; i++) {
      const d = store.decide('k', req, newDecision());
      expect(d.allowed).toBe(true);
      remaining.push(d.remaining);
    }
    expect(remaining[0]).toBe(199);
    expect(remaining[199]).toBe(0);
    const denied = store.decide('k', req, newDecision());
    expect(denied).toEqual({ allowed: false, remaining: 0, retryAtMs: T0 + 10 });
    expect(burstAt(store, 'k', req, 1000)).toBe(0);
  });

  it('sustains exactly `rate` per second after the burst, to the request', () => {
    const store = new MemoryCounterStore();
    const clock = new ManualClock(T0);
    const req = request({ rate: 100, burst: 200 });
    expect(burstAt(store, 'k', req, 500)).toBe(200);
    let admitted = 0;
    for (let ms = 1; ms <= 10_000; ms++) {
      clock.set(T0 + ms);
      req.now = clock.now();
      // Several tries per millisecond: a slot is taken once, never twice.
      admitted += burstAt(store, 'k', req, 3);
    }
    expect(admitted).toBe(1000);
  });

  it('stays exact for rates whose interval is not a whole millisecond, over an hour', () => {
    const store = new MemoryCounterStore();
    const req = request({ rate: 3, burst: 2 });
    let admitted = 0;
    for (let ms = 0; ms <= 3_600_000; ms++) {
      req.now = T0 + ms;
      admitted += burstAt(store, 'k', req, 1);
    }
    // A client trying every millisecond gets the burst, then one slot per 1/3 s, none lost or gained.
    expect(admitted).toBe(2 + 3 * 3600);
  });

  it('refills completely after an idle period', () => {
    const store = new MemoryCounterStore();
    const req = request({ rate: 10, burst: 5 });
    expect(burstAt(store, 'k', req, 10)).toBe(5);
    req.now = T0 + 60_000;
    expect(burstAt(store, 'k', req, 10)).toBe(5);
  });

  it('a wall clock set back an hour costs a client one emission interval, not an hour of refusals', () => {
    const store = new MemoryCounterStore();
    const req = request({ rate: 10, burst: 10 });
    expect(store.decide('k', req, newDecision()).allowed).toBe(true);
    req.now = T0 - 3_600_000;
    // Its bucket seems an hour in the future: counted as a burst just spent, nothing more.
    expect(store.decide('k', req, newDecision())).toEqual({ allowed: false, remaining: 0, retryAtMs: req.now + 100 });
    req.now += 100;
    expect(store.decide('k', req, newDecision()).allowed).toBe(true);
    req.now += 1_000;
    expect(burstAt(store, 'k', req, 20)).toBe(10);
  });

  it('keeps what was used when burst is raised on reload', () => {
    const store = new MemoryCounterStore();
    const req = request({ rate: 1, burst: 10 });
    expect(burstAt(store, 'k', req, 8)).toBe(8);
    req.burst = 20;
    expect(burstAt(store, 'k', req, 100)).toBe(12);
  });
});

describe('calendar cap', () => {
  const minute = { windowStart: T0, windowEnd: T0 + 60_000 };

  it('admits `limit` per window and answers the window end as retry time', () => {
    const store = new MemoryCounterStore();
    const req = request({ limit: 5, ...minute });
    const remaining = [0, 1, 2, 3, 4].map(() => store.decide('k', req, newDecision()).remaining);
    expect(remaining).toEqual([4, 3, 2, 1, 0]);
    expect(store.decide('k', req, newDecision())).toEqual({ allowed: false, remaining: 0, retryAtMs: T0 + 60_000 });
  });

  it('starts from zero in the next window', () => {
    const store = new MemoryCounterStore();
    const req = request({ limit: 5, ...minute });
    expect(burstAt(store, 'k', req, 9)).toBe(5);
    Object.assign(req, { now: T0 + 60_000, windowStart: T0 + 60_000, windowEnd: T0 + 120_000 });
    expect(burstAt(store, 'k', req, 9)).toBe(5);
  });

  it('a limit raised from 100 to 200 after 80 used leaves 120', () => {
    const store = new MemoryCounterStore();
    const req = request({ limit: 100, ...minute });
    expect(burstAt(store, 'k', req, 80)).toBe(80);
    req.limit = 200;
    expect(store.decide('k', req, newDecision()).remaining).toBe(119);
    expect(burstAt(store, 'k', req, 500)).toBe(119);
  });

  it('a limit of 0 denies everything until the window ends', () => {
    const store = new MemoryCounterStore();
    expect(store.decide('k', request({ limit: 0, ...minute }), newDecision())).toEqual({
      allowed: false,
      remaining: 0,
      retryAtMs: T0 + 60_000,
    });
  });
});

describe('rate and cap together', () => {
  it('a request denied by the cap takes nothing from the burst', () => {
    const store = new MemoryCounterStore();
    const req = request({ rate: 1, burst: 10, limit: 2, windowStart: T0, windowEnd: T0 + 1000 });
    expect(burstAt(store, 'k', req, 50)).toBe(2);
    // A new window at the same instant: only the cap resets, and the burst still holds 8.
    Object.assign(req, { limit: 100, windowStart: T0 + 1, windowEnd: T0 + 2000 });
    expect(burstAt(store, 'k', req, 50)).toBe(8);
  });

  it('a request denied by the rate takes nothing from the cap', () => {
    const store = new MemoryCounterStore();
    const req = request({ rate: 1, burst: 1, limit: 3, windowStart: T0, windowEnd: T0 + 3_600_000 });
    expect(burstAt(store, 'k', req, 100)).toBe(1);
    req.now = T0 + 1000;
    expect(burstAt(store, 'k', req, 100)).toBe(1);
    req.now = T0 + 2000;
    const last = store.decide('k', req, newDecision());
    expect(last).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('remaining is the tighter of burst and cap; retry is the later of the two', () => {
    const store = new MemoryCounterStore();
    const req = request({ rate: 1, burst: 5, limit: 3, windowStart: T0, windowEnd: T0 + 500 });
    expect(store.decide('k', req, newDecision()).remaining).toBe(2);
    expect(burstAt(store, 'k', req, 2)).toBe(2);
    // Cap spent (retry at 500) and burst not: the cap's time.
    expect(store.decide('k', req, newDecision()).retryAtMs).toBe(T0 + 500);
    Object.assign(req, { rate: 1, burst: 3 });
    // Now both deny: burst frees a slot at +1000, later than the cap's +500.
    expect(store.decide('k', req, newDecision())).toEqual({ allowed: false, remaining: 0, retryAtMs: T0 + 1000 });
  });
});

describe('clear and memory bounds', () => {
  it('clear(prefix) resets rate and cap counters of matching keys only', () => {
    const store = new MemoryCounterStore();
    const req = request({ rate: 1, burst: 2, limit: 2, windowStart: T0, windowEnd: T0 + 60_000 });
    for (const key of ['channel:a/r1/all-day/', 'channel:a/r2/all-day/', 'channel:ab/r1/all-day/']) burstAt(store, key, req, 5);
    expect(store.clear('channel:a/r1/')).toBe(1);
    expect(burstAt(store, 'channel:a/r1/all-day/', req, 5)).toBe(2);
    expect(burstAt(store, 'channel:a/r2/all-day/', req, 5)).toBe(0);
    expect(store.clear('channel:a/')).toBe(2);
    expect(burstAt(store, 'channel:ab/r1/all-day/', req, 5)).toBe(0);
  });

  it('evicts the least recently seen per-client counters when full, never shared ones in use', () => {
    const store = new MemoryCounterStore({ maxCounters: 100, sweepIntervalMs: Number.POSITIVE_INFINITY });
    const shared = request({ limit: 1000, windowStart: T0, windowEnd: T0 + 86_400_000 });
    const perClient = { ...shared, evictable: true };
    store.decide('shared', shared, newDecision());
    for (let i = 0; i < 500; i++) {
      perClient.now = shared.now = T0 + i;
      store.decide(`client-${i}`, perClient, newDecision());
      expect(store.size).toBeLessThanOrEqual(100);
    }
    // The shared counter kept its count; the newest clients kept theirs; the oldest were dropped.
    shared.now = T0 + 1000;
    expect(store.decide('shared', shared, newDecision()).remaining).toBe(998);
    expect(store.decide('client-499', perClient, newDecision()).remaining).toBe(998);
    expect(store.decide('client-0', perClient, newDecision()).remaining).toBe(999);
  });

  it('sweeps counters that hold nothing once their bucket refilled and window ended', () => {
    const store = new MemoryCounterStore({ sweepIntervalMs: 60_000 });
    const req = request({ rate: 10, burst: 10, evictable: true });
    for (let i = 0; i < 50; i++) store.decide(`client-${i}`, req, newDecision());
    const capped = request({ limit: 5, windowStart: T0, windowEnd: T0 + 3_600_000 });
    store.decide('hourly', capped, newDecision());
    expect(store.size).toBe(51);
    store.decide('other', request({ rate: 10, burst: 10, now: T0 + 60_000 }), newDecision());
    // The hourly cap still counts: it stays; the idle buckets went.
    expect(store.size).toBe(2);
    capped.now = T0 + 60_000;
    expect(store.decide('hourly', capped, newDecision()).remaining).toBe(3);
  });
});
