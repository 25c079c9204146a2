import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatTraceparent, parseTraceparent, parseTracestate, passOn } from '../../../../plugins/observe/tracing/w3c.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

/** The spec's grammar as regular expressions: the reference the parsers' character loops must agree with. */
const reference = {
  traceparent(value: string): { traceId: string; spanId: string; flags: number } | undefined {
    const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(value) ?? /^(?!00|ff)[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-|$)/.exec(value);
    if (!m || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return undefined;
    return { traceId: m[1]!, spanId: m[2]!, flags: parseInt(m[3]!, 16) & 3 };
  },
  tracestate(value: string): string | undefined {
    const key = /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})$/;
    const val = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
    const members = value.split(',').map((m) => m.replace(/^[ \t]+|[ \t]+$/g, '')).filter((m) => m !== '');
    const keys = members.map((m) => m.slice(0, Math.max(0, m.indexOf('='))));
    const ok = members.every((m, i) => m.includes('=') && key.test(keys[i]!) && val.test(m.slice(m.indexOf('=') + 1))) && new Set(keys).size === keys.length && keys.length <= 32;
    return ok && members.length ? members.join(',') : undefined;
  },
};
const SPAN = '00f067aa0ba902b7';
const VALID = `00-${TRACE}-${SPAN}-01`;

/** W3C Trace Context: what a caller may send, and what is ignored as malformed (never an error). */
describe('traceparent', () => {
  it('reads version 00: trace id, parent id, flags', () => {
    expect(parseTraceparent(VALID)).toEqual({ traceId: TRACE, spanId: SPAN, flags: 1 });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)).toEqual({ traceId: TRACE, spanId: SPAN, flags: 0 });
    // Level 2's random-trace-id flag is kept; flags the spec does not define are cleared.
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-03`)!.flags).toBe(3);
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-ff`)!.flags).toBe(3);
  });

  it('reads a later version by its first four fields, and what follows them only after a dash', () => {
    expect(parseTraceparent(`cc-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN, flags: 1 });
    expect(parseTraceparent(`cc-${TRACE}-${SPAN}-01-what-the-future-holds`)).toEqual({ traceId: TRACE, spanId: SPAN, flags: 1 });
    expect(parseTraceparent(`cc-${TRACE}-${SPAN}-01x`)).toBeUndefined();
  });

  it.each([
    ['empty', ''],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with more after the flags', `${VALID}-extra`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['a long parent id', `00-${TRACE}-${SPAN}0-01`],
    ['a one-digit flags field', `00-${TRACE}-${SPAN}-1`],
    ['non-hex characters', `00-${TRACE.slice(0, 31)}g-${SPAN}-01`],
    ['other separators', `00_${TRACE}_${SPAN}_01`],
    ['white space inside', `00- ${TRACE}-${SPAN}-01`],
    ['two headers joined', `${VALID}, ${VALID}`],
    ['a one-digit version', `0-${TRACE}-${SPAN}-01`],
  ])('ignores %s', (_why, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });

  it('ignores an absent header and a repeated one', () => {
    expect(parseTraceparent(undefined)).toBeUndefined();
    expect(parseTraceparent([VALID, VALID])).toBeUndefined();
  });

  it('passes a version-00 value on as it came, and rewrites any other as version 00', () => {
    expect(passOn(VALID, parseTraceparent(VALID)!)).toBe(VALID);
    const later = `cc-${TRACE}-${SPAN}-01-more`;
    expect(passOn(later, parseTraceparent(later)!)).toBe(VALID);
    const undefinedFlags = `00-${TRACE}-${SPAN}-09`;
    expect(passOn(undefinedFlags, parseTraceparent(undefinedFlags)!)).toBe(VALID);
  });

  it('formats what it parses back to the same value (any ids, either flag)', () => {
    const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
    fc.assert(
      fc.property(hex(32), hex(16), fc.integer({ min: 0, max: 3 }), (traceId, spanId, flags) => {
        fc.pre(/[1-9a-f]/.test(traceId) && /[1-9a-f]/.test(spanId));
        const value = formatTraceparent(traceId, spanId, flags);
        expect(value).toHaveLength(55);
        expect(parseTraceparent(value)).toEqual({ traceId, spanId, flags });
      }),
    );
  });

  it('agrees with the grammar on near-valid values and on any text', () => {
    // Mostly valid values with a few characters replaced, cut or added: where the edge cases are.
    const mutated = fc
      .tuple(fc.constantFrom(VALID, `cc-${TRACE}-${SPAN}-01`, `00-${'0'.repeat(32)}-${SPAN}-01`, `ff-${TRACE}-${SPAN}-01`), fc.array(fc.tuple(fc.nat(60), fc.constantFrom('0', 'f', 'F', 'g', '-', ' ', ''))), fc.constantFrom('', '-', '-x', 'x', ', ' + VALID))
      .map(([base, edits, tail]) => edits.reduce<string>((v, [at, c]) => v.slice(0, at) + c + v.slice(at + 1), base) + tail);
    fc.assert(fc.property(fc.oneof(mutated, fc.string({ maxLength: 80 })), (value) => {
        expect(parseTraceparent(value)).toEqual(reference.traceparent(value));
      }), { numRuns: 5000 });
  });
});

describe('tracestate', () => {
  it('keeps well-formed list members in order, without the white space around them', () => {
    expect(parseTracestate('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE')).toBe('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE');
    expect(parseTracestate(' rojo=1 ,\tcongo=2 ,, ')).toBe('rojo=1,congo=2');
    expect(parseTracestate('tenant1@vendor=x,a_b-c*d/e=value with spaces')).toBe('tenant1@vendor=x,a_b-c*d/e=value with spaces');
  });

  it('is absent when absent or empty', () => {
    expect(parseTracestate(undefined)).toBeUndefined();
    expect(parseTracestate('')).toBeUndefined();
    expect(parseTracestate(' , ')).toBeUndefined();
  });

  it.each([
    ['a member without =', 'rojo'],
    ['an upper-case key', 'Rojo=1'],
    ['a key starting with a digit (not multi-tenant)', '1rojo=1'],
    ['a value with =', 'rojo=a=b'],
    ['an empty value', 'rojo='],
    ['a control character in a value', 'rojo=1\u0001x'],
    ['a repeated key', 'rojo=1,rojo=2'],
    ['a system id longer than 14', 'tenant@abcdefghijklmno=1'],
    ['a key longer than 256', `${'k'.repeat(257)}=1`],
    ['a value longer than 256', `rojo=${'v'.repeat(257)}`],
  ])('is dropped whole for %s', (_why, value) => {
    expect(parseTracestate(`congo=ok,${value}`)).toBeUndefined();
  });

  it('agrees with the grammar on lists of near-valid members', () => {
    const key = fc.oneof(fc.stringMatching(/^[a-z0-9_\-*/@A-Z]{0,6}$/), fc.constantFrom('rojo', 't@v', '1a@b', 'a'.repeat(256), 'a'.repeat(257), `${'a'.repeat(241)}@${'b'.repeat(14)}`, `a@${'b'.repeat(15)}`));
    const value = fc.oneof(fc.stringMatching(/^[ -~\t]{0,5}$/), fc.constantFrom('v'.repeat(256), 'v'.repeat(257), ' x', 'x '));
    const member = fc.oneof(fc.tuple(key, value).map(([k, v]) => `${k}=${v}`), key, fc.constantFrom('', ' ', '\t'));
    const list = fc.array(member, { maxLength: 35 }).chain((ms) => fc.constantFrom(',', ', ', ' ,').map((sep) => ms.join(sep)));
    fc.assert(fc.property(list, (v) => {
        expect(parseTracestate(v)).toEqual(reference.tracestate(v));
      }), { numRuns: 3000 });
  });

  it('takes 32 members and drops a list of 33', () => {
    const members = (n: number) => Array.from({ length: n }, (_, i) => `k${i}=v`).join(',');
    expect(parseTracestate(members(32))).toBe(members(32));
    expect(parseTracestate(members(33))).toBeUndefined();
  });
});
