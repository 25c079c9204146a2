import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Ticker } from '../../../kernel/platform/ticker.ts';

/**
 * The timer behind the sweeps that run only while there is something to watch
 * (kernel/platform/ticker.ts), with fake timers: when it ticks, how a tick slows it down or stops
 * it, and how `atMost` starts and speeds it up. What it saves an idle server is measured in
 * test/kernel/sandbox/idle-wakeups.test.ts.
 */
describe('Ticker', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A ticker whose ticks ask for the periods in `wanted`, one per tick (0 once they run out), and record when they ran. */
  function ticker(wanted: number[]) {
    const at: number[] = [];
    const t = new Ticker(() => {
      at.push(Date.now());
      return wanted.shift() ?? 0;
    });
    return { t, at };
  }

  it('does not run until atMost is called', () => {
    const { t, at } = ticker([]);
    vi.advanceTimersByTime(10_000);
    expect(at).toEqual([]);
    expect(t.everyMs).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('ticks at the period asked for while the ticks want it, then stops when a tick returns 0', () => {
    const start = Date.now();
    const { t, at } = ticker([50, 50, 0]);
    t.atMost(50);
    vi.advanceTimersByTime(1_000);
    expect(at.map((x) => x - start)).toEqual([50, 100, 150]);
    expect(t.everyMs).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('slows down when a tick asks for a longer period', () => {
    const start = Date.now();
    const { t, at } = ticker([1_000, 1_000, 1_000]);
    t.atMost(50);
    vi.advanceTimersByTime(2_100);
    expect(at.map((x) => x - start)).toEqual([50, 1_050, 2_050]);
    expect(t.everyMs).toBe(1_000);
    t.stop();
  });

  it('speeds up at once when atMost asks for less than it runs at, and ignores a slower atMost', () => {
    const start = Date.now();
    const { t, at } = ticker([50, 50, 50]);
    t.atMost(1_000);
    vi.advanceTimersByTime(300);
    t.atMost(2_000);
    expect(t.everyMs).toBe(1_000);
    t.atMost(50);
    expect(t.everyMs).toBe(50);
    vi.advanceTimersByTime(100);
    // The first tick came 50 ms after atMost(50), not at the slow timer's 1,000.
    expect(at.map((x) => x - start)).toEqual([350, 400]);
    t.stop();
  });

  it('keeps a period set by atMost during a tick over what the tick returned', () => {
    let self: Ticker | undefined;
    const t = new Ticker(() => {
      self!.atMost(20);
      return 1_000;
    });
    self = t;
    t.atMost(100);
    vi.advanceTimersByTime(100);
    expect(t.everyMs).toBe(20);
    t.stop();
  });

  it('stops for good when stopped, whatever a later tick would want', () => {
    const { t, at } = ticker([50, 50, 50]);
    t.atMost(50);
    vi.advanceTimersByTime(60);
    t.stop();
    vi.advanceTimersByTime(1_000);
    expect(at).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('does not keep the process alive', () => {
    vi.useRealTimers();
    const t = new Ticker(() => 50);
    t.atMost(50);
    // An unref'd timer: hasRef() is false.
    const timer = (t as unknown as { timer: NodeJS.Timeout }).timer;
    expect(timer.hasRef()).toBe(false);
    t.stop();
  });
});
