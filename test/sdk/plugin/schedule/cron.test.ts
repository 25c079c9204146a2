import { describe, expect, it } from 'vitest';
import { Cron, CronError, ZoneTime } from '../../../../sdk/plugin/index.ts';

/** Cron expressions: parsing, refusals, and fire times in zones with daylight-saving changes. */

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
const at = (text: string) => Date.parse(text);
const UTC = new ZoneTime('UTC');
const NEW_YORK = new ZoneTime('America/New_York');

/** The next `count` fire times after `from`, as ISO strings (UTC). */
function fires(expression: string, from: string, count: number, zone = UTC): string[] {
  const cron = new Cron(expression);
  const out: string[] = [];
  let t = at(from);
  for (let i = 0; i < count; i++) out.push(iso((t = cron.next(t, zone))));
  return out;
}

describe('parsing', () => {
  it('reads 5 and 6 fields, ranges, steps, lists, names and macros', () => {
    expect(fires('*/15 * * * *', '2026-05-04T10:07:00Z', 3)).toEqual(['2026-05-04T10:15:00Z', '2026-05-04T10:30:00Z', '2026-05-04T10:45:00Z']);
    expect(fires('*/20 * * * * *', '2026-05-04T10:07:41Z', 3)).toEqual(['2026-05-04T10:08:00Z', '2026-05-04T10:08:20Z', '2026-05-04T10:08:40Z']);
    // 2026-05-08 is a Friday: the next weekday 09:00 is Monday.
    expect(fires('0 9 * * MON-FRI', '2026-05-08T10:00:00Z', 2)).toEqual(['2026-05-11T09:00:00Z', '2026-05-12T09:00:00Z']);
    expect(fires('0 0 1 jan,jul *', '2026-05-04T00:00:00Z', 2)).toEqual(['2026-07-01T00:00:00Z', '2027-01-01T00:00:00Z']);
    expect(fires('5/20 8 * * *', '2026-05-04T00:00:00Z', 3)).toEqual(['2026-05-04T08:05:00Z', '2026-05-04T08:25:00Z', '2026-05-04T08:45:00Z']);
    expect(fires('0 12 * * 7', '2026-05-04T00:00:00Z', 1)).toEqual(['2026-05-10T12:00:00Z']);
    expect(fires('@hourly', '2026-05-04T10:07:00Z', 1)).toEqual(['2026-05-04T11:00:00Z']);
    expect(fires('@weekly', '2026-05-04T10:07:00Z', 1)).toEqual(['2026-05-10T00:00:00Z']);
    expect(fires('@yearly', '2026-05-04T10:07:00Z', 1)).toEqual(['2027-01-01T00:00:00Z']);
  });

  it('a day matching either restricted day field fires (Vixie cron)', () => {
    // The 13th, and every Friday: 2026-11-13 is a Friday, 2026-11-06 and -20 are too.
    expect(fires('0 0 13 * FRI', '2026-11-01T00:00:00Z', 4)).toEqual(['2026-11-06T00:00:00Z', '2026-11-13T00:00:00Z', '2026-11-20T00:00:00Z', '2026-11-27T00:00:00Z']);
    expect(fires('0 0 13 * 1', '2026-12-01T00:00:00Z', 3)).toEqual(['2026-12-07T00:00:00Z', '2026-12-13T00:00:00Z', '2026-12-14T00:00:00Z']);
  });

  it('the 29th of February fires in leap years only', () => {
    expect(fires('0 0 29 2 *', '2026-03-01T00:00:00Z', 2)).toEqual(['2028-02-29T00:00:00Z', '2032-02-29T00:00:00Z']);
  });

  it.each([
    ['* * * *', /5 fields .* has 4/],
    ['* * * * * * *', /has 7/],
    ['60 * * * *', /minute: 60 is outside 0–59/],
    ['* 24 * * *', /hour: 24 is outside 0–23/],
    ['* * 0 * *', /day of month: 0 is outside 1–31/],
    ['* * * 13 *', /month: 13 is outside 1–12/],
    ['* * * * 8', /day of week: 8 is outside 0–7/],
    ['* * * FOO *', /month: 'FOO' is not a number or a name/],
    ['10-5 * * * *', /runs backwards/],
    ['*/0 * * * *', /step '0' must be a whole number of at least 1/],
    ['1,,2 * * * *', /is not a value/],
    ['@sometimes', /unknown macro @sometimes/],
    ['0 0 30 2 *', /never fires/],
    ['0 0 31 4,6,9,11 *', /never fires/],
  ])('refuses %s with a clear reason', (expression, reason) => {
    expect(() => new Cron(expression)).toThrow(CronError);
    expect(() => new Cron(expression)).toThrow(reason);
  });
});

describe('daylight-saving changes (America/New_York, 2026)', () => {
  // Spring forward: 2026-03-08 02:00 EST becomes 03:00 EDT (07:00Z). Fall back: 2026-11-01 02:00 EDT becomes 01:00 EST (06:00Z).
  it('a 02:30 daily job runs once on the spring-forward day, at the jump (03:00 EDT)', () => {
    expect(fires('30 2 * * *', '2026-03-07T00:00:00Z', 3, NEW_YORK)).toEqual(['2026-03-07T07:30:00Z', '2026-03-08T07:00:00Z', '2026-03-09T06:30:00Z']);
  });

  it('a 01:30 daily job runs once on the fall-back day, the first time the clock shows 01:30', () => {
    expect(fires('30 1 * * *', '2026-10-31T00:00:00Z', 3, NEW_YORK)).toEqual(['2026-10-31T05:30:00Z', '2026-11-01T05:30:00Z', '2026-11-02T06:30:00Z']);
  });

  it('an every-30-minutes job keeps its pace through both changes: no ticks in the skipped hour, both passes of the repeated hour', () => {
    expect(fires('*/30 * * * *', '2026-03-08T06:00:00Z', 4, NEW_YORK)).toEqual(['2026-03-08T06:30:00Z', '2026-03-08T07:00:00Z', '2026-03-08T07:30:00Z', '2026-03-08T08:00:00Z']);
    expect(fires('*/30 * * * *', '2026-11-01T04:59:00Z', 5, NEW_YORK)).toEqual(['2026-11-01T05:00:00Z', '2026-11-01T05:30:00Z', '2026-11-01T06:00:00Z', '2026-11-01T06:30:00Z', '2026-11-01T07:00:00Z']);
  });

  it('a job every minute of 01:xx runs 60 times on the fall-back day, not 120', () => {
    const cron = new Cron('* 1 * * *');
    let t = at('2026-11-01T04:00:00Z');
    const day: number[] = [];
    while ((t = cron.next(t, NEW_YORK)) < at('2026-11-02T00:00:00Z')) day.push(t);
    expect(day).toHaveLength(60);
    expect(iso(day[0]!)).toBe('2026-11-01T05:00:00Z');
    expect(iso(day.at(-1)!)).toBe('2026-11-01T05:59:00Z');
  });

  it('a 03:00 job on the spring-forward day runs at 03:00 EDT, once', () => {
    expect(fires('0 3 * * *', '2026-03-08T00:00:00Z', 2, NEW_YORK)).toEqual(['2026-03-08T07:00:00Z', '2026-03-09T07:00:00Z']);
  });
});

describe('other zones', () => {
  it('Lord Howe moves its clock by 30 minutes: a 02:15 job runs at the jump', () => {
    // 2026-10-04 02:00 LHST (+10:30) becomes 02:30 LHDT (+11): 2026-10-03T15:30Z.
    expect(fires('15 2 * * *', '2026-10-02T00:00:00Z', 3, new ZoneTime('Australia/Lord_Howe'))).toEqual(['2026-10-02T15:45:00Z', '2026-10-03T15:30:00Z', '2026-10-04T15:15:00Z']);
  });

  it('a daily job fires once on every local date of a year, across both changes (Europe/London)', () => {
    const london = new ZoneTime('Europe/London');
    const cron = new Cron('30 1 * * *');
    const dates = new Set<string>();
    let t = at('2026-01-01T00:00:00Z');
    let count = 0;
    while ((t = cron.next(t, london)) < at('2027-01-01T00:00:00Z')) {
      count++;
      dates.add(new Date(london.wallAt(t)).toISOString().slice(0, 10));
    }
    expect(count).toBe(365);
    expect(dates.size).toBe(365);
  });

  it('fire times always move forward and match their fields (or sit at a jump)', () => {
    const zones = ['UTC', 'America/New_York', 'Europe/Berlin', 'Australia/Lord_Howe', 'America/Santiago', 'Asia/Kolkata'].map((z) => new ZoneTime(z));
    for (const expression of ['*/7 * * * *', '0 */5 * * *', '15 0,1,2,3 * * 0', '0 0 * * *', '*/45 30 1-3 * * *']) {
      const cron = new Cron(expression);
      for (const zone of zones) {
        let t = at('2026-03-01T00:00:00Z');
        for (let i = 0; i < 300; i++) {
          const next = cron.next(t, zone);
          expect(next).toBeGreaterThan(t);
          const wall = zone.wallAt(next);
          // Either the wall time is one the expression allows, or the clock jumped over one at this instant.
          const matches = cron.nextWall(wall) === wall;
          const atJump = zone.offsetAt(next - 1) !== zone.offsetAt(next);
          expect(matches || atJump, `${expression} in ${zone.zone} at ${iso(next)}`).toBe(true);
          t = next;
        }
      }
    }
  });
});
