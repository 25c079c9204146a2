import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseClientAddress } from '../../../../plugins/rate-limit/addresses.ts';
import { ZoneTime } from '../../../../plugins/rate-limit/calendar.ts';
import { Limiter } from '../../../../plugins/rate-limit/limiter.ts';
import { MemoryCounterStore } from '../../../../plugins/rate-limit/policies/memory.ts';
import { compileRuleSet, rangeAt, WindowPool } from '../../../../plugins/rate-limit/rules.ts';
import { rateLimitingSchema } from '../../../../plugins/rate-limit/schema.ts';
import { instantArb, offsetAt, transitionShapes, wall, ZONES } from './reference.ts';

const MINUTE = 60_000;

interface RangeSpec {
  from: number;
  /** 1..1440; 1440 is written 24:00. */
  to: number;
  disabled: boolean;
  disallowed: boolean;
}

const hhmm = (minute: number) => `${String(Math.floor(minute / 60)).padStart(2, '0')}:${String(minute % 60).padStart(2, '0')}`;

const specificArb: fc.Arbitrary<RangeSpec> = fc
  .record({
    from: fc.integer({ min: 0, max: 1439 }),
    to: fc.integer({ min: 0, max: 1440 }),
    disabled: fc.boolean(),
    disallowed: fc.boolean(),
  })
  .filter((r) => r.from !== r.to && r.to !== 0);

/** Same, but `00:00` as an end (crossing midnight from any start) is legal too. */
const specificOrMidnightArb = fc.oneof(specificArb, fc.record({ from: fc.integer({ min: 1, max: 1439 }), to: fc.constant(0), disabled: fc.boolean(), disallowed: fc.boolean() }));

interface RuleSpec {
  specific: RangeSpec[];
  allDay: { disabled: boolean; disallowed: boolean };
  allDayAt: number;
}

const ruleArb: fc.Arbitrary<RuleSpec> = fc.record({
  specific: fc.array(specificOrMidnightArb, { maxLength: 5 }),
  allDay: fc.record({ disabled: fc.boolean(), disallowed: fc.boolean() }),
  allDayAt: fc.nat(),
});

function toConfig(rule: RuleSpec): unknown {
  const ranges: unknown[] = rule.specific.map((r, i) => ({ time_from: hhmm(r.from), time_to: hhmm(r.to), disabled: r.disabled, disallowed: r.disallowed, rate: i + 1 }));
  ranges.splice(rule.allDayAt % (ranges.length + 1), 0, { is_all_day: true, ...rule.allDay, rate: 100 });
  return [{ time_range: ranges }];
}

/** The reference: the first enabled specific range with from <= minute < to (wrapping past midnight), else the all-day one if enabled. */
function refRange(rule: RuleSpec, minute: number): RangeSpec | RuleSpec['allDay'] | undefined {
  for (const r of rule.specific) {
    if (r.disabled) continue;
    if (covers(r, minute)) return r;
  }
  return rule.allDay.disabled ? undefined : rule.allDay;
}

const covers = (r: RangeSpec, minute: number) => (r.from < r.to ? r.from <= minute && minute < r.to : r.from <= minute || minute < r.to);

const wallMinute = (zone: string, t: number) => {
  const w = wall(zone, t);
  return w.hour * 60 + w.minute;
};

/** An instant at which the zone's clock shows `minute` of some day near t0 (if it ever does), give or take a millisecond. */
function instantShowing(zone: string, t0: number, minute: number, nudge: number): number {
  const w = wall(zone, t0);
  const local = Date.UTC(w.year, w.month - 1, w.day) + minute * MINUTE;
  return local - offsetAt(zone, local - offsetAt(zone, t0)) + nudge;
}

const times = new Map<string, ZoneTime>(ZONES.map((z) => [z, new ZoneTime(z)]));

/** A rule, a zone and instants: anywhere, near offset changes, or on a range's edges. */
const caseArb = fc.tuple(ruleArb, fc.constantFrom(...ZONES)).chain(([rule, zone]) => {
  const edges = rule.specific.flatMap((r) => [r.from, r.to % 1440]);
  const onEdge =
    edges.length === 0
      ? instantArb(zone)
      : fc.tuple(instantArb(zone), fc.constantFrom(...edges), fc.constantFrom(-1, 0, 1, MINUTE - 1)).map(([t0, m, nudge]) => instantShowing(zone, t0, m, nudge));
  // Instants close together too, which the per-minute cache answers.
  const walk = fc.oneof(instantArb(zone), onEdge).chain((t0) => fc.array(fc.integer({ min: -3 * MINUTE, max: 3 * MINUTE }).map((d) => t0 + d), { minLength: 1, maxLength: 8 }));
  const scattered = fc.array(fc.oneof(instantArb(zone), onEdge), { minLength: 1, maxLength: 8 });
  return fc.tuple(fc.constant(rule), fc.constant(zone), fc.oneof(scattered, walk));
});

describe('the range in force', () => {
  it('is the one a reference reading the wall clock from Intl picks, at any instant in any zone', () => {
    fc.assert(
      fc.property(caseArb, ([rule, zone, instants]) => {
        const time = times.get(zone)!;
        const set = compileRuleSet('channel', 'c', rateLimitingSchema.parse(toConfig(rule))!, new WindowPool(time));
        const limiter = new Limiter(new MemoryCounterStore({ maxCounters: 100 }), time);
        const client = parseClientAddress('192.0.2.1');
        for (const t of instants) {
          const minute = wallMinute(zone, t);
          const expected = refRange(rule, minute);
          const where = `${new Date(t).toISOString()} in ${zone} (wall ${hhmm(minute)})`;
          expect(time.minuteOfDay(t), where).toBe(minute);
          const got = rangeAt(set.rules[0]!, time.minuteOfDay(t));
          if (expected === undefined) expect(got, where).toBeUndefined();
          else if ('from' in expected) expect(got?.label, where).toBe(`${hhmm(expected.from)}-${hhmm(expected.to)}`);
          else expect(got?.allDay, where).toBe(true);
          // The firewall reads the same choice.
          const dropped = limiter.disallowedRange(set, client, t);
          expect(dropped, where).toBe(got?.disallowed ? got : undefined);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('a range holds from its start minute inclusive to its end minute exclusive', () => {
    fc.assert(
      fc.property(specificOrMidnightArb, fc.constantFrom(...ZONES), fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }), (range, zone, t0) => {
        const time = times.get(zone)!;
        const rule = { specific: [{ ...range, disabled: false }], allDay: { disabled: false, disallowed: false }, allDayAt: 0 };
        const set = compileRuleSet('channel', 'c', rateLimitingSchema.parse(toConfig(rule))!, new WindowPool(time));
        const label = `${hhmm(range.from)}-${hhmm(range.to)}`;
        const inForce = (t: number) => rangeAt(set.rules[0]!, time.minuteOfDay(t))?.label === label;
        // Only where the clock really shows those minutes (not inside a DST gap).
        const start = instantShowing(zone, t0, range.from, 0);
        if (wallMinute(zone, start) === range.from && wall(zone, start).second === 0) {
          expect(inForce(start)).toBe(true);
          const before = wallMinute(zone, start - 1);
          if (before === (range.from + 1439) % 1440) expect(inForce(start - 1)).toBe(covers(range, before));
        }
        const end = instantShowing(zone, t0, range.to % 1440, 0);
        if (wallMinute(zone, end) === range.to % 1440 && wall(zone, end).second === 0) {
          expect(inForce(end)).toBe(covers(range, range.to % 1440));
          if (wallMinute(zone, end - 1) === (range.to + 1439) % 1440) expect(inForce(end - 1)).toBe(true);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('follows the wall clock minute by minute through every kind of offset change', () => {
    // Deterministic sweep: an all-day range and one range per hour, at each minute from an
    // hour before each distinct change to an hour after (gaps skip ranges, overlaps repeat them).
    const hourly = Array.from({ length: 24 }, (_, h) => ({ time_from: hhmm(h * 60), time_to: hhmm(h * 60 + 30), rate: 1 }));
    const rules = rateLimitingSchema.parse([{ time_range: [{ is_all_day: true }, ...hourly] }])!;
    for (const [zone, change] of transitionShapes()) {
      const time = new ZoneTime(zone);
      const rule = compileRuleSet('channel', 'c', rules, new WindowPool(time)).rules[0]!;
      for (let t = change - 60 * MINUTE - 1; t <= change + 60 * MINUTE; t += MINUTE / 2) {
        const minute = wallMinute(zone, t);
        const where = `${new Date(t).toISOString()} in ${zone} (wall ${hhmm(minute)})`;
        const expected = minute % 60 < 30 ? `${hhmm(minute - (minute % 60))}-${hhmm(minute - (minute % 60) + 30)}` : 'all-day';
        expect(rangeAt(rule, time.minuteOfDay(t))?.label, where).toBe(expected);
      }
    }
  });
});
