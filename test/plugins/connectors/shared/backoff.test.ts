import { describe, expect, it } from 'vitest';
import { Nap, reconnectDelayMs } from '../../../../plugins/connectors/shared/backoff.ts';

describe('reconnectDelayMs', () => {
  const reconnect = { min_ms: 100, max_ms: 1000 };
  it('doubles its ceiling per attempt up to max_ms, with full jitter', () => {
    expect([1, 2, 3, 4, 5, 40].map((a) => reconnectDelayMs(reconnect, a, () => 1))).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(reconnectDelayMs(reconnect, 4, () => 0.5)).toBe(400);
  });
  it('never waits under min_ms / 2, so a server refusing at once is no hot loop', () => {
    expect(reconnectDelayMs(reconnect, 3, () => 0)).toBe(50);
  });
});

describe('Nap', () => {
  it('ends at its time, when woken, or when the promise it was given settles', async () => {
    const nap = new Nap();
    let t = performance.now();
    await nap.sleep(30);
    expect(performance.now() - t).toBeGreaterThanOrEqual(25);

    t = performance.now();
    const woken = nap.sleep(10_000);
    nap.wake();
    await woken;
    expect(performance.now() - t).toBeLessThan(1000);

    t = performance.now();
    await nap.sleep(10_000, Promise.reject(new Error('connection lost')));
    expect(performance.now() - t).toBeLessThan(1000);
    nap.wake(); // nothing waits: no effect
  });
});
