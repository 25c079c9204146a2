import { z } from 'zod';
import { isTimeZone } from '../../sdk/plugin/index.ts';
import { Cron, CronError } from './cron.ts';
import { parseDuration } from './duration.ts';

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

export const jobSchema = z
  .object({
    name: z.string().min(1).max(200).regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits and _ . : -').describe('Job name: unique; shown in `svc job list` and the Dashboard.'),
    service: z.string().min(1).describe('The service each run invokes.'),
    input: z.unknown().optional().describe('The input each run gives the service (any JSON value), checked against its typed input model as a channel\'s would be.'),
    every: durationField('Run at this interval: 30s, 5m, 1h30m, 2d, or milliseconds. Ticks fall at whole multiples of it counted from `start` (or the Unix epoch), so every node agrees on them.').optional(),
    cron: z
      .string()
      .superRefine((text, ctx) => {
        try {
          new Cron(text);
        } catch (err) {
          if (!(err instanceof CronError)) throw err;
          ctx.addIssue({ code: 'custom', message: err.message });
        }
      })
      .describe('Run on a cron expression: 5 fields (minute hour day month weekday) or 6 with seconds first, or @hourly, @daily, @weekly, @monthly, @yearly. Read in `timezone`.')
      .optional(),
    at: dateTimeField('Run once, at this date and time.').optional(),
    timezone: z
      .string()
      .refine(isTimeZone, 'not an IANA time zone name (e.g. Europe/Berlin)')
      .optional()
      .describe('IANA time zone of `cron`, and of `at`, `start` and `end` written without an offset; default: server.timezone.'),
    start: dateTimeField('No run before this date and time; an interval\'s ticks are counted from it.').optional(),
    end: dateTimeField('No run after this date and time.').optional(),
    jitter: durationField('Each run starts up to this much after its tick, the same delay on every node (spreads jobs that share a tick).').optional(),
    enabled: z.boolean().default(true).describe('A disabled job keeps its history and takes no ticks.'),
    overlap: z
      .enum(['skip', 'queue', 'allow'])
      .default('skip')
      .describe('A tick that comes while the previous run is still going: skip it (recorded as skipped), queue it to run after, or allow both at once.'),
    missed: z
      .enum(['skip', 'run_once'])
      .default('skip')
      .describe('Ticks that fell while no node was up: skip them, or run once for all of them when a node comes back.'),
  })
  .strict()
  .superRefine((job, ctx) => {
    const kinds = (['every', 'cron', 'at'] as const).filter((k) => job[k] !== undefined);
    if (kinds.length !== 1) ctx.addIssue({ code: 'custom', path: kinds.length ? [kinds[1]!] : ['every'], message: kinds.length ? `give one of every, cron or at, not ${kinds.join(' and ')}` : 'give one of every, cron or at' });
    if (job.every !== undefined && job.every < 1) ctx.addIssue({ code: 'custom', path: ['every'], message: 'an interval must be at least 1 ms' });
  });

export type Job = z.infer<typeof jobSchema>;

export const sectionSchema = z.array(jobSchema).default([]).describe('Scheduled jobs: a service started on an interval, a cron expression, or once.');
