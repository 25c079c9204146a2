import { ZoneTime as WallClockZone } from '../../sdk/plugin/index.ts';
import type { LimitUnit } from './schema.ts';

/**
 * Calendar windows in UTC or an IANA zone (the SDK's ZoneTime does the offsets).
 * Windows of a day or longer follow the zone's calendar (real month lengths, leap years,
 * 23- and 25-hour days at DST changes); hour and shorter windows are aligned to the
 * zone's wall clock with the offset in force, so they last their nominal length except where
 * an offset change moves the clock's marks (then they end or start at the change).
 * Intl is slow (microseconds), so callers cache: CalendarWindow recomputes only when
 * `now` leaves the current window, ZoneTime.minuteOfDay once per minute.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

function mod(a: number, b: number): number {
  return ((a % b) + b) % b;
}

export class ZoneTime extends WallClockZone {
  private minuteFrom = Number.NaN;
  private minuteValue = 0;

  /** Minute of the day (0..1439) on the zone's wall clock; recomputed once per minute. */
  minuteOfDay(now: number): number {
    if (now >= this.minuteFrom && now < this.minuteFrom + MINUTE) return this.minuteValue;
    // Zone offsets in use are whole minutes, so a UTC minute is one wall-clock minute.
    this.minuteFrom = now - mod(now, MINUTE);
    this.minuteValue = Math.floor(mod(now + this.offsetAt(now), DAY) / MINUTE);
    return this.minuteValue;
  }

  /** The calendar window of `unit` containing `now`, as [start, end) in ms. */
  windowAt(unit: LimitUnit, now: number, into: { start: number; end: number }): void {
    if (unit === 'second') {
      into.start = now - mod(now, SECOND);
      into.end = into.start + SECOND;
      return;
    }
    if (unit === 'minute' || unit === 'hour') {
      const length = unit === 'minute' ? MINUTE : HOUR;
      const offset = this.offsetAt(now);
      let start = now - mod(now + offset, length);
      let end = start + length;
      // An offset change by a fraction of the unit (Lord Howe's 30-minute DST, Pyongyang in
      // 2015) moves the clock's marks: the windows either side of it, each aligned to its own
      // offset, would overlap or leave a gap. Cut them at the change instead.
      if (this.offsetAt(start) !== offset) start = this.changeAfter(start, now);
      if (this.offsetAt(end - 1) !== offset) end = this.changeAfter(now, end - 1);
      into.start = start;
      into.end = end;
      return;
    }
    this.calendarWindow(unit, now, into);
    // A clock set back across midnight after the next date began (Newfoundland's 00:01
    // changes until 2011) shows the old date again: that hour belongs to the window that has
    // begun, or windows would overlap.
    if (now >= into.end) this.calendarWindow(unit, into.end, into);
  }

  /** The window of a day or longer of the local date `now` shows: from its first date's first instant to the next one's. */
  private calendarWindow(unit: 'day' | 'week' | 'month' | 'year', now: number, into: { start: number; end: number }): void {
    const wall = new Date(now + this.offsetAt(now));
    const y = wall.getUTCFullYear();
    const m = wall.getUTCMonth();
    const d = wall.getUTCDate();
    let from: number;
    let to: number;
    switch (unit) {
      case 'day':
        from = Date.UTC(y, m, d);
        to = Date.UTC(y, m, d + 1);
        break;
      case 'week': {
        const sinceMonday = (wall.getUTCDay() + 6) % 7;
        from = Date.UTC(y, m, d - sinceMonday);
        to = Date.UTC(y, m, d - sinceMonday + 7);
        break;
      }
      case 'month':
        from = Date.UTC(y, m, 1);
        to = Date.UTC(y, m + 1, 1);
        break;
      case 'year':
        from = Date.UTC(y, 0, 1);
        to = Date.UTC(y + 1, 0, 1);
        break;
    }
    into.start = this.localToUtc(from);
    into.end = this.localToUtc(to);
  }
}

/** The current window of one unit, recomputed only when the clock leaves it. */
export class CalendarWindow {
  start = Number.NaN;
  end = Number.NaN;

  constructor(
    private readonly time: ZoneTime,
    readonly unit: LimitUnit,
  ) {}

  /** Moves the window to contain `now` (no work while it already does). */
  at(now: number): this {
    if (!(now >= this.start && now < this.end)) this.time.windowAt(this.unit, now, this);
    return this;
  }
}
