import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CalendarWindow, ZoneTime } from '../../../../plugins/rate-limit/calendar.ts';
import { LIMIT_UNITS, type LimitUnit } from '../../../../plugins/rate-limit/schema.ts';
import { dayNumber, instantArb, offsetAt, transitionShapes, wall, ZONES, zoneAndInstantArb } from './reference.ts';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

const times = new Map<string, ZoneTime>(ZONES.map((z) => [z, new ZoneTime(z)]));

function windowOf(zone: string, unit: LimitUnit, t: number): { start: number; end: number } {
  const w = { start: 0, end: 0 };
  times.get(zone)!.windowAt(unit, t, w);
  return w;
}

const fmt = (zone: string, t: number) => {
  const w = wall(zone, t);
  return `${new Date(t).toISOString()} (${w.year}-${w.month}-${w.day} ${w.hour}:${w.minute}:${w.second} ${zone})`;
};

/** The local date (as a day number) the window of `unit` containing wall date `d` must start on. */
function firstDate(unit: 'day' | 'week' | 'month' | 'year', w: ReturnType<typeof wall>): number {
  switch (unit) {
    case 'day':
      return dayNumber(w);
    case 'week':
      return dayNumber(w) - w.weekday;
    case 'month':
      return dayNumber({ year: w.year, month: w.month, day: 1 });
    case 'year':
      return dayNumber({ year: w.year, month: 1, day: 1 });
  }
}

function nextFirstDate(unit: 'day' | 'week' | 'month' | 'year', first: number): number {
  const d = new Date(first * 86_400_000);
  switch (unit) {
    case 'day':
      return first + 1;
    case 'week':
      return first + 7;
    case 'month':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) / 86_400_000;
    case 'year':
      return Date.UTC(d.getUTCFullYear() + 1, 0, 1) / 86_400_000;
  }
}

/**
 * A day (week, month, year) window starts at the first instant the local date reached its first
 * date B (a Monday for weeks, a 1st for months, 1 January for years) and ends at the first
 * instant it reached the next one. "First": where a clock set back at 00:01 (Newfoundland until
 * 2011) shows Saturday again after Sunday began, Sunday's window has begun all the same.
 */
function checkCalendarBoundaries(zone: string, unit: 'day' | 'week' | 'month' | 'year', t: number): void {
  const { start, end } = windowOf(zone, unit, t);
  const where = `${unit} of ${fmt(zone, t)}: [${fmt(zone, start)}, ${fmt(zone, end)})`;
  const date = (x: number) => dayNumber(wall(zone, x));
  const first = firstDate(unit, wall(zone, start));
  const next = nextFirstDate(unit, first);
  expect(start <= t && t < end, where).toBe(true);
  expect(date(start), where).toBeGreaterThanOrEqual(first);
  expect(date(start - 1), where).toBeLessThan(first);
  expect(date(start - 2 * HOUR), where).toBeLessThan(first);
  expect(date(end), where).toBeGreaterThanOrEqual(next);
  expect(date(end - 1), where).toBeLessThan(next);
  expect(date(end - 2 * HOUR), where).toBeLessThan(next);
  if (date(start) === first && offsetAt(zone, start - 1) === offsetAt(zone, start)) {
    const w = wall(zone, start);
    expect([w.hour, w.minute, w.second, w.ms], where).toEqual([0, 0, 0, 0]);
  }
}

const unitArb = fc.constantFrom(...LIMIT_UNITS);

describe('calendar windows in any zone', () => {
  it('contain the instant and tile time: the window after ends where the next one starts, the one before ends at the start', () => {
    fc.assert(
      fc.property(zoneAndInstantArb, unitArb, ([zone, t], unit) => {
        const { start, end } = windowOf(zone, unit, t);
        const where = `${unit} of ${fmt(zone, t)}: [${fmt(zone, start)}, ${fmt(zone, end)})`;
        expect(start <= t && t < end, where).toBe(true);
        expect(windowOf(zone, unit, end).start, `next window, ${where}`).toBe(end);
        expect(windowOf(zone, unit, start - 1).end, `previous window, ${where}`).toBe(start);
        expect(windowOf(zone, unit, start), where).toEqual({ start, end });
        expect(windowOf(zone, unit, end - 1), where).toEqual({ start, end });
      }),
      { numRuns: 600 },
    );
  });

  it('seconds, minutes and hours start on the local clock\'s mark, or where the offset changed; none runs longer than its unit', () => {
    fc.assert(
      fc.property(zoneAndInstantArb, fc.constantFrom('second', 'minute', 'hour' as const), ([zone, t], unit) => {
        const { start, end } = windowOf(zone, unit, t);
        const where = `${unit} of ${fmt(zone, t)}: [${fmt(zone, start)}, ${fmt(zone, end)})`;
        const length = unit === 'second' ? SECOND : unit === 'minute' ? MINUTE : HOUR;
        const w = wall(zone, start);
        const onMark = w.ms === 0 && (unit === 'second' || w.second === 0) && (unit !== 'hour' || w.minute === 0);
        const offsetChanged = offsetAt(zone, start - 1) !== offsetAt(zone, start);
        expect(onMark || offsetChanged, where).toBe(true);
        expect(end - start, where).toBeLessThanOrEqual(length);
        // A window no offset change touches lasts its full unit.
        if (offsetAt(zone, start) === offsetAt(zone, end) && onMark && wall(zone, end).ms === 0) {
          expect(end - start, where).toBe(length);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('days, weeks, months and years start at the first instant of their first local date (midnight, or where the clock lands past it)', () => {
    fc.assert(
      fc.property(zoneAndInstantArb, fc.constantFrom('day', 'week', 'month', 'year' as const), ([zone, t], unit) => {
        checkCalendarBoundaries(zone, unit, t);
      }),
      { numRuns: 1000 },
    );
  });

  it('a CalendarWindow moved through any sequence of instants is where a fresh computation puts it', () => {
    const caseArb = fc
      .tuple(fc.constantFrom(...ZONES), unitArb)
      .chain(([zone, unit]) =>
        fc.tuple(
          fc.constant(zone),
          fc.constant(unit),
          instantArb(zone).chain((t0) => fc.array(fc.integer({ min: -2 * HOUR, max: 2 * HOUR }).map((d) => t0 + d), { minLength: 1, maxLength: 30 })),
        ),
      );
    fc.assert(
      fc.property(caseArb, ([zone, unit, instants]) => {
        const window = new CalendarWindow(new ZoneTime(zone), unit);
        for (const t of instants) {
          const { start, end } = window.at(t);
          expect({ start, end }).toEqual(windowOf(zone, unit, t));
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('calendar windows at every kind of offset change', () => {
  // Deterministic: each distinct change of each zone, at instants around it (random instants
  // seldom land in the hour after a change, where a clock set back shows a date again).
  const offsets = [-2 * HOUR, -HOUR, -30 * MINUTE, -1, 0, 1, 15 * MINUTE, 30 * MINUTE - 1, 30 * MINUTE, 45 * MINUTE, HOUR - 1, HOUR, 90 * MINUTE, 2 * HOUR];

  it('windows of every unit contain the instant and meet their neighbours; long ones start at their first date', () => {
    for (const [zone, change] of transitionShapes()) {
      for (const d of offsets) {
        const t = change + d;
        for (const unit of LIMIT_UNITS) {
          const { start, end } = windowOf(zone, unit, t);
          const where = `${unit} of ${fmt(zone, t)}: [${fmt(zone, start)}, ${fmt(zone, end)})`;
          expect(start <= t && t < end, where).toBe(true);
          expect(windowOf(zone, unit, end).start, `next window, ${where}`).toBe(end);
          expect(windowOf(zone, unit, start - 1).end, `previous window, ${where}`).toBe(start);
          if (unit !== 'second' && unit !== 'minute' && unit !== 'hour') checkCalendarBoundaries(zone, unit, t);
        }
      }
    }
  });
});
