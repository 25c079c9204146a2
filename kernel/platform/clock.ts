/**
 * Time sources, injectable wherever time matters, so tests never sleep.
 *
 * Two kinds, not to be mixed: a calendar clock (`systemClock`, milliseconds since the epoch) for
 * times that are stored or shown, and a monotonic clock (`monotonicClock`) for durations,
 * deadlines and idle periods inside one process. The wall clock can be set back or forward (NTP,
 * a VM resumed, an operator); read for a duration, such a jump would time out every call at once
 * or stretch a deadline by the jump.
 */
export interface Clock {
  /** Milliseconds: since the epoch for a calendar clock; from an arbitrary origin for a monotonic one. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Never goes back and ignores changes of the wall clock: for durations only. */
export const monotonicNow = (): number => performance.now();
export const monotonicClock: Clock = { now: monotonicNow };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private t = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.t;
  }
  set(ms: number): void {
    this.t = ms;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}
