import { describe, expect, it } from 'vitest';
import { ChannelSeries, percentileOf } from '../../../../plugins/observe/traffic/recorder.ts';

/** The latency histograms behind traffic.stats' p95 (plugins/observe/traffic/recorder.ts). */
describe("a channel's p95", () => {
  it('reads a percentile from log-2 buckets, interpolated within the bucket', () => {
    // 100 requests: 90 under 1 ms, 10 in [64, 128) ms.
    const hist = new Uint32Array(20);
    hist[0] = 90;
    hist[7] = 10;
    expect(percentileOf(hist, 0.95)).toBe(96);
    expect(percentileOf(hist, 0.5)).toBeCloseTo(0.56, 2);
    expect(percentileOf(new Uint32Array(20), 0.95)).toBeNull();
  });

  it('per minute and over the window; a minute that left the window counts no more', () => {
    const series = new ChannelSeries('orders');
    const minute0 = 60 * 1_000_000;
    for (let i = 1; i <= 100; i++) series.record(minute0 + (i % 60), 200, i < 96 ? 3 : 700);
    for (let i = 0; i < 50; i++) series.record(minute0 + 120 + (i % 60), 200, 10);
    const now = minute0 + 179;
    const s = series.summary(now, 180, 60);
    // Minute 0: 95 at 3 ms, 5 at 700 ms → p95 in [2, 4); minute 1: nothing; minute 2: all at 10 ms, in [8, 16).
    expect(s.series.p95_ms).toHaveLength(3);
    expect(s.series.p95_ms![0]).toBeGreaterThanOrEqual(2);
    expect(s.series.p95_ms![0]).toBeLessThanOrEqual(4);
    expect(s.series.p95_ms![1]).toBeNull();
    expect(s.series.p95_ms![2]).toBeGreaterThanOrEqual(8);
    expect(s.series.p95_ms![2]).toBeLessThan(16);
    // 150 requests over the window: the slowest 5 are 700 ms, under the 95th (at 142.5).
    expect(s.totals.p95_ms).toBeGreaterThanOrEqual(8);
    expect(s.totals.p95_ms).toBeLessThan(16);
    // Per-second steps have no per-bucket p95; the totals still do.
    expect(series.summary(now, 60, 1).series.p95_ms).toBeUndefined();
    // 15 minutes on, minute 0 is overwritten by nothing and gone from the window.
    expect(series.summary(now + 900, 900, 60).totals.p95_ms).toBeNull();
  });
});
