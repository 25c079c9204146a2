import { z } from 'zod';
import { isAddressOrCidr } from './addresses.ts';
import type { ConfigIssue } from '../../sdk/plugin/index.ts';
import type { SvcConfig } from '../../sdk/plugin/index.ts';

/** Calendar units of a hard cap (`limit_unit`). */
export const LIMIT_UNITS = ['second', 'minute', 'hour', 'day', 'week', 'month', 'year'] as const;
export type LimitUnit = (typeof LIMIT_UNITS)[number];

const HHMM = /^(?:[01]\d|2[0-3]):[0-5]\d$/;

const timeOfDay = z.string().regex(HHMM, 'must be HH:MM, 00:00 to 23:59');
/** `24:00` is accepted as an end only, meaning the end of the day. */
const endTimeOfDay = z
  .string()
  .refine((s) => HHMM.test(s) || s === '24:00', 'must be HH:MM, 00:00 to 24:00');

/** An address or CIDR range as the spec allows them: dotted IPv4 or IPv6, with or without /prefix. */
export { isAddressOrCidr };

export const timeRangeSchema = z
  .object({
    is_all_day: z.boolean().default(false).describe('The default range of the rule, used when no specific range covers the current time; each rule has exactly one.'),
    time_from: timeOfDay.optional().describe('Start of a specific range, HH:MM (inclusive), in server.timezone; ignored on the all-day range.'),
    time_to: endTimeOfDay
      .optional()
      .describe('End of a specific range, HH:MM (exclusive; 24:00 = end of day); earlier than time_from means the range crosses midnight.'),
    disabled: z.boolean().default(false).describe('A disabled range is skipped; its counters are kept for when it is enabled again.'),
    disallowed: z.boolean().default(false).describe('Firewall: while this range applies, connections are dropped with no HTTP response.'),
    rate: z.number().int().min(1).optional().describe('Sustained requests per second.'),
    burst: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('Largest spike admitted at once (needs rate); defaults to rate.'),
    limit: z.number().int().min(0).optional().describe('Hard cap of requests per calendar interval (needs limit_unit).'),
    limit_unit: z.enum(LIMIT_UNITS).optional().describe('Calendar interval of limit: second, minute, hour, day, week (from Monday), month or year.'),
  })
  .strict()
  .superRefine((range, ctx) => {
    if (!range.is_all_day) {
      if (range.time_from === undefined) ctx.addIssue({ code: 'custom', path: ['time_from'], message: 'required on a range that is not all-day' });
      if (range.time_to === undefined) ctx.addIssue({ code: 'custom', path: ['time_to'], message: 'required on a range that is not all-day' });
      if (range.time_from !== undefined && range.time_from === range.time_to) {
        ctx.addIssue({ code: 'custom', path: ['time_to'], message: 'equals time_from: an empty range (use is_all_day for the whole day)' });
      }
    }
    if (range.burst !== undefined && range.rate === undefined) {
      ctx.addIssue({ code: 'custom', path: ['burst'], message: 'burst needs rate' });
    }
    if (range.limit !== undefined && range.limit_unit === undefined) {
      ctx.addIssue({ code: 'custom', path: ['limit_unit'], message: 'required when limit is set' });
    }
    if (range.limit_unit !== undefined && range.limit === undefined) {
      ctx.addIssue({ code: 'custom', path: ['limit'], message: 'required when limit_unit is set' });
    }
  })
  .describe('A time range of a rule, with its own counters.');

export const ruleSchema = z
  .object({
    cidr_list: z
      .array(z.string().refine(isAddressOrCidr, 'not an IPv4/IPv6 address or CIDR range'))
      .default([])
      .describe('Client addresses or CIDR ranges this rule applies to; empty matches every client.'),
    time_range: z.array(timeRangeSchema).min(1, 'a rule needs at least its all-day range').describe('Time ranges; exactly one is all-day.'),
    per_client: z
      .boolean()
      .default(false)
      .describe('Keep counters per client address (IPv6 per /64) instead of one counter shared by every address the rule matches.'),
  })
  .strict()
  .describe('A rate limiting / firewall rule; rules are tried top to bottom and the first whose cidr_list matches applies.');

export const rateLimitingSchema = z
  .array(ruleSchema)
  .optional()
  .describe('Rate limiting and IP firewall rules, evaluated top to bottom; no matching rule means no limit.');

export type TimeRange = z.infer<typeof timeRangeSchema>;
export type Rule = z.infer<typeof ruleSchema>;

/** Problems of one rule list that need the whole rule (the all-day range count). Paths are relative to the list. */
export function ruleListIssues(rules: readonly Rule[], owner: string): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  rules.forEach((rule, r) => {
    const allDay = rule.time_range.filter((t) => t.is_all_day).length;
    if (allDay !== 1) {
      issues.push({
        path: [r, 'time_range'],
        message: `${owner}, rate_limiting rule ${r + 1}: needs exactly one all-day time range (is_all_day: true), found ${allDay}`,
      });
    }
  });
  return issues;
}

/** validateConfig contribution: rule-level checks, naming the owner and the rule (1-based), and redis policies without a Redis. */
export function validateRateLimiting(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const options = optionsOf(config);
  // Unparsable options are reported by the plugin loader; a redis policy is then not judged.
  if (options !== undefined && options.redis === undefined) {
    const check = (kind: string, list: readonly { name: string; rate_limiting_policy?: unknown }[], owner: (name: string) => string) =>
      list.forEach((entry, i) => {
        if (entry.rate_limiting_policy === 'redis') {
          issues.push({ path: [kind, i, 'rate_limiting_policy'], message: `${owner(entry.name)}: rate_limiting_policy redis needs plugins.rate-limit.config.redis (a Redis URL)` });
        }
      });
    check('security', config.security, (name) => `security '${name}'`);
    check('channel_rest', config.channel_rest, (name) => `channel '${name}'`);
  }
  config.security.forEach((def, i) => {
    const rules = def.rate_limiting as Rule[] | undefined;
    if (!rules) return;
    for (const issue of ruleListIssues(rules, `security '${def.name}'`)) {
      issues.push({ path: ['security', i, 'rate_limiting', ...issue.path], message: issue.message });
    }
  });
  config.channel_rest.forEach((channel, i) => {
    const rules = channel.rate_limiting;
    if (!rules) return;
    for (const issue of ruleListIssues(rules, `channel '${channel.name}'`)) {
      issues.push({ path: ['channel_rest', i, 'rate_limiting', ...issue.path], message: issue.message });
    }
  });
  return issues;
}

/** Where a rule set's counters live: `local` in this node's memory, `redis` shared by every node using the same Redis. */
export const POLICIES = ['local', 'redis'] as const;
export type Policy = (typeof POLICIES)[number];

export const policySchema = z
  .enum(POLICIES)
  .optional()
  .describe(
    "Where this entry's rate_limiting counters live: local (this node's memory, the default) or redis (one counter per key across every node sharing plugins.rate-limit.config.redis). Absent: the plugin's policy option.",
  );

declare module '../../sdk/plugin/extensions.ts' {
  interface ChannelFields {
    rate_limiting?: Rule[];
    rate_limiting_policy?: Policy;
  }
}

/** Options under `plugins.rate-limit.config`. */
export const optionsSchema = z
  .object({
    max_counters: z
      .number()
      .int()
      .min(100)
      .default(100_000)
      .describe('Most counters kept in memory; past it the idlest per-client counters are evicted (their clients start afresh).'),
    policy: z
      .enum(POLICIES)
      .default('local')
      .describe('Policy of the rate_limiting rule sets whose entry names no rate_limiting_policy: local (per node, in memory) or redis (cluster-wide).'),
    redis: z
      .string()
      .regex(/^rediss?:\/\/[^\s]+$/, 'must be a redis:// or rediss:// URL')
      .optional()
      .describe(
        'Redis for the redis policy: redis://[user:password@]host:port[/db], rediss:// for TLS. Give a password through ${ENV}; the URL is logged with its password masked. Changes apply after a restart.',
      ),
    redis_connect_timeout_ms: z.number().int().min(100).default(2000).describe('How long one attempt to connect to Redis may take, in ms; it is retried with backoff meanwhile.'),
    redis_timeout_ms: z
      .number()
      .int()
      .min(10)
      .default(500)
      .describe('How long a request waits for its Redis decision, in ms, before on_redis_error decides instead.'),
    on_redis_error: z
      .enum(['allow', 'deny'])
      .default('allow')
      .describe(
        'When Redis cannot decide (down, unreachable, too slow): allow admits the request uncounted (fail-open), deny refuses it with 429 and Retry-After one second later (fail-closed). Each use is counted (svc_rate_limit_redis_errors_total) and logged, at most one line per 10 s.',
      ),
    redis_key_prefix: z
      .string()
      .min(1)
      .default('svc:rl:')
      .describe('Prefix of every Redis key of the plugin (several installations may share one Redis with different prefixes).'),
  })
  .strict()
  .superRefine((options, ctx) => {
    if (options.policy === 'redis' && options.redis === undefined) {
      ctx.addIssue({ code: 'custom', path: ['redis'], message: 'required when policy is redis' });
    }
  })
  .default({ max_counters: 100_000, policy: 'local', redis_connect_timeout_ms: 2000, redis_timeout_ms: 500, on_redis_error: 'allow', redis_key_prefix: 'svc:rl:' });

export type RateLimitOptions = z.infer<typeof optionsSchema>;

/** The plugin's options as a config names them (its validateConfig sees the config, not the parsed options). */
export function optionsOf(config: SvcConfig): RateLimitOptions | undefined {
  const entry = config.plugins?.['rate-limit'];
  const parsed = optionsSchema.safeParse(typeof entry === 'object' ? (entry.config ?? {}) : {});
  return parsed.success ? parsed.data : undefined;
}

/** The policy of one entry's rule set. */
export function policyOf(entry: object, options: Pick<RateLimitOptions, 'policy'>): Policy {
  return ((entry as { rate_limiting_policy?: Policy }).rate_limiting_policy) ?? options.policy;
}
