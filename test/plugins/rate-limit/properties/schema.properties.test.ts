import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AddressSet } from '../../../../plugins/rate-limit/addresses.ts';
import { isAddressOrCidr, ruleSchema, timeRangeSchema } from '../../../../plugins/rate-limit/schema.ts';
import { cidrEntryArb, junkArb, refCidr } from './reference.ts';

/** Entries that are almost CIDR ranges: junk, or junk and real addresses with odd prefixes. */
const entryArb = fc.oneof(
  cidrEntryArb,
  junkArb,
  fc
    .tuple(fc.oneof(cidrEntryArb.map((e) => e.split('/')[0]!), junkArb), fc.constantFrom('0', '8', '32', '33', '64', '128', '129', '08', '-1', '', ' 8', '8 ', '1e1', '0x8', '00000008'))
    .map(([a, p]) => `${a}/${p}`),
);

describe('cidr_list entries', () => {
  it('are accepted exactly when the reference reads them as an address or a range', () => {
    fc.assert(
      fc.property(entryArb, (entry) => {
        expect(isAddressOrCidr(entry)).toBe(refCidr(entry) !== undefined);
      }),
      { numRuns: 1000 },
    );
  });

  it('a rule the schema accepts compiles; one it refuses names the bad entry', () => {
    fc.assert(
      fc.property(fc.array(entryArb, { maxLength: 6 }), (entries) => {
        const parsed = ruleSchema.safeParse({ cidr_list: entries, time_range: [{ is_all_day: true }] });
        const bad = entries.findIndex((e) => refCidr(e) === undefined);
        expect(parsed.success).toBe(bad === -1);
        if (parsed.success) expect(() => AddressSet.parse(parsed.data.cidr_list)).not.toThrow();
        else expect(parsed.error.issues.map((i) => i.path)).toContainEqual(['cidr_list', bad]);
      }),
      { numRuns: 300 },
    );
  });
});

/** HH:MM-like text: right shape with any digits, or random junk. */
const timeTextArb = fc.oneof(
  fc.tuple(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 70 })).map(([h, m]) => `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`),
  fc.tuple(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 70 })).map(([h, m]) => `${h}:${m}`),
  fc.string({ maxLength: 6 }),
);

const isTime = (s: string) => /^\d\d:\d\d$/.test(s) && Number(s.slice(0, 2)) < 24 && Number(s.slice(3)) < 60;

describe('time ranges', () => {
  it('take HH:MM from 00:00 to 23:59 as a start, and 24:00 too as an end; never an empty range', () => {
    fc.assert(
      fc.property(timeTextArb, timeTextArb, (from, to) => {
        const parsed = timeRangeSchema.safeParse({ time_from: from, time_to: to });
        const valid = isTime(from) && (isTime(to) || to === '24:00') && from !== to;
        expect(parsed.success).toBe(valid);
      }),
      { numRuns: 1000 },
    );
  });

  it('burst needs rate, limit and limit_unit come together, and numbers are whole and in range', () => {
    const numberArb = fc.option(fc.oneof(fc.integer({ min: -2, max: 5 }), fc.constantFrom(0.5, Number.NaN, Number.POSITIVE_INFINITY)), { nil: undefined });
    fc.assert(
      fc.property(numberArb, numberArb, numberArb, fc.option(fc.constantFrom('second', 'minute', 'day', 'fortnight'), { nil: undefined }), (rate, burst, limit, unit) => {
        const parsed = timeRangeSchema.safeParse({ is_all_day: true, rate, burst, limit, limit_unit: unit });
        const whole = (n: number | undefined, min: number) => n === undefined || (Number.isInteger(n) && n >= min);
        const valid =
          whole(rate, 1) &&
          whole(burst, 1) &&
          whole(limit, 0) &&
          unit !== 'fortnight' &&
          (burst === undefined || rate !== undefined) &&
          (limit === undefined) === (unit === undefined);
        expect(parsed.success).toBe(valid);
      }),
      { numRuns: 1000 },
    );
  });
});
