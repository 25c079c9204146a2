import { bundledPluginOn, definePlugin, type DurableEvents, type KernelApi, type SvcConfig } from '../../sdk/plugin/index.ts';
import '../capabilities.ts';
import { jobCommands } from './cli.ts';
import { jobControls } from './control.ts';
import { JobScheduler } from './runtime.ts';
import { optionsSchema, sectionSchema, validateJobs, type SchedulerOptions } from './schema.ts';
import { SchedulerTables } from './store.ts';
import { LATENESS_BUCKETS_MS } from './stats.ts';
import { schedulerTiming } from './timing.ts';

interface SchedulerState {
  runtime: JobScheduler;
  tables: SchedulerTables;
  options: SchedulerOptions;
  prune: NodeJS.Timeout;
  kernel: KernelApi;
}

const PRUNE_EVERY_MS = 3_600_000;

const jobsOf = (config: SvcConfig) => config.scheduler_job ?? [];
const useQueueOn = (config: SvcConfig): boolean => bundledPluginOn(config, 'use-queue');

/** Stands in for the Use queue when it is off: no job can be configured then, so nothing calls it. */
const NO_QUEUE: DurableEvents = {
  declareQueue() {},
  enqueue() {
    return Promise.reject(new Error('scheduler: the Use queue is off'));
  },
  listen() {},
  deadLetter() {
    return Promise.reject(new Error('scheduler: the Use queue is off'));
  },
  addRunner() {},
};

const pluginConfigOf = (config: SvcConfig): unknown => {
  const entry = config.plugins.scheduler;
  return typeof entry === 'object' ? entry.config : undefined;
};

/**
 * The scheduler: jobs that start a service on an interval, a cron expression or once, each tick
 * taken once across every node on the store and run through the Use queue. The first event
 * source (sdk/plugin/events.ts). See README.md.
 */
export interface SchedulerPluginDeps {
  /** Tests: the runtime once set up, to drive its wakes under an injected clock. */
  onRuntime?: (runtime: JobScheduler) => void;
}

export function createSchedulerPlugin(deps: SchedulerPluginDeps = {}) {
  return definePlugin<SchedulerOptions, SchedulerState>({
  name: 'scheduler',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.5.0',
  provides: ['scheduler.stats', 'scheduler.timing'],
  configSchema: optionsSchema,
  contributes: {
    sections: { scheduler_job: sectionSchema },
    // The interval floor is an option of this plugin: read from the config being validated.
    validateConfig: (config) => [
      ...validateJobs(jobsOf(config), optionsSchema.safeParse(pluginConfigOf(config)).data ?? optionsSchema.parse(undefined)),
      ...(jobsOf(config).length && !useQueueOn(config) ? [{ path: ['scheduler_job'], message: 'scheduled jobs run through the Use queue: turn plugins.use-queue on' }] : []),
    ],
  },
  async setup(kernel, options) {
    // Every run goes through a durable queue; without the Use queue jobs are refused in config (validateConfig).
    // Looked up at the first config: the Use queue may be set up after this plugin.
    const durable = () => kernel.lookup('events.durable') ?? NO_QUEUE;
    const tables = await SchedulerTables.open(kernel.store);
    const identity = () => {
      const cluster = kernel.lookup('cluster.node');
      // One SQLite file serves one node: it owns every job.
      return { node: cluster?.id ?? 'local', liveNodes: cluster && kernel.store.dialect !== 'sqlite' ? () => cluster.liveNodes() : undefined };
    };
    const runtime = new JobScheduler({ tables, durable, clock: kernel.clock, log: kernel.log.child({ plugin: 'scheduler' }), options, identity });
    for (const op of jobControls({ jobs: () => jobsOf(kernel.config()), serverZone: () => kernel.server().timezone, now: () => kernel.clock.now(), tables, runtime })) kernel.addControl(op);
    kernel.provide('scheduler.timing', schedulerTiming(() => kernel.server().timezone));
    kernel.provide('scheduler.stats', () => ({ runs: runtime.stats.runsNow(), lateness: runtime.stats, latenessBoundsMs: LATENESS_BUCKETS_MS }));
    // New ticks stop as shutdown begins; runs already queued are the Use queue's to finish or leave for the next start.
    kernel.onDrain(async () => runtime.stop());
    const prune = setInterval(() => {
      for (const job of jobsOf(kernel.config())) void tables.prune(job.name, options.history_keep).catch((err: unknown) => kernel.log.warn({ err, job: job.name }, 'scheduler: pruning history failed'));
    }, PRUNE_EVERY_MS);
    prune.unref();
    deps.onRuntime?.(runtime);
    return { runtime, tables, options, prune, kernel };
  },
  async onConfig(state, config) {
    const jobs = jobsOf(config);
    for (const job of jobs) {
      // Services deploy apart from config: a job may name one that comes later. Said, not refused.
      if (job.enabled && !state.kernel.serviceMeta(job.service)) state.kernel.log.warn({ job: job.name, service: job.service }, 'scheduler: the job names a service that is not deployed; its runs fail until it is');
    }
    await state.runtime.apply(jobs, config.server.timezone);
  },
  stop(state) {
    state.runtime.stop();
    clearInterval(state.prune);
  },
  hooks: {},
  cli: jobCommands,
  });
}

export default createSchedulerPlugin();
