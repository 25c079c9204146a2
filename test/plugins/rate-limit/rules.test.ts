import { describe, expect, it } from 'vitest';
import { AddressCache, AddressSet, parseClientAddress } from '../../../plugins/rate-limit/addresses.ts';
import { ZoneTime } from '../../../plugins/rate-limit/calendar.ts';
import { compileRuleSet, matchRule, rangeAt, WindowPool, type CompiledRule } from '../../../plugins/rate-limit/rules.ts';
import { rateLimitingSchema } from '../../../plugins/rate-limit/schema.ts';

const pool = new WindowPool(new ZoneTime('UTC'));

function compile(rules: unknown, name = 'orders') {
  return compileRuleSet('channel', name, rateLimitingSchema.parse(rules)!, pool);
}

function inSet(list: string[], client: string): boolean {
  return AddressSet.parse(list).has(parseClientAddress(client));
}

const at = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3));

describe('address matching', () => {
  it('IPv4 ranges and single addresses', () => {
    expect(inSet(['10.0.0.0/8'], '10.255.1.2')).toBe(true);
    expect(inSet(['10.0.0.0/8'], '11.0.0.0')).toBe(false);
    expect(inSet(['10.0.0.0/8'], '9.255.255.255')).toBe(false);
    expect(inSet(['192.168.1.7'], '192.168.1.7')).toBe(true);
    expect(inSet(['192.168.1.7'], '192.168.1.8')).toBe(false);
    expect(inSet(['0.0.0.0/0'], '203.0.113.9')).toBe(true);
    // Host bits in a range are ignored, as the network is meant.
    expect(inSet(['172.16.5.4/12'], '172.31.0.1')).toBe(true);
  });

  it('IPv6 ranges and single addresses', () => {
    expect(inSet(['2001:db8::/32'], '2001:db8:ffff::1')).toBe(true);
    expect(inSet(['2001:db8::/32'], '2001:db9::1')).toBe(false);
    expect(inSet(['::1'], '::1')).toBe(true);
    expect(inSet(['::1'], '::2')).toBe(false);
    expect(inSet(['2001:db8:0:1::/64'], '2001:db8::1:abcd:0:0:1')).toBe(true);
    expect(inSet(['10.0.0.0/8'], '2001:db8::1')).toBe(false);
  });

  it('an IPv4-mapped IPv6 client matches IPv4 ranges, and mapped ranges match IPv4 clients', () => {
    expect(inSet(['10.0.0.0/8'], '::ffff:10.1.2.3')).toBe(true);
    expect(inSet(['10.0.0.0/8'], '::ffff:11.1.2.3')).toBe(false);
    expect(inSet(['::ffff:10.0.0.0/104'], '10.9.9.9')).toBe(true);
    expect(parseClientAddress('::ffff:10.1.2.3').counterKey).toBe('10.1.2.3');
  });

  it('merges overlapping ranges and searches long lists', () => {
    const list = Array.from({ length: 5000 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`);
    list.push('10.0.0.0/16', '2001:db8::/48');
    const set = AddressSet.parse(list);
    expect(set.has(parseClientAddress('10.19.135.200'))).toBe(true);
    expect(set.has(parseClientAddress('10.20.0.1'))).toBe(false);
    expect(set.has(parseClientAddress('2001:db8:0:ffff::'))).toBe(true);
    expect(set.has(parseClientAddress('2001:db8:1::'))).toBe(false);
  });

  it('an unparsable client address matches no list', () => {
    expect(inSet(['0.0.0.0/0', '::/0'], 'unknown')).toBe(false);
    expect(parseClientAddress('')).toMatchObject({ valid: false, counterKey: 'unparsable' });
  });

  it('per-client keys group IPv6 by /64', () => {
    expect(parseClientAddress('2001:db8:1:2:3:4:5:6').counterKey).toBe('2001:db8:1:2::/64');
    expect(parseClientAddress('2001:db8:1:2::ffff').counterKey).toBe('2001:db8:1:2::/64');
    expect(parseClientAddress('203.0.113.9').counterKey).toBe('203.0.113.9');
  });

  it('the address cache answers the same parse and stays bounded', () => {
    const cache = new AddressCache(10);
    const first = cache.get('10.0.0.1');
    expect(cache.get('10.0.0.1')).toBe(first);
    for (let i = 0; i < 50; i++) cache.get(`10.0.1.${i}`);
    expect(cache.get('10.0.0.1')).toEqual(first);
  });
});

describe('rule order', () => {
  const allowThenDeny = [
    { cidr_list: ['10.0.0.0/8'], time_range: [{ is_all_day: true }] },
    { cidr_list: [], time_range: [{ is_all_day: true, disallowed: true }] },
  ];

  it('first matching rule wins: allow-then-catch-all is an allowlist', () => {
    const set = compile(allowThenDeny);
    expect(matchRule(set, parseClientAddress('10.1.1.1'))?.index).toBe(0);
    expect(matchRule(set, parseClientAddress('8.8.8.8'))?.index).toBe(1);
  });

  it('the reverse order is a denylist', () => {
    const set = compile([
      { cidr_list: ['203.0.113.0/24'], time_range: [{ is_all_day: true, disallowed: true }] },
      { time_range: [{ is_all_day: true, rate: 10 }] },
    ]);
    expect(rangeAt(matchRule(set, parseClientAddress('203.0.113.50'))!, 0)?.disallowed).toBe(true);
    expect(rangeAt(matchRule(set, parseClientAddress('198.51.100.1'))!, 0)?.rate).toBe(10);
  });

  it('no matching rule means no limit', () => {
    const set = compile([{ cidr_list: ['10.0.0.0/8'], time_range: [{ is_all_day: true, rate: 1 }] }]);
    expect(matchRule(set, parseClientAddress('192.0.2.1'))).toBeUndefined();
  });
});

describe('time range choice', () => {
  function rule(ranges: unknown[]): CompiledRule {
    return compile([{ time_range: ranges }]).rules[0]!;
  }

  it('a range crossing midnight covers both sides, end exclusive', () => {
    const r = rule([{ is_all_day: true, rate: 100 }, { time_from: '22:00', time_to: '06:00', rate: 1 }]);
    expect(rangeAt(r, at('23:30'))?.label).toBe('22:00-06:00');
    expect(rangeAt(r, at('00:00'))?.label).toBe('22:00-06:00');
    expect(rangeAt(r, at('05:59'))?.label).toBe('22:00-06:00');
    expect(rangeAt(r, at('22:00'))?.label).toBe('22:00-06:00');
    expect(rangeAt(r, at('06:00'))?.label).toBe('all-day');
    expect(rangeAt(r, at('21:59'))?.label).toBe('all-day');
  });

  it('a daytime range includes its start and excludes its end', () => {
    const r = rule([{ is_all_day: true, rate: 100 }, { time_from: '09:00', time_to: '17:00', rate: 1 }]);
    expect(rangeAt(r, at('08:59'))?.label).toBe('all-day');
    expect(rangeAt(r, at('09:00'))?.label).toBe('09:00-17:00');
    expect(rangeAt(r, at('16:59'))?.label).toBe('09:00-17:00');
    expect(rangeAt(r, at('17:00'))?.label).toBe('all-day');
  });

  it('the first enabled covering range wins; disabled ones are skipped', () => {
    const r = rule([
      { time_from: '09:00', time_to: '17:00', rate: 1, disabled: true },
      { time_from: '08:00', time_to: '18:00', rate: 2 },
      { time_from: '09:00', time_to: '10:00', rate: 3 },
      { is_all_day: true, rate: 100 },
    ]);
    expect(rangeAt(r, at('09:30'))?.rate).toBe(2);
    expect(rangeAt(r, at('07:59'))?.rate).toBe(100);
  });

  it('a disabled all-day range with no specific range in force lets everything through', () => {
    const r = rule([{ is_all_day: true, rate: 1, disabled: true }, { time_from: '09:00', time_to: '17:00', disallowed: true }]);
    expect(rangeAt(r, at('08:00'))).toBeUndefined();
    expect(rangeAt(r, at('09:00'))?.disallowed).toBe(true);
  });

  it('24:00 ends a range at midnight', () => {
    const r = rule([{ is_all_day: true }, { time_from: '18:00', time_to: '24:00', rate: 1 }]);
    expect(rangeAt(r, at('23:59'))?.label).toBe('18:00-24:00');
    expect(rangeAt(r, at('00:00'))?.label).toBe('all-day');
  });
});

describe('firewall flag', () => {
  it('a rule set disallows when some enabled range, all-day or specific, of any rule is disallowed', () => {
    expect(compile([{ time_range: [{ is_all_day: true, rate: 5 }] }]).disallows).toBe(false);
    expect(compile([{ time_range: [{ is_all_day: true }] }, { cidr_list: ['10.0.0.0/8'], time_range: [{ is_all_day: true, disallowed: true }] }]).disallows).toBe(true);
    expect(compile([{ time_range: [{ is_all_day: true }, { time_from: '22:00', time_to: '06:00', disallowed: true }] }]).disallows).toBe(true);
    // Disabled ranges never apply, so they give the firewall nothing to do.
    expect(compile([{ time_range: [{ is_all_day: true, disallowed: true, disabled: true }, { time_from: '22:00', time_to: '06:00', disallowed: true, disabled: true }] }]).disallows).toBe(false);
  });

  it('ranges know the 1-based rule position for log lines through their 0-based ruleIndex', () => {
    const set = compile([{ cidr_list: ['10.0.0.0/8'], time_range: [{ is_all_day: true }] }, { time_range: [{ time_from: '09:00', time_to: '17:00', rate: 1 }, { is_all_day: true, disallowed: true }] }]);
    expect(set.rules.map((r) => [r.allDay.ruleIndex, ...r.specific.map((x) => x.ruleIndex)])).toEqual([[0], [1, 1]]);
  });
});

describe('counter keys', () => {
  const base = [
    { cidr_list: ['10.0.0.0/8', '192.168.0.0/16'], time_range: [{ is_all_day: true, limit: 100, limit_unit: 'day' }, { time_from: '09:00', time_to: '17:00', rate: 5 }] },
    { time_range: [{ is_all_day: true, rate: 50 }] },
  ];
  const keys = (rules: unknown, name = 'orders') =>
    compile(rules, name).rules.map((r) => [r.allDay.key, ...r.specific.map((s) => s.key)]);

  it('are the same for the same rules, and survive changed limits, flags and reordering', () => {
    const before = keys(base);
    expect(keys(base)).toEqual(before);
    const edited = [
      { time_range: [{ is_all_day: true, rate: 500, disabled: true }] },
      { cidr_list: ['192.168.0.0/16', '10.0.0.0/8'], time_range: [{ time_from: '09:00', time_to: '17:00', rate: 50, disallowed: true }, { is_all_day: true, limit: 200, limit_unit: 'day' }] },
    ];
    const after = keys(edited);
    expect(after[1]).toEqual([before[0]![0], before[0]![1]]);
    expect(after[0]).toEqual(before[1]);
  });

  it('differ by owner, address list, per_client and range times', () => {
    const before = keys(base).flat();
    expect(new Set(before).size).toBe(3);
    expect(keys(base, 'other').flat().some((k) => before.includes(k))).toBe(false);
    const changedList = keys([{ ...base[0], cidr_list: ['10.0.0.0/8'] }])[0]!;
    expect(before).not.toContain(changedList[0]);
    const perClient = keys([{ ...base[0], per_client: true }])[0]!;
    expect(before).not.toContain(perClient[0]);
    const moved = keys([{ ...base[0], time_range: [base[0]!.time_range[0], { time_from: '09:00', time_to: '18:00', rate: 5 }] }])[0]!;
    expect(moved[0]).toBe(before[0]);
    expect(before).not.toContain(moved[1]);
  });

  it('keep identical rules and ranges apart', () => {
    const twice = keys([base[1], base[1]]).flat();
    expect(new Set(twice).size).toBe(2);
    const ranges = keys([{ time_range: [{ is_all_day: true }, { time_from: '01:00', time_to: '02:00', disabled: true }, { time_from: '01:00', time_to: '02:00' }] }])[0]!;
    expect(new Set(ranges).size).toBe(3);
  });

  it('keep owner names with separators apart', () => {
    const a = compile(base, 'a').key;
    const ab = compile(base, 'a/b').key;
    expect(ab.startsWith(a)).toBe(false);
  });
});
