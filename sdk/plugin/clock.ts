/**
 * Time sources, injectable wherever time matters, so tests never sleep.
 *
 * Two kinds, not to be mixed: a calendar clock (`systemClock`, milliseconds since the epoch) for
 * times that are stored or shown, and a monotonic clock (`monotonicClock`, kernel/platform/clock.ts)
 * for durations, deadlines and idle periods inside one process. The wall clock can be set back or
 * forward (NTP, a VM resumed, an operator); read for a duration, such a jump would time out every
 * call at once or stretch a deadline by the jump.
 */
export interface Clock {
  /** Milliseconds: since the epoch for a calendar clock; from an arbitrary origin for a monotonic one. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
