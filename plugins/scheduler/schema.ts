import { z } from 'zod';
import { Cron, CronError, isTimeZone, listColumn, parseDuration, type ConfigIssue, localName, scopedRef } from '../../sdk/plugin/index.ts';

/**
 * The `scheduler_job` section: named jobs that start a service on a schedule. Each has exactly one
 * of `every` (an interval), `cron` (a cron expression in the job's zone) or `at` (once). The
 * plugin's `min_interval_ms` is the floor of an interval (checked where the options are known).
 */

const durationField = (what: string) =>
  z
    .union([z.string(), z.number()])
    .transform((value, ctx) => {
      const parsed = parseDuration(value);
      if (typeof parsed === 'number') return parsed;
      ctx.addIssue({ code: 'custom', message: parsed.error });
      return z.NEVER;
    })
    .describe(what);

/** An ISO 8601 date and time; without an offset it is read in the job's time zone. */
const dateTimeField = (what: string) =>
  z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:?\d{2})?)?$/, 'an ISO 8601 date and time, e.g. 2026-12-01T09:00:00+01:00 (without an offset, in the job\'s timezone)')
    .describe(what);

/** Retries of one run in the job's durable queue (the Use queue's settings of the same names). */
export const runDeliverySchema = z
  .object({
    max_attempts: z.number().int().min(1).max(100).default(3).describe('Attempts of one run in all, the first included; after the last one the run is failed and its event dead-lettered.'),
    base_delay_ms: z.number().int().min(0).max(86_400_000).default(1_000).describe('Backoff before the first retry; doubles per retry.'),
    max_delay_ms: z.number().int().min(0).max(86_400_000).default(60_000).describe('Ceiling of one backoff.'),
  })
  .strict();
export const DEFAULT_RUN_DELIVERY = runDeliverySchema.parse({});

export const jobSchema = z
  .object({
    name: z.string().min(1).max(200).refine((name) => /^[A-Za-z0-9_.:-]+$/.test(localName(name)), 'letters, digits and _ . : - (a tenant\'s after its `tenant/`)').describe('Job name: unique; shown in `svc job list` and the Dashboard.'),
    service: listColumn(scopedRef(z.string().min(1), { to: ['services'] }), 1, 'Service').describe('The service each run invokes.'),
    input: z
      .record(z.string(), z.unknown())
      .default({})
      .describe("The service's ctx.input on each run (an object), checked against its typed input model as a channel's JSON body would be."),
    every: listColumn(durationField('Run at this interval: 30s, 5m, 1h30m, 2d, or milliseconds. Ticks fall at whole multiples of it counted from `start` (or the Unix epoch), so every node agrees on them.'), 2, 'Every').optional(),
    cron: listColumn(
      z
      .string()
      .superRefine((text, ctx) => {
        try {
          new Cron(text);
        } catch (err) {
          if (!(err instanceof CronError)) throw err;
          ctx.addIssue({ code: 'custom', message: err.message });
        }
      })
      .describe('Run on a cron expression: 5 fields (minute hour day month weekday) or 6 with seconds first, or @hourly, @daily, @weekly, @monthly, @yearly. Read in `timezone`.'),
      3,
      'Cron',
    ).optional(),
    at: listColumn(dateTimeField('Run once, at this date and time.'), 4, 'At').optional(),
    timezone: z
      .string()
      .refine(isTimeZone, 'not an IANA time zone name (e.g. Europe/Berlin)')
      .optional()
      .describe('IANA time zone of `cron`, and of `at`, `start` and `end` written without an offset; default: server.timezone.'),
    start: dateTimeField('No run before this date and time; an interval\'s ticks are counted from it.').optional(),
    end: dateTimeField('No run after this date and time.').optional(),
    jitter: durationField('Each run starts up to this much after its tick, the same delay on every node (spreads jobs that share a tick).').optional(),
    enabled: listColumn(z.boolean(), 5, 'Enabled').default(true).describe('A disabled job keeps its history and takes no ticks.'),
    overlap: z
      .enum(['skip', 'queue', 'allow'])
      .default('skip')
      .describe('A tick that comes while the previous run is still going: skip it (recorded as skipped), queue it to run after, or allow both at once.'),
    missed: z
      .enum(['skip', 'run_once'])
      .default('skip')
      .describe('Ticks that fell while no node was up (or were later than the plugin\'s misfire_after_ms): skip them (recorded as missed), or run once for all of them when a node comes back.'),
    delivery: runDeliverySchema.default(DEFAULT_RUN_DELIVERY).describe('Retries of a failed run: each run goes through the Use queue (retries, then the dead-letter queue).'),
  })
  .strict()
  .superRefine((job, ctx) => {
    const kinds = (['every', 'cron', 'at'] as const).filter((k) => job[k] !== undefined);
    if (kinds.length !== 1) ctx.addIssue({ code: 'custom', path: kinds.length ? [kinds[1]!] : ['every'], message: kinds.length ? `give one of every, cron or at, not ${kinds.join(' and ')}` : 'give one of every, cron or at' });
    if (job.every !== undefined && job.every < 1) ctx.addIssue({ code: 'custom', path: ['every'], message: 'an interval must be at least 1 ms' });
  });

export type Job = z.infer<typeof jobSchema>;

export const sectionSchema = z.array(jobSchema).default([]).describe('Scheduled jobs: a service started on an interval, a cron expression, or once (plugins/scheduler).').meta({ title: 'Scheduled jobs' });

declare module '../../sdk/plugin/extensions.ts' {
  interface ConfigSections {
    scheduler_job: Job[];
  }
}

export const optionsSchema = z
  .object({
    min_interval_ms: z.number().int().min(1).max(86_400_000).default(1_000).describe('The shortest `every` a job may have (a floor against a typo such as `every: 1`).'),
    misfire_after_ms: z
      .number()
      .int()
      .min(0)
      .max(86_400_000)
      .default(60_000)
      .describe("A tick taken later than this after its time counts as missed (the job's `missed` policy decides); as Quartz's misfire threshold."),
    takeover_after_ms: z
      .number()
      .int()
      .min(0)
      .max(3_600_000)
      .default(1_000)
      .describe("Several nodes: each job's ticks are tried at their time by one node (spread by job name over the nodes up); the others try a tick this long after, should that node not have taken it (it died, it stalled)."),
    allow_concurrency: z.number().int().min(1).max(1_000).default(8).describe('Runs of one job at once on one node when its overlap is allow.'),
    history_keep: z.number().int().min(1).max(1_000_000).default(1_000).describe('Finished runs kept per job; older ones are deleted (hourly).'),
  })
  .strict()
  .default({ min_interval_ms: 1_000, misfire_after_ms: 60_000, takeover_after_ms: 1_000, allow_concurrency: 8, history_keep: 1_000 });

export type SchedulerOptions = z.infer<typeof optionsSchema>;

/** Names unique, intervals above the floor, the service known when the config names services. */
export function validateJobs(jobs: readonly Job[], options: SchedulerOptions): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const seen = new Map<string, number>();
  jobs.forEach((job, i) => {
    const first = seen.get(job.name);
    if (first !== undefined) issues.push({ path: ['scheduler_job', i, 'name'], message: `duplicate job name '${job.name}' (also scheduler_job[${first}])` });
    else seen.set(job.name, i);
    if (job.every !== undefined && job.every < options.min_interval_ms) {
      issues.push({ path: ['scheduler_job', i, 'every'], message: `an interval must be at least ${options.min_interval_ms} ms (plugins.scheduler.config.min_interval_ms)` });
    }
  });
  return issues;
}
