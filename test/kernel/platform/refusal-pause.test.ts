import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../../kernel/platform/clock.ts';
import { RefusalPauses, TICK_MS } from '../../../kernel/platform/refusal-pause.ts';

/**
 * The wheel behind server.refusal_pause_ms (kernel/platform/refusal-pause.ts), with fake timers
 * and an injected clock: when a held connection is read again, what finishing and shutdown do,
 * and that the shared timer runs only while something is held. Over real sockets:
 * test/kernel/http/refusal-pause.test.ts.
 */

/** A connection that records when it was paused and resumed (clock ms). */
function connection(clock: ManualClock) {
  const events: Array<['pause' | 'resume', number]> = [];
  const socket = {
    destroyed: false,
    pause: () => events.push(['pause', clock.now()]),
    resume: () => events.push(['resume', clock.now()]),
  };
  return { socket: socket as unknown as Socket & { destroyed: boolean }, events };
}

/** A refusal's answer: finished unless said otherwise, with a Retry-After if given (seconds). */
function answer(finished = true, retryAfter?: number) {
  return { writableFinished: finished, getHeader: (name: string) => (name === 'retry-after' ? retryAfter : undefined) } as unknown as ServerResponse & { writableFinished: boolean };
}

describe('refusal pauses', () => {
  const clock = new ManualClock(1_000_000);
  let pauses: RefusalPauses;
  beforeEach(() => {
    vi.useFakeTimers();
    clock.set(1_000_000);
    pauses = new RefusalPauses(clock);
  });
  afterEach(() => {
    pauses.releaseAll();
    vi.useRealTimers();
  });
  /** Moves the clock and the timers together, a millisecond at a time. */
  const advance = (ms: number) => {
    for (let i = 0; i < ms; i++) {
      clock.advance(1);
      vi.advanceTimersByTime(1);
    }
  };

  it('reads the connection again after 3/4 of the pause to all of it, a tick early at most', () => {
    const random = vi.spyOn(Math, 'random');
    for (const r of [0, 0.5, 0.999]) {
      random.mockReturnValue(r);
      const c = connection(clock);
      const start = clock.now();
      pauses.holdAfter(answer(), c.socket, 1_000);
      advance(1_100);
      expect(c.events.map(([e]) => e)).toEqual(['pause', 'resume']);
      const wanted = Math.round(1_000 * (0.75 + r * 0.25));
      const held = c.events[1]![1] - start;
      expect(held).toBeLessThanOrEqual(wanted);
      expect(held).toBeGreaterThan(wanted - TICK_MS - 1);
    }
    random.mockRestore();
  });

  it('holds no longer than the answer’s Retry-After', () => {
    const c = connection(clock);
    const start = clock.now();
    pauses.holdAfter(answer(true, 0.2), c.socket, 4_000);
    advance(400);
    expect(c.events[1]?.[0]).toBe('resume');
    expect(c.events[1]![1] - start).toBeLessThanOrEqual(200);
  });

  it('pauses only once the answer has finished, in a later turn of the event loop', () => {
    const c = connection(clock);
    const res = answer(false);
    pauses.holdAfter(res, c.socket, 1_000);
    expect(c.events).toEqual([]); // not in the turn the refusal was made in
    advance(100);
    expect(c.events).toEqual([]); // not before its answer has finished
    res.writableFinished = true;
    advance(TICK_MS);
    expect(c.events.map(([e]) => e)).toEqual(['pause']);
    advance(1_000);
    expect(c.events.map(([e]) => e)).toEqual(['pause', 'resume']);
  });

  it('forgets a connection that closes, and does not resume it', () => {
    const c = connection(clock);
    pauses.holdAfter(answer(), c.socket, 500);
    advance(10);
    c.socket.destroyed = true;
    advance(600);
    expect(c.events.map(([e]) => e)).toEqual(['pause']);
    expect(pauses.size).toBe(0);
  });

  it('holds a connection again for its whole pause after a release', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.999);
    const c = connection(clock);
    pauses.holdAfter(answer(), c.socket, 1_000);
    advance(1_010);
    const again = clock.now();
    pauses.holdAfter(answer(), c.socket, 1_000);
    advance(1_010);
    expect(c.events.map(([e]) => e)).toEqual(['pause', 'resume', 'pause', 'resume']);
    expect(c.events[3]![1] - again).toBeGreaterThan(1_000 - TICK_MS - 1);
    vi.mocked(Math.random).mockRestore();
  });

  it('releases what fell due while the event loop was stalled past the whole wheel', () => {
    const c = connection(clock);
    pauses.holdAfter(answer(), c.socket, 1_000);
    advance(5);
    clock.advance(10_000); // the loop stalled for 10 s: no turn ran
    advance(TICK_MS);
    expect(c.events.map(([e]) => e)).toEqual(['pause', 'resume']);
  });

  it('does not release early a connection held while the wheel was behind, whose slot came round first', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.999);
    const a = connection(clock);
    pauses.holdAfter(answer(), a.socket, 4_000);
    advance(5);
    clock.advance(5_000); // a stall: the wheel is 250 ticks behind when the next refusal is held
    const b = connection(clock);
    const start = clock.now();
    pauses.holdAfter(answer(), b.socket, 1_000);
    advance(2 * TICK_MS);
    expect(b.events.map(([e]) => e)).toEqual(['pause']);
    advance(1_000);
    expect(b.events.map(([e]) => e)).toEqual(['pause', 'resume']);
    expect(b.events[1]![1] - start).toBeGreaterThan(1_000 - TICK_MS - 1);
    vi.mocked(Math.random).mockRestore();
  });

  it('runs its timer only while a connection is held or a refusal waits', () => {
    const c = connection(clock);
    expect(vi.getTimerCount()).toBe(0);
    pauses.holdAfter(answer(), c.socket, 300);
    advance(5);
    expect(vi.getTimerCount()).toBe(1);
    advance(400);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('at shutdown reads every held connection again, and holds none after', () => {
    const a = connection(clock);
    const b = connection(clock);
    pauses.holdAfter(answer(), a.socket, 2_000);
    pauses.holdAfter(answer(), b.socket, 2_000);
    advance(5);
    // The count tells the listener's shutdown to let the next poll read what they hold (kernel/http/app.ts).
    expect(pauses.releaseAll()).toBe(2);
    expect(a.events.map(([e]) => e)).toEqual(['pause', 'resume']);
    expect(b.events.map(([e]) => e)).toEqual(['pause', 'resume']);
    const late = connection(clock);
    pauses.holdAfter(answer(), late.socket, 2_000);
    advance(50);
    expect(late.events).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
