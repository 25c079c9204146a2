/**
 * Wall-clock arithmetic in UTC or an IANA zone, using only Intl for zone offsets: what the rate
 * limiter's calendar windows and the scheduler's cron times both need. A wall time is written as
 * milliseconds "as if UTC" (`Date.UTC(y, m, d, h, mi, s)`), an instant as plain epoch ms.
 * Intl is slow (microseconds a call): callers cache what they can.
 */

const SECOND = 1000;
const DAY = 86_400_000;

function mod(a: number, b: number): number {
  return ((a % b) + b) % b;
}

/** Whether Intl knows this IANA zone name. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export class ZoneTime {
  private readonly format: Intl.DateTimeFormat | undefined;

  constructor(readonly zone: string) {
    this.format =
      zone === 'UTC' || zone === 'Etc/UTC'
        ? undefined
        : new Intl.DateTimeFormat('en-US', {
            timeZone: zone,
            hourCycle: 'h23',
            year: 'numeric',
            month: 'numeric',
            day: 'numeric',
            hour: 'numeric',
            minute: 'numeric',
            second: 'numeric',
          });
  }

  /** Milliseconds to add to a UTC instant to get the zone's wall-clock time. */
  offsetAt(utcMs: number): number {
    if (this.format === undefined) return 0;
    const whole = utcMs - mod(utcMs, SECOND);
    let y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
    for (const part of this.format.formatToParts(whole)) {
      switch (part.type) {
        case 'year': y = Number(part.value); break;
        case 'month': mo = Number(part.value); break;
        case 'day': d = Number(part.value); break;
        case 'hour': h = Number(part.value); break;
        case 'minute': mi = Number(part.value); break;
        case 'second': s = Number(part.value); break;
      }
    }
    return Date.UTC(y, mo - 1, d, h, mi, s) - whole;
  }

  /** The wall time an instant shows. */
  wallAt(utcMs: number): number {
    return utcMs + this.offsetAt(utcMs);
  }

  /**
   * Every instant at which the wall clock shows `localMs`, earliest first: one on most days,
   * two in a fall-back overlap, none in a spring-forward gap.
   */
  instantsAt(localMs: number): number[] {
    const before = this.offsetAt(localMs - DAY);
    const after = this.offsetAt(localMs + DAY);
    const out: number[] = [];
    for (const t of before === after ? [localMs - before] : [localMs - Math.max(before, after), localMs - Math.min(before, after)]) {
      if (t + this.offsetAt(t) === localMs) out.push(t);
    }
    return out;
  }

  /**
   * The instant at which the wall clock first shows `localMs`. In a fall-back overlap the earlier
   * instant; in a spring-forward gap the end of the gap (where the jump lands).
   */
  localToUtc(localMs: number): number {
    const first = this.instantsAt(localMs)[0];
    if (first !== undefined) return first;
    return this.gapEnd(localMs);
  }

  /** For a wall time the clock jumps over: the instant the jump happens (the first after the gap). */
  gapEnd(localMs: number): number {
    const before = this.offsetAt(localMs - DAY);
    const after = this.offsetAt(localMs + DAY);
    // The jump lies between reading localMs with the new offset and with the old one.
    return this.changeAfter(localMs - after, localMs - before);
  }

  /**
   * The first instant in (lo, hi] whose offset differs from lo's, given that hi's does (offset
   * changes are rare and far apart: there is one in the span).
   */
  changeAfter(lo: number, hi: number): number {
    const before = this.offsetAt(lo);
    while (hi - lo > 1) {
      const mid = lo + Math.floor((hi - lo) / 2);
      if (this.offsetAt(mid) === before) lo = mid;
      else hi = mid;
    }
    return hi;
  }
}
