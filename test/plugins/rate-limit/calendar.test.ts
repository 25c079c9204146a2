import { describe, expect, it } from 'vitest';
import { CalendarWindow, ZoneTime } from '../../../plugins/rate-limit/calendar.ts';
import type { LimitUnit } from '../../../plugins/rate-limit/schema.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function windowOf(zone: string, unit: LimitUnit, iso: string): [string, string] {
  const w = { start: 0, end: 0 };
  new ZoneTime(zone).windowAt(unit, Date.parse(iso), w);
  return [new Date(w.start).toISOString(), new Date(w.end).toISOString()];
}

/** The window just before and just after `boundary`: they must meet there. */
function across(zone: string, unit: LimitUnit, boundary: string) {
  const at = Date.parse(boundary);
  return {
    before: windowOf(zone, unit, new Date(at - 1).toISOString()),
    after: windowOf(zone, unit, boundary),
  };
}

describe('calendar windows in UTC', () => {
  it.each([
    ['second', '2026-05-05T10:20:31.000Z', '2026-05-05T10:20:30.000Z', '2026-05-05T10:20:32.000Z'],
    ['minute', '2026-05-05T10:21:00.000Z', '2026-05-05T10:20:00.000Z', '2026-05-05T10:22:00.000Z'],
    ['hour', '2026-05-05T11:00:00.000Z', '2026-05-05T10:00:00.000Z', '2026-05-05T12:00:00.000Z'],
    ['day', '2026-05-06T00:00:00.000Z', '2026-05-05T00:00:00.000Z', '2026-05-07T00:00:00.000Z'],
    // 2026-05-11 is a Monday: weeks run Monday to Monday.
    ['week', '2026-05-11T00:00:00.000Z', '2026-05-04T00:00:00.000Z', '2026-05-18T00:00:00.000Z'],
    ['month', '2026-06-01T00:00:00.000Z', '2026-05-01T00:00:00.000Z', '2026-07-01T00:00:00.000Z'],
    ['year', '2027-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', '2028-01-01T00:00:00.000Z'],
  ] as const)('%s windows meet at the boundary %s', (unit, boundary, firstStart, secondEnd) => {
    const { before, after } = across('UTC', unit, boundary);
    expect(before).toEqual([firstStart, boundary]);
    expect(after).toEqual([boundary, secondEnd]);
  });

  it.each([
    ['2026-02-10T00:00:00Z', 28],
    ['2028-02-10T00:00:00Z', 29],
    ['2000-02-10T00:00:00Z', 29],
    ['2100-02-10T00:00:00Z', 28],
    ['2026-04-10T00:00:00Z', 30],
    ['2026-01-10T00:00:00Z', 31],
    ['2026-12-31T23:59:59.999Z', 31],
  ])('the month of %s has %i days', (iso, days) => {
    const [start, end] = windowOf('UTC', 'month', iso);
    expect((Date.parse(end) - Date.parse(start)) / DAY).toBe(days);
  });

  it('leap years have 366 days, others 365', () => {
    const length = (iso: string) => {
      const [start, end] = windowOf('UTC', 'year', iso);
      return (Date.parse(end) - Date.parse(start)) / DAY;
    };
    expect(length('2028-07-01T00:00:00Z')).toBe(366);
    expect(length('2026-07-01T00:00:00Z')).toBe(365);
  });

  it('the year end rolls every unit over at once', () => {
    const last = '2026-12-31T23:59:59.999Z';
    const first = '2027-01-01T00:00:00.000Z';
    for (const unit of ['second', 'minute', 'hour', 'day', 'month', 'year'] as const) {
      expect(windowOf('UTC', unit, last)[1]).toBe(first);
      expect(windowOf('UTC', unit, first)[0]).toBe(first);
    }
    // 2026-12-31 is a Thursday: its week runs into 2027.
    expect(windowOf('UTC', 'week', last)).toEqual(['2026-12-28T00:00:00.000Z', '2027-01-04T00:00:00.000Z']);
  });
});

describe('calendar windows in a zone with DST', () => {
  it('days follow local midnight, 23 hours on the spring change and 25 in the autumn', () => {
    expect(windowOf('Europe/Berlin', 'day', '2026-03-29T12:00:00Z')).toEqual(['2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z']);
    expect(windowOf('Europe/Berlin', 'day', '2026-10-25T12:00:00Z')).toEqual(['2026-10-24T22:00:00.000Z', '2026-10-25T23:00:00.000Z']);
  });

  it('months and years start at local midnight', () => {
    expect(windowOf('Europe/Berlin', 'month', '2026-03-15T00:00:00Z')).toEqual(['2026-02-28T23:00:00.000Z', '2026-03-31T22:00:00.000Z']);
    expect(windowOf('America/New_York', 'year', '2026-12-31T23:00:00Z')).toEqual(['2026-01-01T05:00:00.000Z', '2027-01-01T05:00:00.000Z']);
    // 23:30 on Dec 31 in UTC is already next year in Tokyo.
    expect(windowOf('Asia/Tokyo', 'year', '2026-12-31T23:30:00Z')).toEqual(['2026-12-31T15:00:00.000Z', '2027-12-31T15:00:00.000Z']);
  });

  it('a week spanning the autumn change lasts 169 hours', () => {
    const [start, end] = windowOf('America/New_York', 'week', '2026-11-01T12:00:00Z');
    expect(start).toBe('2026-10-26T04:00:00.000Z');
    expect((Date.parse(end) - Date.parse(start)) / HOUR).toBe(169);
  });

  it('where the clock skips midnight, the day starts when it lands (01:00)', () => {
    // Cuba springs forward at 00:00 -> 01:00.
    expect(windowOf('America/Havana', 'day', '2026-03-08T12:00:00Z')).toEqual(['2026-03-08T05:00:00.000Z', '2026-03-09T04:00:00.000Z']);
  });

  it('hours are whole hours of the local clock, also twice through the repeated hour', () => {
    expect(windowOf('Europe/Berlin', 'hour', '2026-10-25T00:30:00Z')).toEqual(['2026-10-25T00:00:00.000Z', '2026-10-25T01:00:00.000Z']);
    expect(windowOf('Europe/Berlin', 'hour', '2026-10-25T01:30:00Z')).toEqual(['2026-10-25T01:00:00.000Z', '2026-10-25T02:00:00.000Z']);
    expect(windowOf('Asia/Kolkata', 'hour', '2026-04-04T12:00:00Z')).toEqual(['2026-04-04T11:30:00.000Z', '2026-04-04T12:30:00.000Z']);
  });
});

describe('minute of day and the window cache', () => {
  it('reads the local wall clock', () => {
    expect(new ZoneTime('UTC').minuteOfDay(Date.parse('2026-07-01T22:30:00Z'))).toBe(22 * 60 + 30);
    expect(new ZoneTime('Europe/Berlin').minuteOfDay(Date.parse('2026-07-01T22:30:00Z'))).toBe(30);
    expect(new ZoneTime('Europe/Berlin').minuteOfDay(Date.parse('2026-01-01T22:30:00Z'))).toBe(23 * 60 + 30);
    expect(new ZoneTime('Asia/Kolkata').minuteOfDay(Date.parse('2026-01-01T00:00:00Z'))).toBe(5 * 60 + 30);
  });

  it('is right on consecutive minutes through the cache', () => {
    const time = new ZoneTime('Europe/Berlin');
    const t = Date.parse('2026-01-01T22:58:59.999Z');
    expect(time.minuteOfDay(t)).toBe(23 * 60 + 58);
    expect(time.minuteOfDay(t + 1)).toBe(23 * 60 + 59);
    expect(time.minuteOfDay(t + 60_001)).toBe(0);
  });

  it('CalendarWindow moves only when the clock leaves it', () => {
    const window = new CalendarWindow(new ZoneTime('UTC'), 'minute');
    const t = Date.parse('2026-01-01T00:00:30Z');
    expect(window.at(t)).toMatchObject({ start: t - 30_000, end: t + 30_000 });
    expect(window.at(t + 29_999).start).toBe(t - 30_000);
    expect(window.at(t + 30_000).start).toBe(t + 30_000);
    // A clock set back lands in the right window too.
    expect(window.at(t - 60_000).start).toBe(t - 90_000);
  });
});
