import type { Clock } from '../../sdk/plugin/clock.ts';

/** The kernel's import point for the clocks; the calendar clock and `Clock` are the plugin SDK's (sdk/plugin/clock.ts). */
export { systemClock, type Clock } from '../../sdk/plugin/clock.ts';

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
