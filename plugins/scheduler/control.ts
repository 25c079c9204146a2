import { z } from 'zod';
import { formatDuration, SvcError, type ControlOp, type OpCaller } from '../../sdk/plugin/index.ts';
import { scopedRef, tenantOf } from '../../sdk/plugin/tenants.ts';
import { upcoming, type JobScheduler } from './runtime.ts';
import { scheduleOf } from './schedule.ts';
import type { Job } from './schema.ts';
import type { RunRow, SchedulerTables } from './store.ts';

/** The control ops behind `svc job ...`, the admin API and the Dashboard's Jobs page. */

/** A job's name; a tenant's administrator writes its own jobs' names short (sdk/plugin/tenants.ts). */
const jobName = scopedRef(z.string().min(1).max(200)).describe('The job name.');
export const nameArgs = z.object({ name: jobName }).strict();
export const showArgs = z
  .object({
    name: jobName,
    limit: z.number().int().min(1).max(1_000).default(50).describe('Runs of its history, newest first.'),
    before: z.string().optional().describe('Only runs of ticks before this one (ISO 8601): the next page.'),
  })
  .strict();

export interface RunView {
  tick: string;
  cause: RunRow['cause'];
  state: RunRow['state'];
  cid: string | null;
  node: string | null;
  dueAt: string;
  claimedAt: string;
  /** How long after its time (tick + jitter) the tick was taken, ms. */
  lateMs: number;
  startedAt: string | null;
  endedAt: string | null;
  durationMs: number | null;
  attempts: number;
  /** Ticks this row stands for that did not run (state missed), or that this run caught up (run_once). */
  missed: number;
  error: string | null;
}

export interface JobView {
  name: string;
  service: string;
  /** `every 30s`, `cron 0 2 * * *`, `at 2026-12-01T09:00:00Z`. */
  schedule: string;
  timezone: string;
  enabled: boolean;
  paused: boolean;
  overlap: Job['overlap'];
  missed: Job['missed'];
  /** The next ticks, ISO 8601 (none when disabled, paused or past its end). */
  nextRuns: string[];
  lastRun: RunView | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function runView(r: RunRow): RunView {
  return {
    tick: new Date(r.tick).toISOString(),
    cause: r.cause,
    state: r.state,
    cid: r.cid,
    node: r.node,
    dueAt: new Date(r.due_at).toISOString(),
    claimedAt: new Date(r.claimed_at).toISOString(),
    lateMs: Math.max(0, r.claimed_at - r.due_at),
    startedAt: iso(r.started_at),
    endedAt: iso(r.ended_at),
    durationMs: r.started_at !== null && r.ended_at !== null ? r.ended_at - r.started_at : null,
    attempts: r.attempts,
    missed: r.missed,
    error: r.error === null ? null : r.error_kind && !r.error.startsWith(r.error_kind + ':') ? `${r.error_kind}: ${r.error}` : r.error,
  };
}

export function scheduleText(job: Job): string {
  if (job.every !== undefined) return `every ${formatDuration(job.every)}`;
  if (job.cron !== undefined) return `cron ${job.cron}`;
  return `at ${job.at}`;
}

/** Every configured job with its state in the store; works with or without a running server. */
export async function listJobs(jobs: readonly Job[], tables: SchedulerTables, serverZone: string, now: number): Promise<JobView[]> {
  const rows = new Map((await tables.jobs()).map((r) => [r.name, r]));
  const last = await tables.lastRuns();
  return jobs.map((job) => {
    const row = rows.get(job.name);
    const paused = row?.paused === 1;
    const schedule = scheduleOf(job, serverZone);
    const from = Math.max(row?.last_tick ?? now, now);
    const lastRun = last.get(job.name);
    return {
      name: job.name,
      service: job.service,
      schedule: scheduleText(job),
      timezone: job.timezone ?? serverZone,
      enabled: job.enabled,
      paused,
      overlap: job.overlap,
      missed: job.missed,
      nextRuns: job.enabled && !paused ? upcoming(schedule, schedule.next(from), 5).map((t) => new Date(t).toISOString()) : [],
      lastRun: lastRun ? runView(lastRun) : null,
    };
  });
}

export async function showJob(jobs: readonly Job[], tables: SchedulerTables, serverZone: string, now: number, args: z.infer<typeof showArgs>): Promise<JobView & { history: RunView[] }> {
  const view = (await listJobs(jobs, tables, serverZone, now)).find((j) => j.name === args.name);
  if (!view) throw new SvcError('NOT_FOUND', `No job named '${args.name}' in scheduler_job`);
  const before = args.before === undefined ? undefined : Date.parse(args.before);
  if (before !== undefined && Number.isNaN(before)) throw new SvcError('INVALID_INPUT', `before: not an ISO 8601 date and time: ${args.before}`);
  return { ...view, history: (await tables.history(args.name, args.limit, before)).map(runView) };
}

export interface JobControlDeps {
  jobs: () => readonly Job[];
  serverZone: () => string;
  now: () => number;
  tables: SchedulerTables;
  runtime: JobScheduler;
}

export function jobControls(d: JobControlDeps): ControlOp[] {
  // A tenant's administrators (admin API) reach their tenant's jobs only; another's is not found.
  const jobsOf = (caller: OpCaller | undefined) => (caller === undefined ? d.jobs() : d.jobs().filter((j) => tenantOf(j.name) === caller.tenant));
  const known = (name: string, caller: OpCaller | undefined) => {
    if (!jobsOf(caller).some((j) => j.name === name)) throw new SvcError('NOT_FOUND', `No job named '${name}' in scheduler_job`);
  };
  const list: ControlOp<Record<string, never>> = {
    op: 'job.list',
    readOnly: true,
    tenantScoped: true,
    args: z.object({}).strict(),
    handler: (_args, caller) => listJobs(jobsOf(caller), d.tables, d.serverZone(), d.now()),
  };
  const show: ControlOp<z.infer<typeof showArgs>> = {
    op: 'job.show',
    readOnly: true,
    tenantScoped: true,
    args: showArgs,
    handler: (args, caller) => showJob(jobsOf(caller), d.tables, d.serverZone(), d.now(), args),
  };
  const run: ControlOp<z.infer<typeof nameArgs>> = {
    op: 'job.run',
    tenantScoped: true,
    args: nameArgs,
    handler: async ({ name }, caller) => {
      known(name, caller);
      const { tick, state, cid } = await d.runtime.runNow(name);
      return { name, tick: new Date(tick).toISOString(), state, cid };
    },
  };
  const pause: ControlOp<z.infer<typeof nameArgs>> = {
    op: 'job.pause',
    tenantScoped: true,
    args: nameArgs,
    handler: async ({ name }, caller) => {
      known(name, caller);
      await d.tables.setPaused(name, true, d.now());
      return { name, paused: true };
    },
  };
  const resume: ControlOp<z.infer<typeof nameArgs>> = {
    op: 'job.resume',
    tenantScoped: true,
    args: nameArgs,
    handler: async ({ name }, caller) => {
      known(name, caller);
      await d.tables.setPaused(name, false, d.now());
      // Its plan moves past the ticks declined while paused.
      await d.runtime.replan();
      return { name, paused: false };
    },
  };
  return [list, show, run, pause, resume];
}
