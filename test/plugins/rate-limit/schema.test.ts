import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { SvcConfig } from '../../../kernel/config/schema.ts';
import { rateLimitingSchema, ruleSchema, timeRangeSchema, validateRateLimiting } from '../../../plugins/rate-limit/schema.ts';

function messages(result: { success: boolean; error?: { issues: Array<{ path: PropertyKey[]; message: string }> } }): string[] {
  return (result.error?.issues ?? []).map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('time range schema', () => {
  it('accepts the spec shape and fills defaults', () => {
    const range = timeRangeSchema.parse({ is_all_day: true, rate: 10, burst: 20, limit: 1000, limit_unit: 'day' });
    expect(range).toEqual({ is_all_day: true, disabled: false, disallowed: false, rate: 10, burst: 20, limit: 1000, limit_unit: 'day' });
    expect(timeRangeSchema.parse({ time_from: '22:00', time_to: '06:00', disallowed: true }).is_all_day).toBe(false);
    expect(timeRangeSchema.safeParse({ time_from: '18:00', time_to: '24:00' }).success).toBe(true);
  });

  it.each(['9:00', '24:00', '12:60', '1200', ' 09:00'])('refuses time_from %j', (from) => {
    const result = timeRangeSchema.safeParse({ time_from: from, time_to: '10:00' });
    expect(messages(result)).toContain('time_from: must be HH:MM, 00:00 to 23:59');
  });

  it('needs both ends on a specific range, and not the same time', () => {
    expect(messages(timeRangeSchema.safeParse({ time_from: '09:00' }))).toEqual(['time_to: required on a range that is not all-day']);
    expect(messages(timeRangeSchema.safeParse({ time_from: '09:00', time_to: '09:00' }))[0]).toMatch(/^time_to: equals time_from/);
  });

  it('refuses burst < 1, burst without rate, and non-integer figures', () => {
    expect(messages(timeRangeSchema.safeParse({ is_all_day: true, rate: 10, burst: 0 }))[0]).toMatch(/^burst:/);
    expect(messages(timeRangeSchema.safeParse({ is_all_day: true, burst: 5 }))).toEqual(['burst: burst needs rate']);
    expect(messages(timeRangeSchema.safeParse({ is_all_day: true, rate: 1.5 }))[0]).toMatch(/^rate:/);
    expect(messages(timeRangeSchema.safeParse({ is_all_day: true, rate: 0 }))[0]).toMatch(/^rate:/);
  });

  it('pairs limit with limit_unit and knows the units', () => {
    expect(messages(timeRangeSchema.safeParse({ is_all_day: true, limit: 5 }))).toEqual(['limit_unit: required when limit is set']);
    expect(messages(timeRangeSchema.safeParse({ is_all_day: true, limit_unit: 'day' }))).toEqual(['limit: required when limit_unit is set']);
    expect(messages(timeRangeSchema.safeParse({ is_all_day: true, limit: 5, limit_unit: 'fortnight' }))[0]).toMatch(/^limit_unit:/);
    for (const unit of ['second', 'minute', 'hour', 'day', 'week', 'month', 'year']) {
      expect(timeRangeSchema.safeParse({ is_all_day: true, limit: 5, limit_unit: unit }).success).toBe(true);
    }
  });

  it('refuses unknown keys', () => {
    expect(timeRangeSchema.safeParse({ is_all_day: true, rates: 5 }).success).toBe(false);
  });
});

describe('rule schema', () => {
  it('accepts IPv4/IPv6 addresses and ranges; an absent list matches everyone', () => {
    const rule = ruleSchema.parse({ cidr_list: ['10.0.0.0/8', '192.168.1.7', '2001:db8::/32', '::1'], time_range: [{ is_all_day: true }] });
    expect(rule.cidr_list).toHaveLength(4);
    expect(ruleSchema.parse({ time_range: [{ is_all_day: true }] })).toMatchObject({ cidr_list: [], per_client: false });
  });

  it.each(['10.0.0.0/33', '10.0.0', 'example.com', '10', '2001:db8::/129', ''])('refuses %j in cidr_list', (entry) => {
    const result = ruleSchema.safeParse({ cidr_list: [entry], time_range: [{ is_all_day: true }] });
    expect(messages(result)).toEqual(['cidr_list.0: not an IPv4/IPv6 address or CIDR range']);
  });

  it('needs at least one time range', () => {
    expect(messages(ruleSchema.safeParse({ time_range: [] }))).toEqual(['time_range: a rule needs at least its all-day range']);
  });
});

describe('validateConfig: exactly one all-day range per rule', () => {
  const yaml = `
security:
  - name: partner
    type: basic_auth
    rate_limiting:
      - time_range: [{ is_all_day: true, rate: 5 }]
      - cidr_list: [10.0.0.0/8]
        time_range:
          - { time_from: '09:00', time_to: '17:00', rate: 5 }
channel_rest:
  - name: orders
    url_path: /orders
    service: orders
    security: none
    rate_limiting:
      - time_range:
          - { is_all_day: true, rate: 5 }
          - { is_all_day: true, disallowed: true }
`;

  it('names the owner and the rule, with the YAML path', () => {
    const raw = parseYaml(yaml) as { security: Array<Record<string, unknown>>; channel_rest: Array<Record<string, unknown>> };
    const config = {
      security: raw.security.map((d) => ({ ...d, rate_limiting: rateLimitingSchema.parse(d.rate_limiting) })),
      channel_rest: raw.channel_rest.map((c) => ({ ...c, rate_limiting: rateLimitingSchema.parse(c.rate_limiting) })),
    } as unknown as SvcConfig;
    expect(validateRateLimiting(config)).toEqual([
      {
        path: ['security', 0, 'rate_limiting', 1, 'time_range'],
        message: "security 'partner', rate_limiting rule 2: needs exactly one all-day time range (is_all_day: true), found 0",
      },
      {
        path: ['channel_rest', 0, 'rate_limiting', 0, 'time_range'],
        message: "channel 'orders', rate_limiting rule 1: needs exactly one all-day time range (is_all_day: true), found 2",
      },
    ]);
  });

  it('has nothing to say about owners without rules', () => {
    const config = { security: [{ name: 'a', type: 'basic_auth' }], channel_rest: [{ name: 'c' }] } as unknown as SvcConfig;
    expect(validateRateLimiting(config)).toEqual([]);
  });
});
