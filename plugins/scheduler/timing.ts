import { Cron, CronError, isTimeZone, parseDuration, ZoneTime } from '../../sdk/plugin/index.ts';
import type { SchedulerTiming, Timing, TimingSpec } from '../capabilities.ts';

/**
 * The scheduler's reading of durations and cron expressions, offered to other plugins as the
 * `scheduler.timing` capability: an interval's ticks fall at whole multiples of it from the epoch
 * (every node agrees on them, as on a job's), a cron's in its zone; with both, whichever is first.
 */
export function schedulerTiming(serverZone: () => string): SchedulerTiming {
  return {
    parse(spec: TimingSpec): Timing | { error: string } {
      if (spec.every === undefined && spec.cron === undefined) return { error: 'give every, cron or both' };
      let every: number | undefined;
      if (spec.every !== undefined) {
        const parsed = parseDuration(spec.every);
        if (typeof parsed !== 'number') return { error: `every: ${parsed.error}` };
        if (parsed < 1) return { error: 'every: an interval must be at least 1 ms' };
        every = parsed;
      }
      let cron: Cron | undefined;
      if (spec.cron !== undefined) {
        try {
          cron = new Cron(spec.cron);
        } catch (err) {
          if (!(err instanceof CronError)) throw err;
          return { error: `cron: ${err.message}` };
        }
      }
      const zoneName = spec.timezone ?? serverZone();
      if (!isTimeZone(zoneName)) return { error: `timezone: '${zoneName}' is not an IANA time zone` };
      const zone = new ZoneTime(zoneName);
      return {
        next(after) {
          const byInterval = every === undefined ? undefined : (Math.floor(after / every) + 1) * every;
          const byCron = cron?.next(after, zone);
          if (byInterval === undefined) return byCron;
          return byCron === undefined ? byInterval : Math.min(byInterval, byCron);
        },
      };
    },
  };
}
