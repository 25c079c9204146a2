import type { Logger } from 'pino';
import { RUNNER_SERVICE_MARK, SvcError, type Clock, type DurableRunner, type DurableAttempt, type DurableListener, type DurableQueueSettings, type DurableSettlement, type EventOutcome, type InvokeRequest, type Queryable, type SvcConfig } from '../../../sdk/plugin/index.ts';
import type { Tracing } from '../../capabilities.ts';
import { Lane } from './lane.ts';
import { backoffMs } from './outcome.ts';
import { DEFAULT_DELIVERY, type DeliverySettings } from './schema.ts';
import { TenantHolds } from './tenant-holds.ts';
import { withError, type AttemptError, type QueueTable } from './store.ts';

export interface SchedulerDeps {
  table: QueueTable;
  /** Runs one attempt's request through the kernel's event path (KernelApi.runEvent): never throws. */
  run: (req: InvokeRequest) => Promise<EventOutcome>;
  newCid: () => string;
  clock: Clock;
  log: Logger;
  /** Queued calls running at once across all queues. */
  maxRunning: number;
  background: DeliverySettings;
  stopWaitMs: number;
  /** [0, 1), for jitter; injectable so tests can assert delays. */
  random: () => number;
  /** The tracing capability, when a plugin provides it: each run gets a span in the accepting request's trace. */
  tracing?: () => Tracing | undefined;
  /** This node's id: the events it accepts and runs are marked with it. */
  node: string;
  /** The nodes up now (this one included): events of others are taken over. */
  liveNodes: () => Promise<ReadonlySet<string>>;
  /** How often to look for events of nodes that went away (several nodes on one store); undefined: only at load. */
  adoptEveryMs?: number | undefined;
}

/** Longest single timer wait (setTimeout's limit); a later due time just wakes once more. */
const MAX_TIMER_MS = 2 ** 31 - 1;
const BACKGROUND = '';
/** How long an event of a runner that is not registered yet waits before it looks again. */
const RUNNER_WAIT_MS = 5_000;
/** How long an attempt its tenant's quota refused waits when the refusal named no time, and the bounds of the time it names. */
const QUOTA_WAIT_MS = 1_000;
const QUOTA_WAIT_MIN_MS = 100;
const QUOTA_WAIT_MAX_MS = 60_000;
/** A queue held by its tenant's quota says so in the log at most this often. */
const QUOTA_LOG_EVERY_MS = 60_000;
/** The kernel's refusal of a call over its tenant's quota (docs/tenants.md). */
const TENANT_QUOTA = 'TENANT_QUOTA';

/** An event source's listener on the attempts of its queues (DurableEvents.listen). */
export interface AttemptListener extends DurableListener {
  prefix: string;
}

/**
 * Runs queued events: per queue (a channel's, or the background queue) at most `concurrency`
 * at once and in arrival order, all queues together at most `maxRunning`, taking turns. Sleeps
 * until the earliest due retry; never polls.
 */
export class Scheduler {
  private readonly lanes = new Map<string, Lane>();
  private channelSettings = new Map<string, DeliverySettings>();
  /** Queues of event sources (DurableEvents.declareQueue), by name. */
  private readonly sourceSettings = new Map<string, DeliverySettings>();
  private readonly listeners: AttemptListener[] = [];
  /** Host functions that run the events of queues by prefix (DurableEvents.addRunner). */
  private readonly runners: Array<{ prefix: string; run: DurableRunner }> = [];
  /** Events put back because their runner was missing, by id: they run as soon as it comes. */
  private readonly awaitingRunner = new Map<number, string>();
  private nextId: () => number | Promise<number> = () => {
    throw new Error('queue: load() first');
  };
  private adoptTimer: NodeJS.Timeout | undefined;
  private adopting: Promise<void> | undefined;
  private running = 0;
  private turn = 0;
  private timer: NodeJS.Timeout | undefined;
  /** A pump asked for by a finished attempt, to run after the I/O waiting now (pumpSoon). */
  private soon: NodeJS.Immediate | undefined;
  private started = false;
  /** Set once shutdown began: nothing new starts. */
  private stopping: Promise<void> | undefined;
  /** Past the stop wait: outcomes are no longer written (the rows stay 'running' and rerun after a restart). */
  private stopped = false;
  private readonly attempts = new Set<Promise<void>>();
  /** When each queue last logged that its tenant's quota held it. */
  private readonly quotaLogged = new Map<Lane, number>();
  /** The background queue's holds, per tenant (tenant-holds.ts). */
  private readonly holds = new TenantHolds(QUOTA_WAIT_MAX_MS);

  constructor(private readonly deps: SchedulerDeps) {}

  /**
   * Reads the table: the events of nodes no longer up (on one node: those of earlier runs) become
   * this node's, interrupted attempts back to pending; then, with several nodes, looks again
   * every adoptEveryMs.
   */
  async load(): Promise<void> {
    this.nextId = await this.deps.table.idSource();
    await this.adopt();
    const every = this.deps.adoptEveryMs;
    if (every !== undefined) {
      this.adoptTimer = setInterval(() => void this.adopt(), every);
      this.adoptTimer.unref();
    }
  }

  /** Takes over the events of nodes that are gone; one look at a time, failures logged (the next look tries again). */
  private adopt(): Promise<void> {
    if (this.stopping) return Promise.resolve();
    this.adopting ??= (async () => {
      const { table, clock, log, node } = this.deps;
      try {
        const { rows, interrupted } = await table.adopt(node, await this.deps.liveNodes(), clock.now());
        if (interrupted) log.warn({ events: interrupted }, 'queue: attempts interrupted by a stop or crash will run again');
        if (rows.length > interrupted) log.info({ events: rows.length - interrupted }, 'queue: pending events of a node that is gone taken over');
        for (const row of rows) {
          const lane = this.laneOf(row.channel);
          if (row.channel === null) this.holds.note(row.id, row.service);
          if (row.attempts === 0) lane.addFresh(row.id);
          else lane.addWaiting(row.id, row.next_attempt_at);
        }
        if (rows.length) this.pump();
      } catch (err) {
        if (!this.stopping) log.error({ err }, 'queue: looking for events of nodes that are gone failed');
      } finally {
        this.adopting = undefined;
      }
    })();
    return this.adopting;
  }

  /** Every accepted config: settings per channel; the first one also starts the work (services are deployed by then). */
  applyConfig(config: SvcConfig): void {
    const settings = new Map<string, DeliverySettings>();
    for (const ch of config.channel_rest) if (ch.use_queue === true) settings.set(ch.name, ch.delivery ?? DEFAULT_DELIVERY);
    this.channelSettings = settings;
    for (const lane of this.lanes.values()) lane.settings = this.settingsOf(lane.channel);
    this.started = true;
    this.pump();
  }

  /** A queue no longer in config drains with the defaults (nothing accepted is dropped). */
  private settingsOf(channel: string | null): DeliverySettings {
    if (channel === null) return this.deps.background;
    return this.channelSettings.get(channel) ?? this.sourceSettings.get(channel) ?? DEFAULT_DELIVERY;
  }

  /** An event source's queue: its settings from now on (events held keep their place). */
  declareQueue(queue: string, settings: Partial<DurableQueueSettings>): void {
    this.sourceSettings.set(queue, { ...DEFAULT_DELIVERY, ...settings });
    const lane = this.lanes.get(queue);
    if (lane) lane.settings = this.settingsOf(queue);
    this.pump();
  }

  listen(listener: AttemptListener): void {
    this.listeners.push(listener);
  }

  /** A plugin's runner of the queues starting with `prefix`; events waiting for it are due now. */
  addRunner(prefix: string, run: DurableRunner): void {
    this.runners.push({ prefix, run });
    const due: Array<{ id: number; channel: string }> = [];
    for (const [id, queue] of this.awaitingRunner) {
      if (!queue.startsWith(prefix)) continue;
      this.awaitingRunner.delete(id);
      due.push({ id, channel: queue });
    }
    if (due.length) this.replayed(due);
  }

  runnerOf(queue: string | null): DurableRunner | undefined {
    if (queue === null) return undefined;
    return this.runners.find((r) => queue.startsWith(r.prefix))?.run;
  }

  private listenerOf(queue: string | null): AttemptListener | undefined {
    if (queue === null) return undefined;
    for (const l of this.listeners) if (queue.startsWith(l.prefix)) return l;
    return undefined;
  }

  /**
   * Stores an event source's event inside the caller's transaction; `committed` (after the
   * commit) puts it in its lane. QUEUE_FULL past the queue's max_depth.
   */
  async enqueueIn(tx: Queryable, queue: string, request: InvokeRequest): Promise<{ id: number; committed(): void }> {
    const lane = this.laneOf(queue);
    if (lane.depth >= lane.settings.max_depth) throw new SvcError('QUEUE_FULL', `Queue is full (${lane.settings.max_depth} events)`);
    const id = await this.nextId();
    await this.deps.table.insert({ id, channel: queue, request, receivedAt: this.deps.clock.now(), node: this.deps.node }, tx);
    let done = false;
    return {
      id,
      committed: () => {
        if (done) return;
        done = true;
        lane.addFresh(id);
        this.pump();
      },
    };
  }

  /** Stores a request straight in the dead-letter queue of `queue` (an event source gave up on it). */
  async deadLetterNow(queue: string, request: InvokeRequest, reason: { kind: string; message: string; attempts: number }): Promise<number> {
    const id = await this.nextId();
    const now = this.deps.clock.now();
    const error: AttemptError = { attempt: reason.attempts, cid: request.cid, at: new Date(now).toISOString(), kind: reason.kind, message: reason.message };
    await this.deps.table.insert({ id, channel: queue, request, receivedAt: now, node: this.deps.node, dead: { attempts: reason.attempts, errors: [error] } });
    return id;
  }

  private laneOf(channel: string | null): Lane {
    const key = channel ?? BACKGROUND;
    let lane = this.lanes.get(key);
    if (!lane) this.lanes.set(key, (lane = new Lane(channel, this.settingsOf(channel))));
    return lane;
  }

  depthOf(channel: string | null): number {
    return this.lanes.get(channel ?? BACKGROUND)?.depth ?? 0;
  }

  /** Every queue held in memory: its depth (what max_depth bounds) and the attempts running now. */
  lanesNow(): Array<{ channel: string | null; depth: number; running: number }> {
    return [...this.lanes.values()].map((lane) => ({ channel: lane.channel, depth: lane.depth, running: lane.running.size }));
  }

  /**
   * Stores an event and resolves once it is on stable storage; QUEUE_FULL when its queue holds
   * max_depth events. The request's CID is the event's.
   */
  async accept(channel: string | null, request: InvokeRequest): Promise<number> {
    const lane = this.laneOf(channel);
    if (lane.depth >= lane.settings.max_depth) throw new SvcError('QUEUE_FULL', `Queue is full (${lane.settings.max_depth} events)`);
    lane.accepting++;
    let id: number;
    try {
      id = await this.nextId();
      await this.deps.table.insert({ id, channel, request, receivedAt: this.deps.clock.now(), node: this.deps.node });
    } finally {
      lane.accepting--;
    }
    if (channel === null) this.holds.note(id, request.service);
    lane.addFresh(id);
    this.pump();
    return id;
  }

  /** This node's id (events replayed here become its). */
  get node(): string {
    return this.deps.node;
  }

  /** Starts what may start now, then sleeps until the earliest due retry a free slot could take. */
  private pump(): void {
    if (!this.started || this.stopping) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const now = this.deps.clock.now();
    const lanes = [...this.lanes.values()];
    let progressed = true;
    while (progressed && this.running < this.deps.maxRunning) {
      progressed = false;
      for (let n = 0; n < lanes.length && this.running < this.deps.maxRunning; n++) {
        const lane = lanes[this.turn++ % lanes.length]!;
        if (!lane.hasRoom || this.held(lane, now)) continue;
        const id = lane.takeDue(now);
        if (id === undefined) continue;
        progressed = true;
        // A background event of a tenant its quota holds waits for the hold's end, the store untouched.
        const heldUntil = lane.channel === null ? this.holds.heldUntil(id, now) : undefined;
        if (heldUntil !== undefined) {
          lane.addWaiting(id, heldUntil);
          continue;
        }
        this.start(lane, id);
      }
    }
    if (this.running >= this.deps.maxRunning) return;
    let next = Infinity;
    for (const lane of lanes) if (lane.hasRoom) next = Math.min(next, Math.max(lane.nextDue(), this.held(lane, now) ? lane.heldUntil : -Infinity));
    if (next === Infinity) return;
    this.timer = setTimeout(() => this.pump(), Math.min(MAX_TIMER_MS, Math.max(1, next - now)));
    this.timer.unref();
  }

  /**
   * The next attempt starts in a turn of the event loop of its own. An attempt that ends at once
   * (its tenant's quota refuses it, its service is gone) ends in microtasks, and a pump straight
   * from it would start the next in the same turn: a backlog of due retries then ran whole in
   * one turn, store writes and log lines for each, holding every other request (73 ms in the
   * tenants bench's CPU profile under a queued-event flood).
   */
  private pumpSoon(): void {
    this.soon ??= setImmediate(() => {
      this.soon = undefined;
      this.pump();
    });
  }

  /**
   * Until when a pending event of `service` in this queue waits for its tenant's quota, beyond its
   * stored due time: the holds live in memory only (the store is not written for held events), so
   * a listing asks here.
   */
  quotaHoldOf(channel: string | null, service: string): number | undefined {
    const now = this.deps.clock.now();
    if (channel === null) return this.holds.heldFor(service, now);
    const lane = this.lanes.get(channel);
    return lane && lane.heldUntil > now && lane.heldUntil - now <= QUOTA_WAIT_MAX_MS ? lane.heldUntil : undefined;
  }

  /** Held by its tenant's quota at `now`; a hold further off than any wait means the clock was set back, and ends. */
  private held(lane: Lane, now: number): boolean {
    if (lane.heldUntil - now > QUOTA_WAIT_MAX_MS) lane.heldUntil = now;
    return lane.heldUntil > now;
  }

  private start(lane: Lane, id: number): void {
    lane.running.add(id);
    this.running++;
    const attempt = this.attempt(lane, id).finally(() => {
      this.attempts.delete(attempt);
      lane.running.delete(id);
      this.running--;
      this.pumpSoon();
    });
    this.attempts.add(attempt);
  }

  private async attempt(lane: Lane, id: number): Promise<void> {
    const { table, log, clock } = this.deps;
    const attemptCid = this.deps.newCid();
    try {
      const row = await table.start(id, attemptCid, this.deps.node);
      if (!row) {
        this.holds.forget(id);
        return;
      }
      const request = JSON.parse(row.request) as InvokeRequest;
      if (lane.channel === null) this.holds.note(id, request.service);
      let run = this.deps.run;
      if (request.service.startsWith(RUNNER_SERVICE_MARK)) {
        const runner = this.runnerOf(lane.channel);
        if (!runner) {
          await this.awaitRunner(lane, id, request.service);
          return;
        }
        run = runner;
      }
      const source = request.delivery?.source;
      const delivery = { attempt: row.attempts, firstReceivedAt: new Date(row.first_received_at).toISOString(), cid: row.cid, ...(source ? { source } : {}) };
      log.debug({ event: id, channel: lane.channel, service: request.service, attempt: row.attempts, cid: attemptCid, original: row.cid }, 'queue: attempt started');
      const listener = this.listenerOf(lane.channel);
      const startedAt = clock.now();
      const report: DurableAttempt = { queue: lane.channel ?? '', id, cid: row.cid, attemptCid, attempt: row.attempts, startedAt };
      if (listener?.started) {
        try {
          listener.started(report);
        } catch (err) {
          log.error({ err, event: id }, 'queue: an event source failed to note an attempt start');
        }
      }
      // Without a span, the run keeps the stored trace context (that of the request that queued it).
      const span = this.deps.tracing?.()?.queuedRun(request, { channel: lane.channel, cid: attemptCid, eventCid: row.cid, attempt: row.attempts });
      const outcome = await run(span ? { ...request, cid: attemptCid, delivery, trace: span.trace } : { ...request, cid: attemptCid, delivery });
      span?.end(outcome.ok ? { ok: true } : { ok: false, kind: outcome.kind });
      if (this.stopped) return;
      const where = { event: id, channel: lane.channel, service: request.service, attempt: row.attempts, cid: attemptCid, original: row.cid };
      const now = clock.now();
      const settle = (next: DurableSettlement['next']) => (listener ? (tx: Queryable) => listener.settled(tx, { ...report, endedAt: now, outcome, next }) : undefined);
      if (!outcome.ok && outcome.kind === TENANT_QUOTA) {
        await this.waitForQuota(lane, id, request.service, outcome.retryAfterMs, outcome.message);
        return;
      }
      if (outcome.ok) {
        await table.succeeded(id, settle('done'));
        this.holds.forget(id);
        log.debug(where, 'queue: event processed');
        return;
      }
      const errors = withError(row.errors, { attempt: row.attempts, cid: attemptCid, at: new Date(now).toISOString(), kind: outcome.kind, message: outcome.message });
      const settings = lane.settings;
      if (outcome.permanent || row.attempts >= settings.max_attempts) {
        await table.deadLetter(id, errors, settle('dead'));
        this.holds.forget(id);
        log.warn({ ...where, kind: outcome.kind, error: outcome.message, permanent: outcome.permanent }, 'queue: event moved to the dead-letter queue');
        return;
      }
      const due = now + backoffMs(settings, row.attempts, this.deps.random);
      await table.retryLater(id, errors, due, settle('retry'));
      lane.addWaiting(id, due);
      log.info({ ...where, kind: outcome.kind, error: outcome.message, retryInMs: due - now }, 'queue: attempt failed, retry scheduled');
    } catch (err) {
      // The table could not be written (store closed or failing): the row stays as it was and is recovered at the next start.
      if (!this.stopped) log.error({ err, event: id }, 'queue: attempt bookkeeping failed');
    }
  }

  /**
   * An attempt its tenant's quota refused (the tenant's CPU of the last minute, its calls at
   * once) did not run: it goes back to pending, its attempt not counted, due when the refusal
   * said another may pass. A channel's queue is one tenant's, and waits whole until then: a
   * backlog of events of a tenant over its quota costs one refused attempt per wait, not two
   * store writes and a log line per event as fast as the backoff allows (nor their attempts,
   * which had sent them to the dead-letter queue). The background queue holds every tenant's
   * invokeAsync events: there the refused tenant's events wait, the others' run (tenant-holds.ts).
   */
  private async waitForQuota(lane: Lane, id: number, service: string, retryAfterMs: number | undefined, reason: string): Promise<void> {
    const now = this.deps.clock.now();
    const waitMs = Math.min(QUOTA_WAIT_MAX_MS, Math.max(QUOTA_WAIT_MIN_MS, retryAfterMs ?? QUOTA_WAIT_MS));
    const due = now + waitMs;
    await this.deps.table.postpone(id, due);
    lane.addWaiting(id, due);
    if (lane.channel !== null) lane.heldUntil = Math.max(lane.heldUntil, due);
    else this.holds.hold(service, due);
    const logged = this.quotaLogged.get(lane);
    if (logged === undefined || now - logged >= QUOTA_LOG_EVERY_MS || now < logged) {
      this.quotaLogged.set(lane, now);
      this.deps.log.info({ event: id, channel: lane.channel, service, waitMs, reason }, "queue: the tenant's quota refused an attempt; it waits, not counted as one (logged at most once a minute per queue)");
    }
  }

  /** A runner's event never runs as a service: without its runner it goes back, uncounted, until the runner comes. */
  private async awaitRunner(lane: Lane, id: number, owner: string): Promise<void> {
    const queue = lane.channel ?? '';
    const due = this.deps.clock.now() + RUNNER_WAIT_MS;
    await this.deps.table.postpone(id, due);
    if (!this.awaitingRunner.has(id)) this.deps.log.warn({ event: id, channel: queue, owner }, 'queue: no runner for this event yet (its plugin is off or not started); it waits without using an attempt');
    this.awaitingRunner.set(id, queue);
    // A runner registered while the row was written back: run it now.
    lane.addWaiting(id, this.runnerOf(queue) ? this.deps.clock.now() : due);
  }

  /** Replayed events are due now; an event already waiting is moved up. */
  replayed(events: ReadonlyArray<{ id: number; channel: string | null }>): void {
    const now = this.deps.clock.now();
    for (const e of events) {
      const lane = this.laneOf(e.channel);
      if (!lane.running.has(e.id)) lane.addWaiting(e.id, now);
    }
    this.pump();
  }

  removed(events: ReadonlyArray<{ id: number; channel: string | null }>): void {
    for (const e of events) {
      this.lanes.get(e.channel ?? BACKGROUND)?.remove(e.id);
      this.holds.forget(e.id);
    }
  }

  /** Events an operator may act on now: not running (an attempt in flight finishes first). */
  notRunning<T extends { id: number; channel: string | null }>(events: readonly T[]): T[] {
    return events.filter((e) => !this.lanes.get(e.channel ?? BACKGROUND)?.running.has(e.id));
  }

  /**
   * No new attempts; running ones get stopWaitMs to finish. Called when shutdown begins and again
   * at the plugin's stop: the wait happens once.
   */
  stop(): Promise<void> {
    return (this.stopping ??= this.drain());
  }

  private async drain(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    if (this.soon) clearImmediate(this.soon);
    if (this.adoptTimer) clearInterval(this.adoptTimer);
    let timeout: NodeJS.Timeout | undefined;
    const finished = Promise.allSettled([...this.attempts]).then(() => true);
    const waited = new Promise<boolean>((resolve) => (timeout = setTimeout(() => resolve(false), this.deps.stopWaitMs)));
    const allDone = await Promise.race([finished, waited]);
    clearTimeout(timeout);
    this.stopped = true;
    if (!allDone) this.deps.log.warn({ running: this.running, stop_wait_ms: this.deps.stopWaitMs }, 'queue: attempts still running at shutdown are left for the next start, where they run again');
  }
}
