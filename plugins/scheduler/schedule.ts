import { createHash } from 'node:crypto';
import { Cron, ZoneTime } from '../../sdk/plugin/index.ts';
import type { Job } from './schema.ts';

/**
 * A job's ticks as instants: the same on every node and after every restart, so a tick can be
 * named by its instant and claimed once across a cluster (store.ts).
 */
export interface Schedule {
  /** The first tick strictly after `after`, or undefined when there is none (past `end`, a one-time job's tick gone by). */
  next(after: number): number | undefined;
  /** How long after its tick a run starts: a delay derived from the job and the tick, so every node picks the same one. */
  jitterMs(tick: number): number;
}

/** An ISO 8601 date and time as an instant; without an offset it is a wall time in `zone`. */
export function instantOf(text: string, zone: ZoneTime): number {
  if (/(Z|[+-]\d{2}:?\d{2})$/i.test(text)) return Date.parse(text.replace(/([+-]\d{2})(\d{2})$/, '$1:$2'));
  const [date, time = '00:00:00'] = text.split('T');
  const [y, mo, d] = date!.split('-').map(Number);
  const [h, mi, s = '0'] = time.split(':');
  const wall = Date.UTC(y!, mo! - 1, d!, Number(h), Number(mi), 0) + Math.round(Number(s) * 1000);
  return zone.localToUtc(wall);
}

export function scheduleOf(job: Job, serverZone: string): Schedule {
  const zone = new ZoneTime(job.timezone ?? serverZone);
  const start = job.start === undefined ? undefined : instantOf(job.start, zone);
  const end = job.end === undefined ? Infinity : instantOf(job.end, zone);
  const jitter = job.jitter ?? 0;
  const within = (t: number | undefined) => (t === undefined || t > end ? undefined : t);
  const jitterMs = (tick: number) => (jitter > 0 ? Math.floor(fraction(`${job.name}\0${tick}`) * jitter) : 0);

  if (job.every !== undefined) {
    const every = job.every;
    const origin = start ?? 0;
    return {
      next(after) {
        if (after < origin) return within(origin);
        return within(origin + (Math.floor((after - origin) / every) + 1) * every);
      },
      jitterMs,
    };
  }
  if (job.cron !== undefined) {
    const cron = new Cron(job.cron);
    return {
      next(after) {
        return within(cron.next(start !== undefined && after < start ? start - 1 : after, zone));
      },
      jitterMs,
    };
  }
  const once = instantOf(job.at!, zone);
  return {
    next(after) {
      return after < once && (start === undefined || once >= start) ? within(once) : undefined;
    },
    jitterMs,
  };
}

/** A number in [0, 1) from a text: stable across nodes and restarts, spread like a random one. */
function fraction(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0) / 2 ** 32;
}
