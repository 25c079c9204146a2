import { controlOrStore, usage, type CliCommand, type CliEnv } from '../../sdk/plugin/index.ts';
import { listJobs, showJob, type JobView, type RunView } from './control.ts';
import { SchedulerTables } from './store.ts';

/**
 * `svc job list|show|run|pause|resume`: clients of the running server's control ops. With no
 * server running, list, show, pause and resume act on the store (a paused job stays paused for
 * every node); run needs a server, which queues and runs it.
 */

/** The op on the running server, or with `offline` on the store when none runs. */
function run(env: CliEnv, op: string, args: Record<string, unknown>, offline?: (tables: SchedulerTables) => Promise<unknown>): Promise<{ value: unknown } | number> {
  return controlOrStore(env, op, args, offline && (async (store) => offline(await SchedulerTables.open(store))), 'no server is running: `svc job run` queues the run on the running server (start it with `svc start`)');
}

const jobsOf = (env: CliEnv) => env.config.scheduler_job ?? [];
const zoneOf = (env: CliEnv) => env.config.server.timezone;

function runLine(r: RunView): string {
  const took = r.durationMs === null ? '' : ` took ${r.durationMs} ms`;
  const missed = r.missed ? ` missed ${r.missed}` : '';
  const error = r.error ? `  ${r.error.replace(/\s+/g, ' ').slice(0, 160)}` : '';
  return `${r.tick}  ${r.cause}  ${r.state}  late ${r.lateMs} ms${took}  attempts ${r.attempts}${missed}  cid ${r.cid ?? '-'}${error}`;
}

function jobLine(j: JobView): string {
  const state = !j.enabled ? 'disabled' : j.paused ? 'paused' : 'active';
  const last = j.lastRun ? `last ${j.lastRun.state} ${j.lastRun.tick}` : 'never ran';
  return `${j.name}  ${j.service}  ${j.schedule} (${j.timezone})  ${state}  next ${j.nextRuns[0] ?? '-'}  ${last}`;
}

const listCommand: CliCommand = {
  words: ['job', 'list'],
  usage: 'job list [--json]',
  describe: 'Lists the scheduled jobs: schedule, state (active, paused, disabled), next run and last outcome.',
  async run(argv, env) {
    if (argv.some((a) => a !== '--json')) return usage(env, this.usage);
    const out = await run(env, 'job.list', {}, (t) => listJobs(jobsOf(env), t, zoneOf(env), Date.now()));
    if (typeof out === 'number') return out;
    const jobs = out.value as JobView[];
    if (argv.includes('--json')) env.out(JSON.stringify(jobs, null, 2));
    else if (!jobs.length) env.out('no jobs (scheduler_job is empty)');
    else for (const j of jobs) env.out(jobLine(j));
    return 0;
  },
};

const showCommand: CliCommand = {
  words: ['job', 'show'],
  usage: 'job show NAME [--limit N] [--json]',
  describe: "Prints one job: its next runs and its history, newest first (tick, cause, outcome, lateness, duration, attempts, CID, error).",
  async run(argv, env) {
    const name = argv.find((a, i) => !a.startsWith('--') && argv[i - 1] !== '--limit');
    const at = argv.indexOf('--limit');
    const limit = at >= 0 ? Number(argv[at + 1]) : 50;
    if (!name || !Number.isInteger(limit) || limit < 1) return usage(env, this.usage);
    const args = { name, limit };
    const out = await run(env, 'job.show', args, (t) => showJob(jobsOf(env), t, zoneOf(env), Date.now(), args));
    if (typeof out === 'number') return out;
    const job = out.value as JobView & { history: RunView[] };
    if (argv.includes('--json')) {
      env.out(JSON.stringify(job, null, 2));
      return 0;
    }
    env.out(jobLine(job));
    env.out(`overlap ${job.overlap}, missed ${job.missed}`);
    env.out(`next: ${job.nextRuns.join(', ') || '-'}`);
    env.out(job.history.length ? 'history:' : 'no runs yet');
    for (const r of job.history) env.out('  ' + runLine(r));
    return 0;
  },
};

function actCommand(verb: 'run' | 'pause' | 'resume', describe: string): CliCommand {
  return {
    words: ['job', verb],
    usage: `job ${verb} NAME`,
    describe,
    async run(argv, env) {
      if (argv.length !== 1 || argv[0]!.startsWith('--')) return usage(env, `job ${verb} NAME`);
      const name = argv[0]!;
      const offline =
        verb === 'run'
          ? undefined
          : async (t: SchedulerTables) => {
              if (!jobsOf(env).some((j) => j.name === name)) throw new Error(`no job named '${name}' in scheduler_job`);
              await t.setPaused(name, verb === 'pause', Date.now());
              return { name, paused: verb === 'pause' };
            };
      const out = await run(env, `job.${verb}`, { name }, offline);
      if (typeof out === 'number') return out;
      const v = out.value as { tick?: string; state?: string; cid?: string | null };
      env.out(verb === 'run' ? `${name}: run ${v.state} (tick ${v.tick}, cid ${v.cid ?? '-'})` : `${name}: ${verb === 'pause' ? 'paused' : 'resumed'}`);
      return 0;
    },
  };
}

export const jobCommands: CliCommand[] = [
  listCommand,
  showCommand,
  actCommand('run', 'Runs a job now, outside its schedule, through its queue (it waits for a run still going).'),
  actCommand('pause', 'Pauses a job on every node: its ticks are declined until resume (they are not caught up).'),
  actCommand('resume', 'Resumes a paused job from its next tick.'),
];
