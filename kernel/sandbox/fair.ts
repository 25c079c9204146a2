/**
 * Fair shares of the tenants' shared sandbox processes (README.md, "Fair scheduling").
 *
 * What tenants in one sandbox process take from each other is cores, not places in a queue:
 * each service has its own isolate with its own queue of calls, so one tenant's backlog never
 * stands in front of another's call, but every isolate with a call running is a thread, and
 * the OS shares the cores between threads, not between tenants. A tenant that keeps ten of its
 * isolates busy on two cores leaves a neighbour's one isolate a sixth of them.
 *
 * So the unit shared is a busy isolate (a thread), and the capacity is the machine's cores.
 * A call that would make one of its tenant's isolates busy enters only while the tenant holds
 * fewer than its weighted share of the cores (`cores × weight / Σ weights of the tenants with
 * work`), or while a core is free and no other tenant waits; a call for an isolate already
 * busy adds no thread and enters while its tenant is within its share (or no core is
 * oversubscribed and nobody waits). Every tenant with work gets at least one thread at once,
 * whatever the others hold: its calls are never behind theirs. A tenant over its share (it took
 * the spare cores while alone) is held until its busy isolates drain to its share.
 *
 * A tenant keeps its place among those with work for LINGER_MS after its last call ended: a
 * tenant calling one call after another has no call at all between them, and without the linger
 * a flooding neighbour took every core in each of those gaps, so that each next call started
 * beside it, over its share, until it drained (measured: the neighbour held both cores at every
 * one of its calls, which took 3 to 6 times as long as alone). What this costs is work left
 * undone: after a tenant's last call, the others stay within their shares for LINGER_MS.
 *
 * One FairShare serves every group of tenants' processes, the shared ones and each tenant's own
 * (groups.ts): the cores are the machine's whichever process a thread is in, and a tenant in
 * processes of its own that keeps ten isolates busy leaves a neighbour's process as little of
 * them (measured by the tenants bench: 7 to 11 threads of the attacker's own process runnable, the
 * victim's calls waiting seconds). So a held call carries the group that starts it.
 *
 * Held calls wait in their tenant's queue, first come first served, calls made by `invoke` first
 * (each one frees a caller). When a thread is freed, the tenant furthest below its share goes
 * next (fewest threads per weight; then least CPU per weight in the last minute, so the tenant
 * that used less goes first: weighted fair queueing on measured CPU, the tie-breaker).
 */

import type { Clock } from '../platform/clock.ts';

/** How long a tenant with no call keeps its share (see above). */
export const LINGER_MS = 250;

/** What becomes of a held call offered a thread: it started, it must wait more, or it ended meanwhile. */
export type Release = 'started' | 'held' | 'gone';

/** Starts a held call offered a thread, in the group that holds it: routes it and asks `admit` whether it may enter (whether it makes a new thread busy depends on where it is routed). */
export type Starter<C> = (call: C, admit: (newThread: boolean) => boolean) => Release;

interface Entry<C> {
  call: C;
  nested: boolean;
  seq: number;
  start: Starter<C>;
}

interface TenantState<C> {
  /** Isolates with at least one of its calls running (not waiting on a host call). */
  threads: number;
  queue: Array<Entry<C>>;
  /** When it last had neither thread nor held call (it lingers LINGER_MS from then); undefined while it has either. */
  idleSince: number | undefined;
}

export class FairShare<C> {
  /** Tenants with threads or held calls, or that had either within LINGER_MS; any other is not in the map. */
  private readonly active = new Map<string, TenantState<C>>();
  private threads = 0;
  private held = 0;
  private seq = 0;

  constructor(
    /** Threads the group may keep busy before tenants are held to their shares: the machine's cores. */
    readonly cores: number,
    private readonly weightOf: (tenant: string) => number,
    /** CPU ms the tenant used in the last minute: who waited least for what it got goes last. */
    private readonly cpuOf: (tenant: string) => number,
    private readonly clock: Clock,
  ) {}

  /** Calls held now (all tenants). */
  get waiting(): number {
    return this.held;
  }

  /** Busy isolates of a tenant now (tests, stats). */
  threadsOf(tenant: string): number {
    return this.active.get(tenant)?.threads ?? 0;
  }

  /**
   * Whether a call may enter its isolate now. `newThread`: the isolate has no call of the tenant
   * running, so entering makes one more thread busy. `fromQueue`: it is a held call being offered
   * a thread; a new call of a tenant with calls held waits behind them (unless made by invoke).
   */
  mayEnter(tenant: string, newThread: boolean, nested: boolean, fromQueue = false): boolean {
    const me = this.active.get(tenant);
    if (!fromQueue && !nested && me?.queue.length) return false;
    let othersWeight = 0;
    let othersHeld = false;
    // A lingering tenant's core is kept for it: not a spare one.
    let taken = this.threads;
    const lingeredFrom = this.clock.now() - LINGER_MS;
    for (const [name, state] of this.active) {
      if (name === tenant) continue;
      if (state.idleSince !== undefined) {
        if (state.idleSince < lingeredFrom) {
          this.active.delete(name);
          continue;
        }
        taken++;
      }
      othersWeight += this.weightOf(name);
      if (state.queue.length) othersHeld = true;
    }
    const mine = me?.threads ?? 0;
    const weight = this.weightOf(tenant);
    const share = (this.cores * weight) / (weight + othersWeight);
    if (newThread) return mine < share || (taken < this.cores && !othersHeld);
    return mine <= Math.max(1, share) || (taken <= this.cores && !othersHeld);
  }

  /** Holds a call until `release` starts it with `start`; one made by invoke goes before its tenant's other calls. */
  hold(tenant: string, call: C, nested: boolean, start: Starter<C>): void {
    const state = this.stateOf(tenant);
    const entry = { call, nested, seq: this.seq++, start };
    if (nested) {
      let at = 0;
      while (at < state.queue.length && state.queue[at]!.nested) at++;
      state.queue.splice(at, 0, entry);
    } else state.queue.push(entry);
    this.held++;
  }

  /** A held call ended before it started (its deadline passed, the pool closed). */
  forget(tenant: string, call: C): void {
    const state = this.active.get(tenant);
    if (!state) return;
    const at = state.queue.findIndex((e) => e.call === call);
    if (at === -1) return;
    state.queue.splice(at, 1);
    this.held--;
    this.settle(state);
  }

  threadStarted(tenant: string): void {
    this.stateOf(tenant).threads++;
    this.threads++;
  }

  threadEnded(tenant: string): void {
    const state = this.active.get(tenant);
    if (!state || state.threads === 0) return;
    state.threads--;
    this.threads--;
    this.settle(state);
  }

  /** Offers threads to held calls, the tenant furthest below its share first, until none can start; each is started by the group that holds it. */
  release(): void {
    while (this.held) {
      let started = false;
      for (const tenant of this.byNeed()) {
        const state = this.active.get(tenant);
        const head = state?.queue[0];
        if (!state || !head) continue;
        const outcome = head.start(head.call, (newThread) => this.mayEnter(tenant, newThread, head.nested, true));
        if (outcome === 'held') continue;
        // start() may have changed the tenant's state (its thread began); the head is still first.
        state.queue.shift();
        this.held--;
        this.settle(state);
        started = true;
        break;
      }
      if (!started) return;
    }
  }

  /** Tenants with held calls, fewest threads per weight first, then least CPU per weight, then longest waiting. */
  private byNeed(): string[] {
    const list: Array<{ tenant: string; threads: number; cpu: number; seq: number }> = [];
    for (const [tenant, state] of this.active) {
      if (!state.queue.length) continue;
      const weight = this.weightOf(tenant);
      list.push({ tenant, threads: state.threads / weight, cpu: this.cpuOf(tenant) / weight, seq: state.queue[0]!.seq });
    }
    list.sort((a, b) => a.threads - b.threads || a.cpu - b.cpu || a.seq - b.seq);
    return list.map((e) => e.tenant);
  }

  private stateOf(tenant: string): TenantState<C> {
    let state = this.active.get(tenant);
    if (!state) this.active.set(tenant, (state = { threads: 0, queue: [], idleSince: undefined }));
    state.idleSince = undefined;
    return state;
  }

  private settle(state: TenantState<C>): void {
    if (state.threads === 0 && state.queue.length === 0) state.idleSince = this.clock.now();
  }
}
