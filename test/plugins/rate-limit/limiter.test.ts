import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../kernel/platform/clock.ts';
import { AddressCache } from '../../../plugins/rate-limit/addresses.ts';
import { ZoneTime } from '../../../plugins/rate-limit/calendar.ts';
import { clearCounters, parseClearArgs } from '../../../plugins/rate-limit/clear.ts';
import { ALLOW, DENY, DROP, Limiter, Verdict } from '../../../plugins/rate-limit/limiter.ts';
import type { RateLimitState } from '../../../plugins/rate-limit/state.ts';
import { MemoryCounterStore } from '../../../plugins/rate-limit/policies/memory.ts';
import { compileRuleSet, WindowPool, type RuleSet } from '../../../plugins/rate-limit/rules.ts';
import { rateLimitingSchema } from '../../../plugins/rate-limit/schema.ts';

const NOON = Date.parse('2026-03-02T12:00:00Z');

function setup(zone = 'UTC') {
  const time = new ZoneTime(zone);
  const pool = new WindowPool(time);
  const store = new MemoryCounterStore();
  const limiter = new Limiter(store, time);
  const clock = new ManualClock(NOON);
  const addresses = new AddressCache();
  const compile = (rules: unknown, name = 'orders') => compileRuleSet('channel', name, rateLimitingSchema.parse(rules)!, pool);
  const check = (set: RuleSet, client = '198.51.100.7') => limiter.check(set, addresses.get(client), clock.now(), new Verdict()) as Verdict;
  /** How many of `count` requests get through now. */
  const admitted = (set: RuleSet, count: number, client?: string) => {
    let n = 0;
    for (let i = 0; i < count; i++) if (check(set, client).outcome === ALLOW) n++;
    return n;
  };
  return { store, clock, compile, check, admitted, pool };
}

describe('Limiter.check', () => {
  it('answers synchronously on the local policy (no promise per request)', () => {
    const { compile, pool } = setup();
    const store = new MemoryCounterStore();
    const limiter = new Limiter(store, pool.time);
    const set = compile([{ time_range: [{ is_all_day: true, rate: 5, limit: 10, limit_unit: 'minute' }] }]);
    const verdict = limiter.check(set, new AddressCache().get('198.51.100.7'), NOON, new Verdict());
    expect(verdict).toBeInstanceOf(Verdict);
    expect(verdict).toMatchObject({ outcome: ALLOW, counted: true, headerLimit: 10, headerRemaining: 4 });
  });

  it('leaves the headers to the other level when a store could not count (failing open)', async () => {
    const { compile, pool } = setup();
    const failing = { decide: (_key: string, _req: unknown, out: Verdict) => Promise.resolve(Object.assign(out, { allowed: true, uncounted: true, remaining: 0 })), clear: () => 0 };
    const limiter = new Limiter(new MemoryCounterStore(), pool.time, failing);
    const shared = compileRuleSet('security', 'partner', rateLimitingSchema.parse([{ time_range: [{ is_all_day: true, rate: 1 }] }])!, pool, 'redis');
    const own = compile([{ time_range: [{ is_all_day: true, rate: 5, burst: 8 }] }]);
    const client = new AddressCache().get('198.51.100.7');
    const verdict = await limiter.check(shared, client, NOON, new Verdict());
    expect(verdict).toMatchObject({ outcome: ALLOW, counted: false, uncounted: false });
    expect(limiter.check(own, client, NOON, verdict)).toMatchObject({ outcome: ALLOW, counted: true, headerLimit: 8, headerRemaining: 7 });
  });

  it('drops a disallowed client without counting, limits the others', () => {
    const { compile, check } = setup();
    const set = compile([
      { cidr_list: ['203.0.113.0/24'], time_range: [{ is_all_day: true, disallowed: true }] },
      { time_range: [{ is_all_day: true, rate: 1, burst: 2 }] },
    ]);
    expect(check(set, '203.0.113.9')).toMatchObject({ outcome: DROP, counted: false });
    expect(check(set)).toMatchObject({ outcome: ALLOW, counted: true, headerLimit: 2, headerRemaining: 1 });
    expect(check(set)).toMatchObject({ outcome: ALLOW, headerRemaining: 0 });
    expect(check(set)).toMatchObject({ outcome: DENY, retryAtMs: NOON + 1000 });
  });

  it('a range without rate or limit lets everything through uncounted', () => {
    const { compile, check } = setup();
    const set = compile([{ time_range: [{ is_all_day: true }] }]);
    expect(check(set)).toMatchObject({ outcome: ALLOW, counted: false });
  });

  it('shares one counter among the addresses a rule matches, unless per_client', () => {
    const { compile, admitted } = setup();
    const shared = compile([{ cidr_list: ['10.0.0.0/8'], time_range: [{ is_all_day: true, limit: 3, limit_unit: 'minute' }] }], 'shared');
    expect(admitted(shared, 2, '10.0.0.1')).toBe(2);
    expect(admitted(shared, 5, '10.0.0.2')).toBe(1);

    const perClient = compile([{ per_client: true, time_range: [{ is_all_day: true, limit: 3, limit_unit: 'minute' }] }], 'per');
    expect(admitted(perClient, 5, '10.0.0.1')).toBe(3);
    expect(admitted(perClient, 5, '10.0.0.2')).toBe(3);
    expect(admitted(perClient, 5, '::ffff:10.0.0.2')).toBe(0);
    expect(admitted(perClient, 5, '2001:db8:0:1::1')).toBe(3);
    expect(admitted(perClient, 5, '2001:db8:0:1::2')).toBe(0);
    expect(admitted(perClient, 5, '2001:db8:0:2::1')).toBe(3);
  });

  it('resets a per-minute cap at the top of the minute, per calendar', () => {
    const { compile, admitted, check, clock } = setup();
    const set = compile([{ time_range: [{ is_all_day: true, limit: 2, limit_unit: 'minute' }] }]);
    clock.set(Date.parse('2026-03-02T12:00:59.000Z'));
    expect(admitted(set, 3)).toBe(2);
    expect(check(set).retryAtMs).toBe(Date.parse('2026-03-02T12:01:00.000Z'));
    clock.set(Date.parse('2026-03-02T12:01:00.000Z'));
    expect(admitted(set, 3)).toBe(2);
  });

  it('each time range has its own counters, switching with the clock (office hours)', () => {
    const { compile, admitted, clock } = setup('Europe/Berlin');
    const set = compile([
      {
        time_range: [
          { is_all_day: true, limit: 2, limit_unit: 'day' },
          { time_from: '09:00', time_to: '17:00', limit: 5, limit_unit: 'day' },
        ],
      },
    ]);
    clock.set(Date.parse('2026-03-02T07:59:00Z')); // 08:59 in Berlin
    expect(admitted(set, 10)).toBe(2);
    clock.set(Date.parse('2026-03-02T08:00:00Z')); // 09:00
    expect(admitted(set, 10)).toBe(5);
    clock.set(Date.parse('2026-03-02T16:00:00Z')); // 17:00: back on the all-day counter, already spent today
    expect(admitted(set, 10)).toBe(0);
    clock.set(Date.parse('2026-03-02T23:00:00Z')); // midnight in Berlin: a new day
    expect(admitted(set, 10)).toBe(2);
  });

  it('a night-time firewall across midnight', () => {
    const { compile, check, clock } = setup();
    const set = compile([{ time_range: [{ is_all_day: true }, { time_from: '22:00', time_to: '06:00', disallowed: true }] }]);
    for (const [iso, outcome] of [
      ['2026-03-02T21:59:59Z', ALLOW],
      ['2026-03-02T22:00:00Z', DROP],
      ['2026-03-03T03:00:00Z', DROP],
      ['2026-03-03T05:59:59Z', DROP],
      ['2026-03-03T06:00:00Z', ALLOW],
    ] as const) {
      clock.set(Date.parse(iso));
      expect(check(set).outcome, iso).toBe(outcome);
    }
  });
});

describe('Limiter.disallowedRange (the firewall before authentication)', () => {
  it('names the disallowed range in force for the client, at the current time, and counts nothing', () => {
    const { compile, clock, store } = setup();
    const limiter = new Limiter(store, new ZoneTime('UTC'));
    const addresses = new AddressCache();
    const set = compile([
      { cidr_list: ['10.0.0.0/8'], time_range: [{ is_all_day: true, rate: 1, burst: 1 }] },
      { cidr_list: ['203.0.113.0/24'], time_range: [{ is_all_day: true, disallowed: true }] },
      { time_range: [{ is_all_day: true, rate: 1, burst: 1 }, { time_from: '22:00', time_to: '06:00', disallowed: true }] },
    ]);
    const decide = (client: string) => limiter.disallowedRange(set, addresses.get(client), clock.now());
    expect(decide('203.0.113.9')).toMatchObject({ ruleIndex: 1, label: 'all-day', disallowed: true });
    expect(decide('10.1.2.3')).toBeUndefined();
    expect(decide('198.51.100.7')).toBeUndefined();
    clock.set(Date.parse('2026-03-02T23:00:00Z'));
    expect(decide('198.51.100.7')).toMatchObject({ ruleIndex: 2, label: '22:00-06:00' });
    // A rule matched earlier shields its clients from later rules' firewall.
    expect(decide('10.1.2.3')).toBeUndefined();
    expect(store.size).toBe(0);
  });

  it('a drop found by check() carries the rule set and range for the log line', () => {
    const { compile, check } = setup();
    const set = compile([{ cidr_list: ['203.0.113.0/24'], time_range: [{ is_all_day: true, disallowed: true }] }]);
    const verdict = check(set, '203.0.113.9');
    expect(verdict.outcome).toBe(DROP);
    expect(verdict.droppedBy).toBe(set);
    expect(verdict.droppedRange).toMatchObject({ ruleIndex: 0, label: 'all-day' });
  });
});

describe('counters across reloads', () => {
  const rules = (limit: number, disabled = false) => [
    {
      time_range: [
        { is_all_day: true, limit, limit_unit: 'day' },
        { time_from: '11:00', time_to: '13:00', limit: 1, limit_unit: 'day', disabled },
      ],
    },
  ];

  it('a limit raised from 100 to 200 after 80 used leaves 120', () => {
    const { compile, admitted, clock } = setup();
    clock.set(Date.parse('2026-03-02T08:00:00Z'));
    expect(admitted(compile(rules(100)), 80)).toBe(80);
    expect(admitted(compile(rules(200)), 500)).toBe(120);
  });

  it('a rule inserted above an existing one does not disturb its counters', () => {
    const { compile, admitted, clock } = setup();
    clock.set(Date.parse('2026-03-02T08:00:00Z'));
    expect(admitted(compile(rules(10)), 4)).toBe(4);
    const inserted = [{ cidr_list: ['192.0.2.0/24'], time_range: [{ is_all_day: true, rate: 1 }] }, ...rules(10)];
    expect(admitted(compile(inserted), 50)).toBe(6);
  });

  it('disabling and re-enabling a range keeps its counters', () => {
    const { compile, admitted } = setup(); // noon: inside 11:00-13:00
    expect(admitted(compile(rules(100)), 5)).toBe(1);
    expect(admitted(compile(rules(100, true)), 5)).toBe(5); // all-day counter now
    expect(admitted(compile(rules(100, false)), 5)).toBe(0); // the range's counter still spent
  });
});

describe('clearing counters', () => {
  function stateWith(sets: RuleSet[], store: MemoryCounterStore): RateLimitState {
    return {
      store,
      channels: new Map(sets.map((s) => [s.name, s])),
      securities: new Map(),
    } as unknown as RateLimitState;
  }

  it('clears one rule, both its rate and its cap, or all rules of an owner', async () => {
    const { compile, admitted, store } = setup();
    const orders = compile([
      { cidr_list: ['10.0.0.0/8'], time_range: [{ is_all_day: true, rate: 1, burst: 1, limit: 3, limit_unit: 'day' }] },
      { time_range: [{ is_all_day: true, limit: 2, limit_unit: 'day' }] },
    ]);
    const other = compile([{ time_range: [{ is_all_day: true, limit: 1, limit_unit: 'day' }] }], 'other');
    expect(admitted(orders, 5, '10.0.0.1')).toBe(1);
    expect(admitted(orders, 5)).toBe(2);
    expect(admitted(other, 5)).toBe(1);
    const state = stateWith([orders, other], store);

    expect(await clearCounters(state, { kind: 'channel', name: 'orders', rule: 1 })).toEqual({ cleared: 1 });
    expect(admitted(orders, 5, '10.0.0.1')).toBe(1); // the burst is back (the rate still spaces the rest)
    expect(admitted(orders, 5)).toBe(0);

    expect(await clearCounters(state, { kind: 'channel', name: 'orders' })).toEqual({ cleared: 2 });
    expect(admitted(orders, 5)).toBe(2);
    expect(admitted(other, 5)).toBe(0);
    await expect(clearCounters(state, { kind: 'channel', name: 'orders', rule: 3 })).rejects.toThrow(/has 2 rate limiting rule\(s\); there is no rule 3/);
  });

  it('parses the CLI arguments', () => {
    expect(parseClearArgs(['--channel', 'orders'])).toEqual({ kind: 'channel', name: 'orders', rule: undefined });
    expect(parseClearArgs(['--security=partner', '--rule', '2'])).toEqual({ kind: 'security', name: 'partner', rule: 2 });
    expect(parseClearArgs(['--security', 'a', '--channel', 'b'])).toBe('name exactly one of --security or --channel');
    expect(parseClearArgs([])).toBe('name exactly one of --security or --channel');
    expect(parseClearArgs(['--channel', 'a', '--rule', '0'])).toMatch(/^--rule must be/);
    expect(parseClearArgs(['--channel'])).toBe('--channel needs a value');
    expect(parseClearArgs(['--chanel', 'a'])).toBe("unknown argument '--chanel'");
  });
});
