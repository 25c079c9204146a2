import type { Logger } from 'pino';
import { monotonicClock, monotonicNow, type Clock } from '../platform/clock.ts';
import { SvcError } from '../errors.ts';
import { ServicePositions } from './source-map.ts';
import { residentMb } from './resident.ts';
import { acquireWorkerBundle, releaseWorkerBundle, sandboxEnv, sandboxSpawner, SandboxWorker, type DeployKind, type DeployOutcome, type PendingCall } from './process.ts';
import { wireLineLimit } from './wire.ts';
import { IdTable } from './id-table.ts';
import { Ticker } from '../platform/ticker.ts';
import { Demotion, newCpuWatch } from './demotion.ts';
import { TENANT_NICE } from './priority.ts';
import { parseInvokeResult, type InvokeRequest, type InvokeResult, type SandboxCaps, type SandboxMessage, type ServiceMeta, type SandboxStats } from './protocol.ts';
import { tenantOf } from '../../sdk/plugin/tenants.ts';
import type { FairShare, Release } from './fair.ts';

export type { DeployOutcome };

export interface PoolCaps extends SandboxCaps {
  /** Calls in flight on one sandbox process before new calls go to the next one. */
  spillAt: number;
  /** When a home process that grew under a load and then went idle is replaced by a fresh one (undefined: never). */
  recycle?: RecyclePolicy;
  /**
   * With `belowNormalPriority`: processes start at the normal priority and are lowered once they
   * use more than this many cores over a second (demotion.ts); 0 or absent, they start low.
   */
  demoteAboveCores?: number;
  /**
   * The group runs one tenant's services only (a tenant's own processes): a crash its services
   * shared is that tenant's, so each suspect takes a strike, and SINGLE_TENANT_STRIKES quarantine.
   */
  singleTenant?: boolean;
}

/**
 * A sandbox process keeps the memory a load made it take after the load ends: V8 and the
 * isolates free theirs, but glibc keeps the freed pages in its arenas. A process that had no
 * call for `idleMs` and is resident above `aboveMb` (and at least RECYCLE_GROWTH_MB above what
 * it had when it became ready, so a process that is simply big is not replaced over and over)
 * is replaced: a fresh one is started, deploys every service, takes the slot, and the old one
 * ends once its last call and deploy are done.
 */
export interface RecyclePolicy {
  idleMs: number;
  aboveMb: number;
}

/** Answers a host call the sandbox forwarded; resolves with the reply envelope as JSON, never rejects. */
export type HostCallHandler = (op: string, argsJson: string, invocation: InvokeRequest, caller: HostCaller) => Promise<string>;

/** The call a host call came from, as the pool knows it (nothing here comes from the sandbox). */
export interface HostCaller {
  /** The pool's id of the call: what a call it starts names as its caller (NestedCall.caller). */
  id: number;
  /** How long the call has left before its time limit, ms (never more than the sandbox gives it). */
  remainingMs: number;
}

/** A call one service makes of another (`invoke`), as the pool runs it. */
export interface NestedCall {
  /** The calling call's id (HostCaller.id): the call runs in another sandbox process when there is one. */
  caller: number;
  /** Its time limit, when below its service's own. */
  timeoutMs: number;
  /** Its depth in the invoke chain, 1 or more. */
  depth: number;
}

/** A call is answered by this long after its service's time limit, whatever the sandbox does. */
export const CALL_MARGIN_MS = 500;
/** A request body's text at least this long crosses beside its request, not escaped into its JSON (shorter, escaping costs less than the copy of the request). */
const RAW_APART_MIN = 512;
/** Crashes pinned on one service within the window before it is quarantined. */
const STRIKES_TO_QUARANTINE = 3;
/**
 * The same in a tenant's own processes, where a shared crash strikes each suspect too: a crash
 * loop there costs every call in flight of that tenant, and about a second of CPU per crash.
 */
const SINGLE_TENANT_STRIKES = 2;
const STRIKE_WINDOW_MS = 60_000;
/** A service suspected in a crash it shared with others runs alone in its own process this long. */
const PROBATION_MS = 60_000;
const MAX_PROBATION_PROCESSES = 4;
/** Restart back-off: consecutive deaths of one slot within the window double the delay, up to the cap. */
const BACKOFF_WINDOW_MS = 30_000;
const BACKOFF_BASE_MS = 100;
const BACKOFF_MAX_MS = 5_000;
/**
 * A process that owes an answer and has said nothing for this long past the longest time limit
 * is wedged. Counted from when it began to owe one (SandboxWorker.owedSince), never from the
 * last time it spoke: after a quiet spell that would be long ago.
 */
const WEDGED_AFTER_MS = 5_000;
const SWEEP_MS = 50;
/**
 * With no call pending the sweep has only slow work left (a process wedged for seconds, probation
 * ends, recycling after a minute's quiet): it runs this often instead, so an idle kernel sleeps.
 */
const QUIET_SWEEP_MS = 1_000;
/** Tenants' processes are read for demotion every this many sweeps (demotion.ts). */
const DEMOTE_EVERY = 4;
/** How long after a demotion or a death a tenant group's new processes start low. */
const LOW_AFTER_MS = 10 * 60_000;
/** Growth over its size when ready that a process must show before it is recycled (RecyclePolicy). */
const RECYCLE_GROWTH_MB = 16;
/** A deploy not answered by then (the process bounds a build at 6 s; a redeploy builds twice at most, queued behind others) means the process is stuck. */
const DEPLOY_WEDGED_MS = 30_000;
/** How long a deploy waits for a sandbox process to become ready. */
const READY_WAIT_MS = 30_000;

/** A call's outcome label from the code that ended it: SANDBOX_CRASHED → crashed, SERVICE_TIMEOUT → timeout, TENANT_QUOTA → tenant_quota. */
export function outcomeOf(code: string): string {
  return code.replace(/^(SERVICE|SANDBOX)_/, '').toLowerCase();
}

/**
 * isolated-vm needs --no-node-snapshot. The semi-space cap is for the process's own heap only
 * (isolated-vm clears the flag before it makes isolates, which size theirs from their memory
 * limit): under load V8 grew it to 4 MB semi-spaces, 8 MB of resident young generation holding
 * under 1 MB of live data (batches of call text that die at once). Capped at 1 MB, a sandbox
 * process under load is ≈ 5 MB smaller, at the same CPU per request (bench/README.md, Memory).
 */
export const SANDBOX_NODE_FLAGS = ['--no-node-snapshot', '--max-semi-space-size=1'];

/** The home process slot of a service: a stable hash of its name (tests place neighbours with it). */
export function homeIndex(service: string, workers: number): number {
  let h = 0;
  for (let i = 0; i < service.length; i++) h = (h * 31 + service.charCodeAt(i)) | 0;
  return Math.abs(h) % workers;
}

/** A call not answered yet, as a shutdown cut short reports it. */
export interface CallInFlight {
  service: string;
  cid: string;
  channel: string | undefined;
  /** A Use queue attempt (it runs again after the restart). */
  queued: boolean;
}

/** One group of sandbox processes (groups.ts): the platform's, the tenants' shared one, or one tenant's own. */
export interface GroupOptions {
  processes: number;
  caps: PoolCaps;
  log: Logger;
  /** Answers host calls services make (publish, outgoing calls); never rejects. */
  hostCall: HostCallHandler;
  /** Called when a call that made host calls is over, however it ended. */
  hostCallsDone?: (request: InvokeRequest) => void;
  /** Durations, deadlines and quiet periods: monotonic, so a wall clock that jumps cuts no call short. */
  clock?: Clock;
  /** Call ids shared by every group of a runner, so that a nested call's caller is named in whichever group runs it. */
  ids?: { next: number };
  /** CPU the processes report (`caps.reportCpu`), ms by service. */
  onCpu?: (service: string, ms: number) => void;
  /** A ceiling on a service's memory limit below `caps.maxMemoryMb` (its tenant's `memory_mb` quota). */
  memoryCapOf?: (service: string) => number | undefined;
  /** A group of tenants' processes: calls enter isolates by their tenants' fair shares of the machine's cores (fair.ts), one FairShare for every such group. */
  fair?: FairShare<PendingCall>;
}

/** What a group holds of a deployed service: enough to deploy it in another group (a tenant that changed `processes`). */
export interface ServiceSource {
  file: string;
  code: string;
  sourceMap: string | undefined;
}

interface ServiceCode extends ServiceSource {
  /** Bumped on every deploy, so a process knows which version it holds. */
  version: number;
  timeoutMs: number;
  /** The memory limit it declared, so a process can build its isolate once, not twice. */
  memoryMb: number | undefined;
  positions: ServicePositions;
}

/**
 * A supervised pool of sandbox processes. Each service has a home process; a process that dies
 * fails only the calls it was running and is restarted (with back-off), and the services it held
 * are deployed to it again one at a time, so a service whose code kills the process is named.
 *
 * Crashes are pinned on a service when it is the only suspect (the only one with calls in
 * flight, or the one being deployed). A crash shared by several services puts each of them on
 * probation in a process of its own, where the next crash is unambiguous. A service with
 * STRIKES_TO_QUARANTINE pinned crashes in STRIKE_WINDOW_MS is quarantined until its file changes.
 * Every call is answered within its service's limit plus CALL_MARGIN_MS, whatever the processes do.
 */
export class SandboxPool {
  private readonly homes: SandboxWorker[] = [];
  private readonly probation = new Map<string, { worker: SandboxWorker; until: number }>();
  /** Fresh processes starting to replace an idle home (RecyclePolicy), by slot. */
  private readonly successors = new Map<number, SandboxWorker>();
  private readonly services = new Map<string, ServiceCode>();
  private readonly pending = new IdTable<PendingCall>();
  /** Calls with no ready process to go to yet. */
  private waiting: PendingCall[] = [];
  private readonly strikes = new Map<string, number[]>();
  private readonly quarantined = new Map<string, string>();
  private readonly deaths = new Map<string, number[]>();
  private readonly ids: { next: number };
  private nextDeploy = 1;
  private version = 0;
  private closing = false;
  private sdkCode = '';
  /** Every SWEEP_MS while calls are pending, QUIET_SWEEP_MS otherwise (sweep). */
  private readonly sweeper = new Ticker(() => this.sweep());
  private workerFile = '';
  /** Outcomes of calls by service (SandboxStats): one increment per call, read when asked. */
  private readonly outcomes = new Map<string, Record<string, number>>();
  /** Isolates rebuilt after a limit, by service: how many, and how long they waited their tenant's turn. */
  private readonly rebuilds = new Map<string, { count: number; waitedMs: number }>();
  private restarts = 0;

  private readonly size: number;
  private readonly caps: PoolCaps;
  private readonly log: Logger;
  private readonly hostCall: HostCallHandler;
  private readonly hostCallsDone: (request: InvokeRequest) => void;
  private readonly clock: Clock;
  private readonly onCpu: ((service: string, ms: number) => void) | undefined;
  private readonly memoryCapOf: ((service: string) => number | undefined) | undefined;
  private readonly fair: FairShare<PendingCall> | undefined;
  /** Tenants' processes that start at the normal priority (PoolCaps.demoteAboveCores). */
  private readonly demotion: Demotion | undefined;
  /** Until when (pool clock) new processes start low: a process of this group was demoted, or died. */
  private lowUntil = -Infinity;
  private sweeps = 0;

  constructor(options: GroupOptions) {
    this.size = options.processes;
    this.caps = options.caps;
    this.log = options.log;
    this.hostCall = options.hostCall;
    this.hostCallsDone = options.hostCallsDone ?? (() => undefined);
    this.clock = options.clock ?? monotonicClock;
    this.ids = options.ids ?? { next: 1 };
    this.onCpu = options.onCpu;
    this.memoryCapOf = options.memoryCapOf;
    this.fair = options.fair;
    const above = this.caps.demoteAboveCores ?? 0;
    this.demotion = this.caps.belowNormalPriority && above > 0 ? new Demotion(above) : undefined;
  }

  async start(sdkCode: string): Promise<void> {
    this.sdkCode = sdkCode;
    this.workerFile = acquireWorkerBundle();
    for (let i = 0; i < this.size; i++) this.homes[i] = this.spawn(i, undefined);
    this.sweeper.atMost(QUIET_SWEEP_MS);
    await this.whenReady(READY_WAIT_MS, () => this.homes.every((w) => w.state === 'ready'));
  }

  private spawn(slot: number | undefined, alone: string | undefined): SandboxWorker {
    // SVC_SANDBOX_NODE_ARGS adds Node flags to sandbox processes (diagnostics, e.g. --cpu-prof).
    const extra = process.env.SVC_SANDBOX_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
    // SVC_SANDBOX_PROGRAM runs another program in their place: the floor suite's stand-ins (bench/peers/standins/).
    const program = process.env.SVC_SANDBOX_PROGRAM || this.workerFile;
    // Through the spawner: starting a process blocks its caller's event loop (spawner.ts).
    const low = this.startsLow();
    const child = sandboxSpawner.spawn(process.execPath, [...SANDBOX_NODE_FLAGS, ...extra, program], sandboxEnv(), low ? TENANT_NICE : undefined);
    const worker = new SandboxWorker(
      slot,
      alone,
      child,
      (w, m, b) => this.onMessage(w, m, b),
      (w, why) => this.onViolation(w, why),
      wireLineLimit(this.caps),
    );
    child.on('error', (err) => {
      this.log.error({ err }, 'sandbox process could not be started');
      this.onExit(worker, null, null);
    });
    worker.quietSince = this.clock.now();
    child.on('exit', (code, signal) => this.onExit(worker, code, signal));
    worker.cpu = newCpuWatch(low);
    worker.send({ t: 'init', caps: this.demotion ? { ...this.caps, belowNormalPriority: low } : this.caps }, JSON.stringify(this.sdkCode));
    return worker;
  }

  /**
   * Tenants' processes start low unless demotion is on; with it, for a while after one of the
   * group was demoted or died (a crash loop's restarts, a busy tenant's next process).
   */
  private startsLow(): boolean {
    if (!this.caps.belowNormalPriority) return false;
    return !this.demotion || this.clock.now() < this.lowUntil;
  }

  /**
   * Every DEMOTE_EVERY sweeps: lowers the group's processes once they have been busy together
   * (demotion.ts), and walks the threads of those just lowered again a few times.
   */
  private demoteBusy(): void {
    if (!this.demotion || ++this.sweeps % DEMOTE_EVERY !== 0) return;
    const read: SandboxWorker[] = [];
    let cores = 0;
    for (const w of this.liveWorkers()) {
      const pid = w.child.pid;
      if (pid === undefined) continue;
      if (w.cpu.demoted) this.demotion.lower(pid, w.cpu);
      // Starting or deploying, it runs the kernel's work (Node's start-up, compiling services), not a tenant's.
      else if (w.state !== 'ready' || w.deploys.size) Demotion.reset(w.cpu);
      else {
        read.push(w);
        cores += this.demotion.cores(pid, w.cpu) ?? 0;
      }
    }
    if (cores <= this.demotion.aboveCores) return;
    for (const w of read) this.demotion.lower(w.child.pid!, w.cpu);
    this.lowUntil = this.clock.now() + LOW_AFTER_MS;
    this.log.warn({ pids: read.map((w) => w.child.pid), cores: Math.round(cores * 100) / 100, aboveCores: this.demotion.aboveCores }, "a tenant's sandbox processes were busy; they run at the lowest CPU priority from now on");
  }

  /** A tenant's process whose isolates keep meeting their memory limit is lowered as a busy one is (demotion.ts, memoryLimitMet). */
  private memoryLimitMet(worker: SandboxWorker): void {
    const pid = worker.child.pid;
    if (!this.demotion || pid === undefined || !this.demotion.memoryLimitMet(worker.cpu)) return;
    this.demotion.lower(pid, worker.cpu);
    this.lowUntil = this.clock.now() + LOW_AFTER_MS;
    this.log.warn({ pids: [pid], memoryLimits: worker.cpu.memoryLimits.length }, "a tenant's sandbox process kept meeting its isolates' memory limits; it runs at the lowest CPU priority from now on");
  }

  /** Ends a call once: it leaves the books, and its promise settles. */
  private settle(call: PendingCall, outcome: InvokeResult | SvcError): void {
    this.pending.delete(call.id);
    const worker = call.worker;
    if (call.held) {
      call.held = false;
      this.fair!.forget(call.tenant!, call);
    }
    if (worker) {
      worker.inflight.delete(call.id);
      if (this.fair && call.parked === 0) this.busy(worker, call, -1);
      // Answered or timed out, a retired process's last call lets it end.
      if (worker.retiring) this.stopIfRetired(worker);
    }
    this.count(call.request.service, outcome instanceof SvcError ? outcomeOf(outcome.code) : outcome.error ? 'error' : 'ok');
    if (outcome instanceof SvcError) call.reject(outcome);
    else call.resolve(outcome);
    if (call.calledHost) this.hostCallsDone(call.request);
  }

  private onViolation(worker: SandboxWorker, why: string): void {
    this.log.error({ pid: worker.child.pid, why }, 'sandbox process broke the wire protocol; stopping it');
    worker.child.kill('SIGKILL');
  }

  private onExit(worker: SandboxWorker, code: number | null, signal: NodeJS.Signals | null): void {
    if (worker.state === 'dead') return;
    worker.state = 'dead';
    const suspects = new Set<string>();
    for (const call of worker.inflight.values()) {
      suspects.add(call.request.service);
      this.settle(call, new SvcError('SANDBOX_CRASHED'));
    }
    // Deploys run one at a time in the process: the first one outstanding is the one that was running.
    let deploying: { name: string; kind: DeployKind } | undefined;
    for (const d of worker.deploys.values()) {
      deploying ??= d;
      d.done({ ok: false, error: 'the sandbox process died while deploying it' });
    }
    worker.deploys.clear();
    if (this.closing || worker.retiring) return;
    if (worker.successor) {
      // The home it was to replace still serves; a service that killed it while deploying is struck as anywhere.
      this.successors.delete(worker.slot!);
      this.log.error({ pid: worker.child.pid, code, signal, deploying: deploying?.name }, 'a sandbox process started to replace an idle one died before it was ready; the old one stays');
      if (deploying && deploying.kind !== 'probe') this.attribute(worker, new Set([deploying.name]));
      return;
    }
    this.log.error({ pid: worker.child.pid, code, signal, services: [...suspects], deploying: deploying?.name }, 'sandbox process died; restarting it');
    // A tenant that crashed its process starts the next one low: a crash loop's restarts do not outbid the kernel.
    if (this.demotion) this.lowUntil = this.clock.now() + LOW_AFTER_MS;
    // A new version that kills the process fails its deploy (the running version stays); that is not the running version's crash.
    if (deploying?.kind !== 'probe') {
      if (deploying) suspects.add(deploying.name);
      this.attribute(worker, suspects);
    }
    this.restartLater(worker);
  }

  private attribute(worker: SandboxWorker, suspects: Set<string>): void {
    if (worker.alone !== undefined) return this.strike(worker.alone);
    if (suspects.size === 1) return this.strike([...suspects][0]!);
    for (const name of suspects) {
      if (this.probation.size >= MAX_PROBATION_PROCESSES) break;
      if (this.probation.has(name) || this.quarantined.has(name) || !this.services.has(name)) continue;
      this.log.warn({ service: name, with: [...suspects] }, 'service shared a sandbox crash with others; it runs alone on probation');
      this.probation.set(name, { worker: this.spawn(undefined, name), until: this.clock.now() + PROBATION_MS });
      // Only a suspect on probation: it cannot share another crash before this strike expires with its probation.
      if (this.caps.singleTenant) this.strike(name);
    }
  }

  private strike(name: string): void {
    if (!this.services.has(name) || this.quarantined.has(name)) return;
    const now = this.clock.now();
    const list = (this.strikes.get(name) ?? []).filter((t) => t > now - STRIKE_WINDOW_MS);
    list.push(now);
    this.strikes.set(name, list);
    const probation = this.probation.get(name);
    if (probation) probation.until = now + PROBATION_MS;
    if (list.length < (this.caps.singleTenant ? SINGLE_TENANT_STRIKES : STRIKES_TO_QUARANTINE)) {
      this.log.warn({ service: name, crashes: list.length }, 'service crashed its sandbox process');
      return;
    }
    const why = `it crashed its sandbox process ${list.length} times within ${STRIKE_WINDOW_MS / 1000} s`;
    this.quarantined.set(name, why);
    this.strikes.delete(name);
    this.log.error({ service: name }, `service quarantined: ${why}; its calls answer 503 until its file changes`);
    this.endProbation(name);
    for (const w of this.liveWorkers()) {
      if (w.holds.delete(name)) w.send({ t: 'undeploy', name });
    }
    this.drainWaiting();
  }

  private restartLater(worker: SandboxWorker): void {
    const key = worker.alone === undefined ? `home:${worker.slot}` : `alone:${worker.alone}`;
    const now = this.clock.now();
    const recent = (this.deaths.get(key) ?? []).filter((t) => t > now - BACKOFF_WINDOW_MS);
    recent.push(now);
    this.deaths.set(key, recent);
    const delay = recent.length <= 1 ? 0 : Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (recent.length - 2));
    setTimeout(() => {
      // Another process may hold the slot by now (a successor promoted meanwhile).
      if (this.closing || (worker.slot !== undefined && this.homes[worker.slot] !== worker)) return;
      this.restarts++;
      if (worker.slot !== undefined) {
        // A successor already starting for this slot takes it over.
        const next = this.successors.get(worker.slot);
        this.successors.delete(worker.slot);
        if (next) next.successor = false;
        this.homes[worker.slot] = next ?? this.spawn(worker.slot, undefined);
      } else if (worker.alone !== undefined) {
        const probation = this.probation.get(worker.alone);
        if (probation?.worker === worker && !this.quarantined.has(worker.alone)) probation.worker = this.spawn(undefined, worker.alone);
      }
    }, delay).unref();
  }

  private endProbation(name: string): void {
    const probation = this.probation.get(name);
    if (!probation) return;
    this.probation.delete(name);
    const w = probation.worker;
    w.retiring = true;
    this.stopIfRetired(w);
    this.log.info({ service: name }, 'probation ended; the service runs at home again');
  }

  private onMessage(worker: SandboxWorker, message: SandboxMessage, body: string): void {
    switch (message.t) {
      case 'result': {
        const call = worker.inflight.get(message.id);
        if (!call) return;
        if (message.fail === 'SERVICE_MEMORY_LIMIT') this.memoryLimitMet(worker);
        if (message.fail) this.settle(call, new SvcError(message.fail, message.message));
        else {
          const result = parseInvokeResult(body, call.request.replyBodyJson === true);
          if (!('invalid' in result) && result.error?.stack) result.error.stack = this.services.get(call.request.service)?.positions.rewrite(result.error.stack) ?? result.error.stack;
          this.settle(call, 'invalid' in result ? new SvcError('SERVICE_OUTPUT_INVALID', `Invalid service output: ${result.invalid}`) : result);
        }
        return;
      }
      case 'hostcall': {
        const call = worker.inflight.get(message.id);
        if (call) {
          call.calledHost = true;
          // Waiting on the host, it runs no code: its isolate's thread may be free for another call.
          if (this.fair && call.parked++ === 0) this.busy(worker, call, -1);
        }
        const reply = call
          ? this.hostCall(message.op, body, call.request, { id: call.id, remainingMs: call.ends - this.clock.now() })
          : Promise.resolve(JSON.stringify({ ok: false, error: { kind: 'Error', status: 500, message: 'request already finished' } }));
        void reply.then((json) => {
          if (call && this.fair && worker.inflight.get(call.id) === call && --call.parked === 0) this.busy(worker, call, 1);
          if (worker.live) worker.send({ t: 'hostreply', id: message.id, seq: message.seq }, json);
        });
        return;
      }
      case 'cpu':
        // Untrusted like every message: only the tenants whose services this group runs are charged.
        if (this.onCpu) for (const [service, us] of message.use) if (this.chargeable(worker, service)) this.onCpu(service, us / 1000);
        return;
      case 'deployed': {
        const d = worker.deploys.get(message.did);
        if (!d) return;
        worker.deploys.delete(message.did);
        if (message.ok && message.meta) d.done({ ok: true, meta: message.meta as ServiceMeta });
        else d.done({ ok: false, error: (message.error ?? 'deploy failed').slice(0, 4000) });
        this.stopIfRetired(worker);
        return;
      }
      case 'ready':
        void this.replay(worker);
        return;
      case 'overrun':
        this.log.warn({ service: message.name }, 'service code kept running after its calls ended; its isolate was disposed');
        return;
      case 'rebuilt':
        // Untrusted like every message: only a deployed service's name becomes a metric label.
        if (this.services.has(message.name)) {
          const r = this.rebuilds.get(message.name) ?? { count: 0, waitedMs: 0 };
          r.count += 1;
          r.waitedMs += message.waitedMs ?? 0;
          this.rebuilds.set(message.name, r);
        }
        return;
    }
  }

  /**
   * Whether CPU a process reports for a service may be charged: a service deployed here, or one of
   * a tenant whose services run here (a build that failed, whose CPU its tenant used all the same).
   */
  private chargeable(worker: SandboxWorker, service: string): boolean {
    if (this.services.has(service)) return true;
    for (const d of worker.deploys.values()) if (d.name === service) return true;
    const tenant = tenantOf(service);
    if (tenant === undefined) return false;
    for (const name of this.services.keys()) if (tenantOf(name) === tenant) return true;
    return false;
  }

  /** Deploys, one at a time, every service a fresh process should hold; then it takes calls. */
  private async replay(worker: SandboxWorker): Promise<void> {
    for (;;) {
      if (!worker.live) return;
      const next = this.nextToHold(worker);
      if (!next) break;
      const [name, s] = next;
      const outcome = await this.deployOn(worker, name, s, 'replay');
      if (!worker.live) return;
      worker.holds.set(name, s.version);
      if (!outcome.ok) this.log.error({ service: name, error: outcome.error }, 'service failed to deploy to a restarted sandbox process');
      // Calls for what it holds already need not wait for the rest.
      this.drainWaiting();
    }
    worker.state = 'ready';
    worker.readyMb = residentMb(worker.child.pid);
    if (worker.successor) this.promote(worker);
    this.drainWaiting();
  }

  /** A process stopped on purpose ends once nothing it runs is owed an answer. */
  private stopIfRetired(w: SandboxWorker): void {
    if (w.retiring && w.inflight.size === 0 && w.deploys.size === 0 && w.live) w.child.kill('SIGTERM');
  }

  /** A ready successor takes its slot; the home it replaces takes no new calls and ends when done. */
  private promote(next: SandboxWorker): void {
    const slot = next.slot!;
    this.successors.delete(slot);
    next.successor = false;
    const old = this.homes[slot]!;
    this.homes[slot] = next;
    old.retiring = true;
    this.stopIfRetired(old);
    this.log.info({ pid: next.child.pid, replaced: old.child.pid }, 'a sandbox process idle after a load was replaced by a fresh one, to give its memory back');
  }

  /** RecyclePolicy: at most one replacement under way at a time; memory is read only after a quiet period. */
  private recycleIdle(now: number, policy: RecyclePolicy): void {
    for (const w of this.homes) {
      if (w.sent !== w.seenSent || w.inflight.size || w.deploys.size) {
        w.seenSent = w.sent;
        w.quietSince = now;
        continue;
      }
      if (this.successors.size || w.state !== 'ready' || w.recycled || now - w.quietSince < policy.idleMs) continue;
      // Memory does not grow while idle: looked at once per quiet period.
      w.quietSince = now;
      const mb = residentMb(w.child.pid);
      if (mb === undefined || mb <= policy.aboveMb || mb < (w.readyMb ?? 0) + RECYCLE_GROWTH_MB) continue;
      w.recycled = true;
      const next = this.spawn(w.slot, undefined);
      next.successor = true;
      this.successors.set(w.slot!, next);
      this.log.info({ pid: w.child.pid, residentMb: Math.round(mb) }, 'sandbox process idle after a load; starting a fresh one to replace it');
    }
  }

  private nextToHold(worker: SandboxWorker): [string, ServiceCode] | undefined {
    for (const [name, s] of this.services) {
      if (this.quarantined.has(name)) continue;
      if (worker.alone !== undefined && worker.alone !== name) continue;
      if (worker.holds.get(name) !== s.version) return [name, s];
    }
    return undefined;
  }

  private deployOn(worker: SandboxWorker, name: string, s: { file: string; code: string; memoryMb?: number }, kind: DeployKind): Promise<DeployOutcome> {
    return new Promise((resolve) => {
      const did = this.nextDeploy++;
      // The process bounds each build itself; one that says nothing long after is wedged.
      const wedged = setTimeout(() => {
        this.log.error({ pid: worker.child.pid, service: name }, 'sandbox process did not finish a deploy; stopping it');
        worker.child.kill('SIGKILL');
      }, DEPLOY_WEDGED_MS);
      wedged.unref();
      const done = (o: DeployOutcome) => {
        clearTimeout(wedged);
        resolve(o);
      };
      worker.deploys.set(did, { name, kind, done });
      worker.send({ t: 'deploy', did, name, file: s.file, memoryMb: s.memoryMb, capMb: this.memoryCapOf?.(name) }, JSON.stringify(s.code));
    });
  }

  private liveWorkers(): SandboxWorker[] {
    const out = this.homes.filter((w) => w.live);
    for (const p of this.probation.values()) if (p.worker.live) out.push(p.worker);
    for (const w of this.successors.values()) if (w.live) out.push(w);
    return out;
  }

  private async whenReady(ms: number, ready: () => boolean): Promise<void> {
    // Real time, whatever clock the pool was given: this loop sleeps on real timers.
    const until = monotonicNow() + ms;
    while (!ready()) {
      if (this.closing || monotonicNow() > until) throw new SvcError('SERVICE_UNAVAILABLE', 'no sandbox process became ready');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /**
   * Compiles on one process first; only a service that compiled replaces the running version
   * everywhere. A failure leaves the last good version in place. A new version lifts a quarantine.
   */
  async deploy(name: string, file: string, code: string, sourceMap?: string): Promise<DeployOutcome> {
    let probe: SandboxWorker | undefined;
    await this.whenReady(READY_WAIT_MS, () => !!(probe = this.homes.find((w) => w.state === 'ready')));
    const positions = new ServicePositions(file, sourceMap);
    const outcome = await this.deployOn(probe!, name, { file, code }, 'probe');
    if (!outcome.ok) return { ok: false, error: positions.rewrite(outcome.error) };
    const limits = outcome.meta.limits;
    const s: ServiceCode = { file, code, sourceMap, version: ++this.version, timeoutMs: limits.timeoutMs ?? this.caps.defaultTimeoutMs, memoryMb: limits.memoryMb, positions };
    this.services.set(name, s);
    probe!.holds.set(name, s.version);
    if (this.quarantined.delete(name)) this.log.info({ service: name }, 'quarantine lifted: a new version was deployed');
    this.strikes.delete(name);
    // Processes still starting pick the new version up in their replay.
    const others = this.liveWorkers().filter((w) => w !== probe && w.state === 'ready' && (w.alone === undefined || w.alone === name));
    await Promise.all(
      others.map((w) =>
        this.deployOn(w, name, s, 'spread').then((o) => {
          if (o.ok) w.holds.set(name, s.version);
        }),
      ),
    );
    return outcome;
  }

  undeploy(name: string): void {
    this.services.delete(name);
    this.quarantined.delete(name);
    this.strikes.delete(name);
    this.endProbation(name);
    for (const w of this.liveWorkers()) {
      w.holds.delete(name);
      w.send({ t: 'undeploy', name });
    }
  }

  /** The services deployed here, with what deploying them elsewhere takes. */
  sources(): Map<string, ServiceSource> {
    return new Map([...this.services].map(([name, s]) => [name, { file: s.file, code: s.code, sourceMap: s.sourceMap }]));
  }

  invoke(request: InvokeRequest, nested?: NestedCall): Promise<InvokeResult> {
    if (this.quarantined.has(request.service)) return this.refuse(request, 'SERVICE_QUARANTINED');
    if (this.closing) return this.refuse(request, 'SERVICE_UNAVAILABLE');
    const own = this.services.get(request.service)?.timeoutMs ?? this.caps.defaultTimeoutMs;
    const limitMs = nested && nested.timeoutMs < own ? Math.max(1, Math.floor(nested.timeoutMs)) : undefined;
    // A callee runs away from its caller's process when it can: a crash it causes then costs only its own call.
    const avoid = nested && this.pending.get(nested.caller)?.worker;
    const now = this.clock.now();
    // A limit inherited from the caller is answered by itself, margin or not: the caller's own deadline follows it closely.
    const ends = now + (limitMs ?? own);
    return new Promise<InvokeResult>((resolve, reject) => {
      const call: PendingCall = {
        id: this.ids.next++,
        request,
        ends,
        deadline: limitMs === undefined ? ends + CALL_MARGIN_MS : ends,
        worker: undefined,
        calledHost: false,
        resolve,
        reject,
        depth: nested?.depth ?? 0,
        limitMs,
        avoid,
        tenant: this.fair && (tenantOf(request.service) ?? ''),
        parked: 0,
        held: false,
      };
      this.pending.set(call.id, call);
      this.sweeper.atMost(SWEEP_MS);
      const worker = this.route(request.service, avoid);
      if (!worker) this.waiting.push(call);
      else if (this.fair && !this.fair.mayEnter(call.tenant!, !worker.busy.get(request.service), call.depth > 0)) {
        call.held = true;
        this.fair.hold(call.tenant!, call, call.depth > 0, this.startHeld);
      } else this.send(worker, call);
    });
  }

  /** A group of tenants' processes: a call entered or left an isolate's running calls, which may start or end a thread (fair.ts). */
  private busy(worker: SandboxWorker, call: PendingCall, delta: 1 | -1): void {
    const service = call.request.service;
    const n = (worker.busy.get(service) ?? 0) + delta;
    worker.busy.set(service, n);
    if (delta > 0 && n === 1) this.fair!.threadStarted(call.tenant!);
    else if (delta < 0 && n === 0) {
      this.fair!.threadEnded(call.tenant!);
      this.releaseHeld();
    }
  }

  /** Offers freed threads to held calls (fair.ts decides whose; those of other groups too). */
  private releaseHeld(): void {
    if (this.fair?.waiting) this.fair.release();
  }

  /** Starts a call of this group that fair shares held, when offered a thread. */
  private readonly startHeld = (call: PendingCall, admit: (newThread: boolean) => boolean): Release => {
    if (!this.pending.has(call.id)) return 'gone';
    if (this.quarantined.has(call.request.service)) {
      call.held = false;
      this.settle(call, new SvcError('SERVICE_QUARANTINED'));
      return 'gone';
    }
    const worker = this.route(call.request.service, call.avoid);
    if (worker && !admit(!worker.busy.get(call.request.service))) return 'held';
    call.held = false;
    if (worker) this.send(worker, call);
    else this.waiting.push(call);
    return 'started';
  };

  private refuse(request: InvokeRequest, code: 'SERVICE_QUARANTINED' | 'SERVICE_UNAVAILABLE'): Promise<never> {
    this.count(request.service, outcomeOf(code));
    return Promise.reject(new SvcError(code));
  }

  private count(service: string, outcome: string): void {
    let byOutcome = this.outcomes.get(service);
    if (!byOutcome) this.outcomes.set(service, (byOutcome = Object.create(null) as Record<string, number>));
    byOutcome[outcome] = (byOutcome[outcome] ?? 0) + 1;
  }

  stats(): Omit<SandboxStats, 'tenants'> {
    const calls: SandboxStats['calls'] = [];
    for (const [service, byOutcome] of this.outcomes) for (const outcome in byOutcome) calls.push({ service, outcome, count: byOutcome[outcome]! });
    return {
      calls,
      isolateRebuilds: [...this.rebuilds].map(([service, r]) => ({ service, count: r.count, waitedMs: r.waitedMs })),
      processRestarts: this.restarts,
      processes: this.liveWorkers().length,
      quarantined: [...this.quarantined.keys()],
    };
  }

  /**
   * A ready process for a service, or undefined. Each service has a home process (by a hash of
   * its name): its calls batch there, into one isolate, and a service that crashes its process
   * takes down only the services at home there. Past `spillAt` calls in flight at home, or when
   * home is down, the least busy other process takes the call. A service on probation runs only
   * in its own process. `avoid` (a callee's caller's process) is taken only when no other can.
   */
  private route(service: string, avoid?: SandboxWorker): SandboxWorker | undefined {
    const probation = this.probation.get(service);
    if (probation) return this.serves(probation.worker, service) ? probation.worker : undefined;
    const home = this.homes[homeIndex(service, this.homes.length)];
    if (home && home !== avoid && home.inflight.size < this.caps.spillAt && this.serves(home, service)) return home;
    let best: SandboxWorker | undefined;
    for (const w of this.homes) if (w !== avoid && (!best || w.inflight.size < best.inflight.size) && this.serves(w, service)) best = w;
    return best ?? (avoid && this.serves(avoid, service) ? avoid : undefined);
  }

  /**
   * Ready, or still replaying but already holding this service's current version. A process on
   * probation holds its one service only: a callee was once sent to its caller's (the `avoid` of
   * last resort) while the home restarted, and answered 404 as a service not deployed.
   */
  private serves(w: SandboxWorker, service: string): boolean {
    if (w.alone !== undefined && w.alone !== service) return false;
    return w.state === 'ready' || (w.state === 'starting' && w.holds.get(service) === this.services.get(service)?.version);
  }

  private send(worker: SandboxWorker, call: PendingCall): void {
    let json: string;
    let raw: string | undefined;
    try {
      const body = call.request.rawBody;
      if (body && 'text' in body && body.text.length >= RAW_APART_MIN) {
        // The body's text crosses as the message's raw part instead of escaped into its JSON (wire.ts).
        raw = body.text;
        json = JSON.stringify({ ...call.request, rawBody: { apart: raw.length } });
      } else json = JSON.stringify(call.request);
    } catch (err) {
      this.settle(call, new SvcError('INTERNAL', undefined, { cause: err }));
      return;
    }
    call.worker = worker;
    worker.sent++;
    worker.owedSince ??= this.clock.now();
    worker.inflight.set(call.id, call);
    if (this.fair) this.busy(worker, call, 1);
    // callId goes first so the isolate can route host calls; the rest is the request as it is.
    worker.sendCall(call, `{"callId":${call.id},${json.slice(1)}`, raw);
  }

  private drainWaiting(): void {
    if (!this.waiting.length) return;
    const list = this.waiting;
    this.waiting = [];
    for (const call of list) {
      if (!this.pending.has(call.id)) continue;
      if (this.quarantined.has(call.request.service)) {
        this.settle(call, new SvcError('SERVICE_QUARANTINED'));
        continue;
      }
      const worker = this.route(call.request.service, call.avoid);
      if (worker) this.send(worker, call);
      else this.waiting.push(call);
    }
  }

  /** Deadlines, wedged processes and probation ends; one timer for the whole pool. Returns how soon it is wanted again. */
  private sweep(): number {
    const now = this.clock.now();
    for (const call of this.pending.values()) {
      if (now <= call.deadline) continue;
      this.settle(
        call,
        call.worker ? new SvcError('SERVICE_TIMEOUT') : call.held ? new SvcError('SERVICE_UNAVAILABLE', "Its tenant's share of the shared sandbox processes stayed busy until its time limit") : new SvcError('SERVICE_UNAVAILABLE', 'No sandbox process was ready in time'),
      );
      // Still waiting for room in its isolate, it is not started: nobody waits for its answer.
      if (call.worker?.live) call.worker.send({ t: 'cancel', id: call.id });
    }
    if (this.waiting.length && this.waiting.some((c) => !this.pending.has(c.id))) this.waiting = this.waiting.filter((c) => this.pending.has(c.id));
    const wedgedBefore = now - this.caps.maxTimeoutMs - WEDGED_AFTER_MS;
    for (const w of this.liveWorkers()) {
      // Calls still in flight after it last spoke: it owes them from now on. A call the pool gave
      // up on (its deadline passed) stays owed until the process says anything: a process that
      // answers nothing is stopped even when its calls come one at a time, minutes apart.
      if (w.owedSince === undefined) {
        if (w.inflight.size) w.owedSince = now;
      } else if (w.owedSince < wedgedBefore) {
        this.log.error({ pid: w.child.pid, silentMs: Math.round(now - w.owedSince), inflight: w.inflight.size }, 'sandbox process owed answers and said nothing; stopping it');
        w.child.kill('SIGKILL');
        // Its exit may come after the next sweep (a loaded machine): it is not found wedged, and logged, twice.
        w.owedSince = undefined;
      }
    }
    for (const [name, p] of this.probation) if (now > p.until) this.endProbation(name);
    if (this.caps.recycle) this.recycleIdle(now, this.caps.recycle);
    this.demoteBusy();
    // A tenant's lingering share ends with no event of its own (fair.ts): held calls are offered it here.
    this.releaseHeld();
    return this.pending.size > 0 ? SWEEP_MS : QUIET_SWEEP_MS;
  }

  /** How often the pool's sweep runs now (ms): SWEEP_MS while calls are pending. For tests. */
  get sweepEveryMs(): number {
    return this.sweeper.everyMs;
  }

  /** Why a service is quarantined, or undefined. */
  quarantineOf(service: string): string | undefined {
    return this.quarantined.get(service);
  }

  inFlight(): CallInFlight[] {
    return [...this.pending.values()].map(({ request: r }) => ({ service: r.service, cid: r.cid, channel: r.channel, queued: r.delivery !== undefined }));
  }

  /** Process ids of the live sandbox processes (tests and diagnostics). */
  pids(): number[] {
    return this.liveWorkers().flatMap((w) => (w.child.pid === undefined ? [] : [w.child.pid]));
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.sweeper.stop();
    for (const call of this.pending.values()) this.settle(call, new SvcError('SERVICE_UNAVAILABLE'));
    this.waiting = [];
    const all = [...this.homes, ...[...this.probation.values()].map((p) => p.worker), ...this.successors.values()];
    await Promise.all(
      all.map(
        (w) =>
          new Promise<void>((resolve) => {
            if (!w.live || w.child.exitCode !== null) return resolve();
            const force = setTimeout(() => w.child.kill('SIGKILL'), 5_000);
            w.child.once('exit', () => (clearTimeout(force), resolve()));
            w.child.kill('SIGTERM');
          }),
      ),
    );
    if (this.workerFile) await releaseWorkerBundle();
  }
}
