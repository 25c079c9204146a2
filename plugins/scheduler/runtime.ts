import type { Logger } from 'pino';
import { SvcError, type Clock, type DurableEvents, type DurableSettlement, type Queryable } from '../../sdk/plugin/index.ts';
import { scheduleOf, type Schedule } from './schedule.ts';
import type { Job, SchedulerOptions } from './schema.ts';
import { SchedulerStats } from './stats.ts';
import type { RunCause, RunRow, SchedulerTables } from './store.ts';

/** A job's durable queue in the Use queue's events table (`svc queue list` shows it). */
export const QUEUE_PREFIX = 'scheduler:';

/** Longest sleep between looks at the wall clock: a clock set forward is noticed within this. */
const MAX_SLEEP_MS = 1_000;
/** Ticks counted one by one when a job catches up; past it the rest are counted in one step. */
const MAX_COUNTED_TICKS = 100_000;
/** Jobs claimed in one transaction. */
const BATCH = 500;
/** Ticks of one job run from one claim (a long stall within misfire_after_ms); the next wake takes more. */
const MAX_RUNS_PER_CLAIM = 100;

interface Plan {
  job: Job;
  schedule: Schedule;
  queue: string;
  /** The next tick this node will try to take, and when (tick + jitter); undefined: none left. */
  tick: number | undefined;
  due: number;
  /** This node tries the job's ticks at their time; the others only once it let one pass (refreshOwners). */
  owned: boolean;
}

export interface JobSchedulerDeps {
  tables: SchedulerTables;
  /** Looked up when the first config applies: the plugin providing it may be set up after this one. */
  durable: () => DurableEvents;
  clock: Clock;
  log: Logger;
  options: SchedulerOptions;
  /**
   * This node's id and, with several nodes on the store, the nodes up (this one included); read
   * at the first config, once every plugin is set up (the nodes plugin provides them).
   */
  identity: () => { node: string; liveNodes?: (() => Promise<ReadonlySet<string>>) | undefined };
}

/** After a commit: runs now stored in their queues start on this node. */
type AfterCommit = Array<() => void>;

/**
 * Takes each job's ticks when they fall, once across every node sharing the store, and hands each
 * taken tick to the job's durable queue in the same transaction. Sleeps until the earliest tick
 * (at most MAX_SLEEP_MS, so a clock that jumps is noticed); never polls the store between ticks.
 */
export class JobScheduler {
  readonly stats = new SchedulerStats();
  private plans = new Map<string, Plan>();
  private timer: NodeJS.Timeout | undefined;
  private waking: Promise<void> | undefined;
  private stopped = false;
  private lastWake = 0;
  private queues: DurableEvents | undefined;
  private live: string[] = [];
  private liveKey = '';
  private liveRead = 0;
  private readingLive = false;

  private node = 'local';
  private liveNodes: (() => Promise<ReadonlySet<string>>) | undefined;
  private identified = false;

  constructor(private readonly deps: JobSchedulerDeps) {}

  /** The durable queue, listened to from the first use on. */
  private get durable(): DurableEvents {
    if (this.queues) return this.queues;
    const queues = (this.queues = this.deps.durable());
    // No write at an attempt's start: the settlement records when it started, in the same transaction as its end.
    queues.listen(QUEUE_PREFIX, { settled: (tx, s) => this.settled(tx, s) });
    return queues;
  }

  /** Every accepted config: the enabled jobs, registered in the store, planned from their last tick there. */
  async apply(jobs: readonly Job[], serverZone: string): Promise<void> {
    if (!this.identified) {
      const id = this.deps.identity();
      this.node = id.node;
      this.liveNodes = id.liveNodes;
      this.identified = true;
    }
    const { tables, clock, options } = this.deps;
    const now = clock.now();
    const plans = new Map<string, Plan>();
    for (const job of jobs) {
      if (!job.enabled) {
        // Enabling it again changes the fingerprint: it starts afresh, owing nothing from while it was off.
        await tables.register(job.name, 'disabled', now, now);
        continue;
      }
      const schedule = scheduleOf(job, serverZone);
      // A job seen for the first time does not owe the ticks before it existed, but a one-time job
      // set for a moment just gone (within misfire_after_ms) still runs.
      await tables.register(job.name, fingerprintOf(job, serverZone), job.at === undefined ? now : now - options.misfire_after_ms, now);
      const queue = QUEUE_PREFIX + job.name;
      this.durable.declareQueue(queue, {
        concurrency: job.overlap === 'allow' ? options.allow_concurrency : 1,
        max_attempts: job.delivery.max_attempts,
        base_delay_ms: job.delivery.base_delay_ms,
        max_delay_ms: job.delivery.max_delay_ms,
      });
      plans.set(job.name, { job, schedule, queue, tick: undefined, due: Infinity, owned: this.owns(job.name) });
    }
    const last = new Map((await tables.jobs()).map((r) => [r.name, r.last_tick]));
    for (const plan of plans.values()) this.planAfter(plan, last.get(plan.job.name) ?? now);
    this.plans = plans;
    this.arm();
  }

  /** The job's next tick after `after`. */
  private planAfter(plan: Plan, after: number): void {
    plan.tick = plan.schedule.next(after);
    plan.due = plan.tick === undefined ? Infinity : plan.tick + plan.schedule.jitterMs(plan.tick);
  }

  private arm(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    let due = Infinity;
    for (const plan of this.plans.values()) due = Math.min(due, this.dueOf(plan));
    const wait = Math.max(0, Math.min(MAX_SLEEP_MS, due - this.deps.clock.now()));
    this.timer = setTimeout(() => void this.wake(), wait);
    this.timer.unref();
  }

  /** Takes the ticks due now; one wake at a time. Resolves when done (tests drive it with an injected clock). */
  wake(): Promise<void> {
    this.waking ??= this.takeDue().finally(() => {
      this.waking = undefined;
      this.arm();
    });
    return this.waking;
  }

  private async takeDue(): Promise<void> {
    if (this.stopped) return;
    const now = this.deps.clock.now();
    if (this.lastWake && now < this.lastWake - MAX_SLEEP_MS) {
      this.deps.log.warn({ back_ms: this.lastWake - now }, 'scheduler: the clock went back; each tick still runs once, when the clock reaches it again');
    }
    this.lastWake = now;
    this.refreshOwners(now);
    const due = [...this.plans.values()].filter((p) => this.dueOf(p) <= now).sort((a, b) => (a.job.name < b.job.name ? -1 : 1));
    for (let i = 0; i < due.length; i += BATCH) await this.claim(await this.stillOpen(due.slice(i, i + BATCH)), now);
  }

  /** When this node tries the plan's tick: at once if it owns the job, else once the owner had its chance. */
  private dueOf(plan: Plan): number {
    return plan.owned ? plan.due : plan.due + this.deps.options.takeover_after_ms;
  }

  /**
   * Jobs are spread over the nodes up (rendezvous hashing on job and node), so each tick is tried
   * at its time by one node and the others stay off the job's row; any node takes a tick its
   * owner left (a node that died, a stall) takeover_after_ms later. Correctness never rests on
   * this: the claim under the row's lock decides. The set of nodes is read at most every second.
   */
  private refreshOwners(now: number): void {
    const live = this.liveNodes;
    if (!live || this.liveRead > now - MAX_SLEEP_MS || this.readingLive) return;
    this.readingLive = true;
    this.liveRead = now;
    void live()
      .then((nodes) => {
        const key = [...nodes].sort().join(' ');
        if (key === this.liveKey) return;
        this.liveKey = key;
        this.live = [...nodes];
        for (const plan of this.plans.values()) plan.owned = this.owns(plan.job.name);
        this.arm();
      })
      .catch((err: unknown) => this.deps.log.warn({ err }, 'scheduler: reading the nodes up failed; ownership unchanged'))
      .finally(() => (this.readingLive = false));
  }

  private owns(job: string): boolean {
    if (this.live.length <= 1) return true;
    let best = '';
    let bestScore = -1;
    for (const node of this.live) {
      const score = fnv1a(`${node}\0${job}`);
      if (score > bestScore || (score === bestScore && node < best)) (best = node), (bestScore = score);
    }
    return best === this.node;
  }

  /**
   * Of jobs this node does not own, those whose tick another node took already, dropped with one
   * read (no lock), so a node backing up its peers costs the store a query per wake, not a
   * transaction per job.
   */
  private async stillOpen(plans: Plan[]): Promise<Plan[]> {
    const others = plans.filter((p) => !p.owned);
    if (!others.length) return plans;
    let last: Map<string, number>;
    try {
      last = await this.deps.tables.lastTicks(others.map((p) => p.job.name));
    } catch {
      return plans;
    }
    return plans.filter((p) => {
      if (p.owned) return true;
      const taken = last.get(p.job.name);
      if (taken === undefined || p.tick === undefined || taken < p.tick) return true;
      this.planAfter(p, taken);
      return false;
    });
  }

  /**
   * One transaction for a batch of jobs, in name order (so nodes claiming together lock rows in
   * the same order and never deadlock): each job's row locked, its due ticks counted from the
   * store's last_tick, those due taken, missed ones recorded, the runs queued.
   */
  private async claim(plans: Plan[], now: number): Promise<void> {
    if (!plans.length) return;
    const { tables, log } = this.deps;
    const after: AfterCommit = [];
    const dues: number[] = [];
    const lastTicks = new Map<Plan, number>();
    try {
      await tables.store.transaction(
        async (tx) => {
          after.length = 0;
          dues.length = 0;
          lastTicks.clear();
          for (const plan of plans) {
            const row = await tables.lockJob(tx, plan.job.name);
            if (!row) continue;
            // Paused: its ticks are declined as they come; the plan moves past them.
            lastTicks.set(plan, row.paused ? Math.max(row.last_tick, now) : row.last_tick);
            if (row.paused) continue;
            const taken = await this.takeTicks(tx, plan, row.last_tick, now, after, dues);
            if (taken !== undefined) lastTicks.set(plan, taken);
          }
        },
        { durable: true },
      );
    } catch (err) {
      // Store down or a conflict: nothing was taken; the next wake (within a second) tries again.
      log.error({ err, jobs: plans.length }, 'scheduler: taking ticks failed');
      for (const plan of plans) plan.due = Math.max(plan.due, now + MAX_SLEEP_MS);
      return;
    }
    // Late by the commit: the run is queued from then on.
    const committed = this.deps.clock.now();
    for (const due of dues) this.stats.lateness(committed - due);
    for (const start of after) start();
    for (const plan of plans) this.planAfter(plan, Math.max(lastTicks.get(plan) ?? now, plan.tick ?? now));
  }

  /**
   * The job's ticks due by `now` after `lastTick`, decided: those later than misfire_after_ms are
   * missed (the job's `missed` policy), the others run, each once, late or not. Returns the last
   * tick taken, or undefined when there was none (another node took them).
   */
  private async takeTicks(tx: Queryable, plan: Plan, lastTick: number, now: number, after: AfterCommit, dues: number[]): Promise<number | undefined> {
    const { schedule, job } = plan;
    const misfire = this.deps.options.misfire_after_ms;
    const run: number[] = [];
    let missed = 0;
    let lastMissed: number | undefined;
    let counted = 0;
    for (let t = schedule.next(lastTick); t !== undefined && t + schedule.jitterMs(t) <= now; t = schedule.next(t)) {
      if (now - (t + schedule.jitterMs(t)) > misfire) (missed++, (lastMissed = t));
      else run.push(t);
      if (++counted >= MAX_COUNTED_TICKS || run.length >= MAX_RUNS_PER_CLAIM) break;
    }
    const last = run.length ? run[run.length - 1]! : lastMissed;
    if (last === undefined) return undefined;
    await this.deps.tables.advance(tx, job.name, last);
    // claimed_at: when the run is written, a moment before its transaction commits.
    const base = (tick: number) => ({ job: job.name, tick, due_at: tick + schedule.jitterMs(tick), claimed_at: this.deps.clock.now(), node: this.node, missed: 0 });
    if (missed > 0) {
      this.deps.log.warn({ job: job.name, missed, last: new Date(lastMissed!).toISOString(), policy: job.missed }, 'scheduler: ticks fell while no node took them (later than misfire_after_ms)');
      if (job.missed === 'skip') {
        await this.deps.tables.insertRun(tx, blankRun({ ...base(lastMissed!), cause: 'schedule', state: 'missed', missed }));
        this.stats.count(job.name, 'missed');
      } else if (!run.length) {
        // run_once: one run for all of them, now.
        dues.push(lastMissed! + schedule.jitterMs(lastMissed!));
        await this.startRun(tx, plan, { ...base(lastMissed!), missed }, 'catch_up', after);
      }
    }
    // Several ticks due at once (a node back after a stop, a stall): under overlap: skip only the
    // latest runs, as it would have had the earlier ones still been going; queue and allow run each.
    const superseded = job.overlap === 'skip' ? run.length - 1 : 0;
    for (const [i, tick] of run.entries()) {
      const b = base(tick);
      if (i < superseded) {
        await this.deps.tables.insertRun(tx, blankRun({ ...b, cause: 'schedule', state: 'skipped', error: 'a later tick was due at the same time and ran instead (overlap: skip)' }));
        this.stats.count(job.name, 'skipped');
        continue;
      }
      dues.push(b.due_at);
      // run_once: the first run on time stands for the missed ones too.
      await this.startRun(tx, plan, i === superseded && job.missed === 'run_once' ? { ...b, missed } : b, 'schedule', after);
    }
    return last;
  }

  /** A run of the job at `tick`, as its overlap policy says: queued now, waiting for the one before, or skipped. */
  private async startRun(tx: Queryable, plan: Plan, base: Pick<RunRow, 'job' | 'tick' | 'due_at' | 'claimed_at' | 'node' | 'missed'>, cause: RunCause, after: AfterCommit): Promise<void> {
    const { job } = plan;
    const open = job.overlap === 'allow' ? false : await this.deps.tables.hasOpenRun(tx, job.name);
    if (open && job.overlap === 'skip' && cause !== 'manual') {
      await this.deps.tables.insertRun(tx, blankRun({ ...base, cause, state: 'skipped', error: 'the previous run was still going (overlap: skip)' }));
      this.stats.count(job.name, 'skipped');
      return;
    }
    if (open) {
      await this.deps.tables.insertRun(tx, blankRun({ ...base, cause, state: 'waiting' }));
      return;
    }
    try {
      const event = await this.enqueue(tx, plan, base.tick);
      await this.deps.tables.insertRun(tx, blankRun({ ...base, cause, state: 'queued', cid: event.cid, event_id: event.id }));
      after.push(event.committed);
    } catch (err) {
      if (!(err instanceof SvcError && err.code === 'QUEUE_FULL')) throw err;
      await this.deps.tables.insertRun(tx, blankRun({ ...base, cause, state: 'skipped', error_kind: 'QUEUE_FULL', error: err.details }));
      this.stats.count(job.name, 'skipped');
    }
  }

  private enqueue(tx: Queryable, plan: Plan, tick: number): Promise<{ id: number; cid: string; committed(): void }> {
    const { job } = plan;
    return this.durable.enqueue(tx, plan.queue, { source: 'scheduler', name: job.name, service: job.service, input: job.input, at: new Date(tick).toISOString() });
  }

  /**
   * An attempt of a job's run ended, inside the transaction that records it in the queue: the run's
   * outcome, and the next waiting run of the job queued (overlap: queue).
   */
  private async settled(tx: Queryable, s: DurableSettlement): Promise<(() => void) | undefined> {
    const { tables } = this.deps;
    const run = await tables.runOfEvent(tx, s.id, s.cid);
    if (!run) return undefined;
    const failed = s.outcome.ok ? null : s.outcome;
    const state = s.next === 'done' ? 'succeeded' : s.next === 'dead' ? 'failed' : 'retrying';
    await tables.settle(tx, run, { state, attempts: s.attempt, startedAt: s.startedAt, endedAt: s.next === 'retry' ? null : s.endedAt, errorKind: failed?.kind ?? null, error: failed?.message ?? null });
    if (s.next === 'retry') return undefined;
    this.stats.count(run.job, state);
    const plan = this.plans.get(run.job);
    // Under overlap: allow nothing waits (not even a manual run), so there is nothing to look for.
    if (plan?.job.overlap === 'allow') return undefined;
    const waiting = await tables.oldestWaiting(tx, run.job);
    if (!waiting) return undefined;
    if (!plan) {
      await tables.settle(tx, waiting, { state: 'skipped', attempts: 0, startedAt: s.endedAt, endedAt: s.endedAt, errorKind: null, error: 'the job was removed or disabled while this run waited' });
      return undefined;
    }
    const event = await this.enqueue(tx, plan, waiting.tick);
    await tables.queued(tx, run.job, waiting.tick, event.id, event.cid, this.node);
    return event.committed;
  }

  /** `svc job run NAME`: a run now, outside the schedule; it waits for a run still going rather than being skipped. */
  async runNow(name: string): Promise<{ tick: number; state: string; cid: string | null }> {
    const plan = this.plans.get(name);
    if (!plan) throw new SvcError('NOT_FOUND', `No enabled job named '${name}'`);
    const after: AfterCommit = [];
    let tick = this.deps.clock.now();
    let state = 'queued';
    let cid: string | null = null;
    await this.deps.tables.store.transaction(
      async (tx) => {
        after.length = 0;
        await this.deps.tables.lockJob(tx, name);
        while (await tx.one('SELECT 1 AS x FROM scheduler_run WHERE job = ? AND tick = ?', [name, tick])) tick++;
        await this.startRun(tx, plan, { job: name, tick, due_at: tick, claimed_at: tick, node: this.node, missed: 0 }, 'manual', after);
        const row = await tx.one<{ state: string; cid: string | null }>('SELECT state, cid FROM scheduler_run WHERE job = ? AND tick = ?', [name, tick]);
        state = row?.state ?? state;
        cid = row?.cid ?? null;
      },
      { durable: true },
    );
    for (const start of after) start();
    return { tick, state, cid };
  }

  /** Plans every job again from the store's last ticks (a job resumed). */
  async replan(): Promise<void> {
    const last = new Map((await this.deps.tables.jobs()).map((r) => [r.name, r.last_tick]));
    const now = this.deps.clock.now();
    for (const plan of this.plans.values()) this.planAfter(plan, Math.max(last.get(plan.job.name) ?? now, plan.tick === undefined ? now : Math.min(plan.tick - 1, now)));
    this.arm();
  }

  /** The enabled jobs and their next ticks (as this node plans them). */
  planned(): Array<{ job: Job; nextTicks: number[] }> {
    return [...this.plans.values()].map((p) => ({ job: p.job, nextTicks: upcoming(p.schedule, p.tick, 5) }));
  }

  jobOf(name: string): Job | undefined {
    return this.plans.get(name)?.job;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}

/** The next `n` ticks from `first` on. */
export function upcoming(schedule: Schedule, first: number | undefined, n: number): number[] {
  const out: number[] = [];
  for (let t = first; t !== undefined && out.length < n; t = schedule.next(t)) out.push(t);
  return out;
}

/** 32-bit FNV-1a: a cheap, well-spread hash for rendezvous ownership. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

function blankRun(r: Pick<RunRow, 'job' | 'tick' | 'cause' | 'state' | 'due_at' | 'claimed_at' | 'node' | 'missed'> & Partial<RunRow>): RunRow {
  return { cid: null, event_id: null, started_at: null, ended_at: null, attempts: 0, error_kind: null, error: null, ...r };
}

/** What decides a job's ticks: a change means a new schedule, which does not catch up ticks of the old one. */
function fingerprintOf(job: Job, serverZone: string): string {
  return JSON.stringify([job.every ?? null, job.cron ?? null, job.at ?? null, job.timezone ?? serverZone, job.start ?? null, job.end ?? null, job.jitter ?? null]);
}
