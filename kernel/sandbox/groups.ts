import { availableParallelism } from 'node:os';
import type { TenantConfig } from '../../sdk/plugin/config.ts';
import { tenantOf } from '../../sdk/plugin/tenants.ts';
import { monotonicClock, monotonicNow } from '../platform/clock.ts';
import { SvcError } from '../errors.ts';
import { FairShare } from './fair.ts';
import { CALL_MARGIN_MS, outcomeOf, SandboxPool, type CallInFlight, type DeployOutcome, type NestedCall } from './pool.ts';
import type { PendingCall } from './process.ts';
import type { InvokeRequest, InvokeResult, SandboxStats } from './protocol.ts';
import type { RunnerOptions, ServiceRunner } from './runner.ts';
import { TenantLedger } from '../tenants/ledger.ts';

/**
 * The sandbox runner as groups of processes by trust level (README.md, "Tenants"): the
 * platform's own services in the platform processes (`server.sandbox.workers`), tenants' services
 * in the processes tenants share (`server.sandbox.tenant_workers`, started with the first tenant
 * that runs there), and a tenant with `processes: N` in N processes of its own. Tenant code never
 * runs in a process with the platform's. Each group is a SandboxPool with its own supervision
 * (crash attribution, probation, quarantine, recycling); this class routes by a service's tenant,
 * keeps each tenant's quotas, and sums the groups' figures.
 */
export class GroupedRunner implements ServiceRunner {
  private readonly ledger: TenantLedger;
  private readonly fair: FairShare<PendingCall>;
  private shared: SandboxPool | undefined;
  private readonly own = new Map<string, { pool: SandboxPool; processes: number }>();
  /** Groups no longer in use: they finish the calls they run, then stop. */
  private readonly leaving = new Set<SandboxPool>();
  /** The group running each tenant service. */
  private readonly placed = new Map<string, SandboxPool>();
  /** Counters of groups that stopped, and of calls refused before any group saw them, so stats never go back. */
  private readonly carried = { calls: new Map<string, number>(), rebuilds: new Map<string, number>(), rebuildWaits: new Map<string, number>(), restarts: 0 };
  private tenants = new Map<string, TenantConfig>();
  /** Groups being started, by key: two deploys that need the same new group start it once. */
  private readonly starting = new Map<string, Promise<SandboxPool>>();
  /**
   * A tenant change under way (setTenants): tenant deploys wait for it, and it waits for the
   * deploys under way, so a deploy never lands in a group a change is moving its tenant from.
   */
  private changing: Promise<void> | undefined;
  private readonly deploying = new Set<Promise<unknown>>();
  private closing = false;

  constructor(
    private readonly platform: SandboxPool,
    private readonly options: RunnerOptions,
    private readonly sdkCode: string,
    /** Call ids shared by every group: a nested call names its caller by id, whichever group runs it. */
    private readonly ids: { next: number },
  ) {
    const clock = options.clock ?? monotonicClock;
    this.ledger = options.ledger ?? new TenantLedger(clock);
    this.fair = new FairShare<PendingCall>(
      options.fairCores ?? availableParallelism(),
      (t) => this.ledger.weightOf(t),
      (t) => this.ledger.cpuLastMinute(t),
      clock,
    );
  }

  /** The platform group, for a runner with no tenants at all (no extra process starts). */
  static platformGroup(options: RunnerOptions, ids: { next: number }): SandboxPool {
    return new SandboxPool({ processes: options.processes, caps: options.caps, log: options.log, hostCall: options.hostCall, hostCallsDone: options.hostCallsDone, clock: options.clock, ids });
  }

  async setTenants(tenants: readonly TenantConfig[]): Promise<void> {
    while (this.changing) await this.changing;
    const change = (async () => {
      await Promise.allSettled([...this.deploying]);
      await this.applyTenants(tenants);
    })();
    this.changing = change.finally(() => (this.changing = undefined)).catch(() => undefined);
    await change;
  }

  async deploy(name: string, file: string, code: string, sourceMap?: string): Promise<DeployOutcome> {
    const tenant = tenantOf(name);
    if (tenant === undefined) return this.platform.deploy(name, file, code, sourceMap);
    while (this.changing) await this.changing;
    const deploying = (async () => {
      const pool = await this.groupFor(tenant);
      const outcome = await pool.deploy(name, file, code, sourceMap);
      const before = this.placed.get(name);
      if (outcome.ok && before !== pool) {
        before?.undeploy(name);
        this.placed.set(name, pool);
      }
      return outcome;
    })();
    this.deploying.add(deploying);
    try {
      return await deploying;
    } finally {
      this.deploying.delete(deploying);
    }
  }

  undeploy(name: string): void {
    if (tenantOf(name) === undefined) return this.platform.undeploy(name);
    const pool = this.placed.get(name);
    this.placed.delete(name);
    pool?.undeploy(name);
    if (pool && pool === this.shared && !this.changing) this.stopSharedIfUnused();
  }

  invoke(request: InvokeRequest, nested?: NestedCall): Promise<InvokeResult> {
    const tenant = tenantOf(request.service);
    if (tenant === undefined) return this.platform.invoke(request, nested);
    const pool = this.placed.get(request.service);
    if (!pool) return this.refuse(request.service, new SvcError('SERVICE_NOT_DEPLOYED'));
    const isNested = nested !== undefined;
    const refusal = this.ledger.refusal(tenant, isNested);
    if (refusal) return this.refuse(request.service, refusal);
    this.ledger.started(tenant, isNested);
    const answer = pool.invoke(request, nested);
    const ended = () => this.ledger.ended(tenant, isNested);
    answer.then(ended, ended);
    return answer;
  }

  quarantineOf(service: string): string | undefined {
    return this.groupOf(service)?.quarantineOf(service);
  }

  inFlight(): CallInFlight[] {
    return this.groups().flatMap((g) => g.inFlight());
  }

  pids(): number[] {
    return this.groups().flatMap((g) => g.pids());
  }

  stats(): SandboxStats {
    const groups = this.groups();
    if (groups.length === 1 && !this.carried.calls.size && !this.carried.restarts && !this.tenants.size) return { ...this.platform.stats(), tenants: [] };
    const totals = { calls: new Map(this.carried.calls), rebuilds: new Map(this.carried.rebuilds), rebuildWaits: new Map(this.carried.rebuildWaits) };
    let restarts = this.carried.restarts;
    let processes = 0;
    const quarantined: string[] = [];
    for (const g of groups) {
      const s = g.stats();
      addCounters(totals, s);
      restarts += s.processRestarts;
      processes += s.processes;
      quarantined.push(...s.quarantined);
    }
    return {
      calls: [...totals.calls].map(([key, count]) => {
        const space = key.indexOf(' ');
        return { service: key.slice(space + 1), outcome: key.slice(0, space), count };
      }),
      isolateRebuilds: [...totals.rebuilds].map(([service, count]) => ({ service, count, waitedMs: totals.rebuildWaits.get(service) ?? 0 })),
      processRestarts: restarts,
      processes,
      quarantined,
      tenants: this.ledger.figures(),
    };
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.groups().map((g) => g.close()));
  }

  private groups(): SandboxPool[] {
    const out = [this.platform];
    if (this.shared) out.push(this.shared);
    for (const o of this.own.values()) out.push(o.pool);
    out.push(...this.leaving);
    return out;
  }

  private groupOf(service: string): SandboxPool | undefined {
    return tenantOf(service) === undefined ? this.platform : this.placed.get(service);
  }

  private refuse(service: string, error: SvcError): Promise<never> {
    add(this.carried.calls, `${outcomeOf(error.code)} ${service}`, 1);
    return Promise.reject(error);
  }

  /** The group a tenant's services run in now, started if it is not running yet. A tenant not declared (yet) shares. */
  private async groupFor(tenant: string): Promise<SandboxPool> {
    const processes = this.tenants.get(tenant)?.processes ?? 0;
    if (processes === 0) {
      if (this.shared) return this.shared;
      return this.once('tenants', async () => (this.shared = await this.startGroup(this.options.tenantProcesses ?? 2, 'tenants', true)));
    }
    const mine = this.own.get(tenant);
    if (mine?.processes === processes) return mine.pool;
    return this.once(`${tenant} ${processes}`, async () => {
      const pool = await this.startGroup(processes, tenant, false);
      this.own.set(tenant, { pool, processes });
      return pool;
    });
  }

  private once(key: string, start: () => Promise<SandboxPool>): Promise<SandboxPool> {
    let starting = this.starting.get(key);
    if (!starting) {
      starting = start().finally(() => this.starting.delete(key));
      this.starting.set(key, starting);
    }
    return starting;
  }

  private async startGroup(processes: number, group: string, shared: boolean): Promise<SandboxPool> {
    const o = this.options;
    const pool = new SandboxPool({
      processes,
      // The shared processes always run low (demotion.ts says why); a tenant's own start normal until busy.
      caps: { ...o.caps, reportCpu: true, belowNormalPriority: true, demoteAboveCores: shared ? undefined : o.caps.demoteAboveCores, singleTenant: !shared },
      log: o.log.child({ sandboxGroup: group }),
      hostCall: o.hostCall,
      hostCallsDone: o.hostCallsDone,
      clock: o.clock,
      ids: this.ids,
      onCpu: (service, ms) => {
        const tenant = tenantOf(service);
        if (tenant !== undefined) this.ledger.addCpu(tenant, ms);
      },
      memoryCapOf: (service) => {
        const tenant = tenantOf(service);
        return tenant === undefined ? undefined : this.ledger.memoryCapOf(tenant);
      },
      // Every tenants' group, shared or a tenant's own: the cores are shared by all of them (fair.ts).
      fair: this.fair,
    });
    if (this.closing) throw new SvcError('SERVICE_UNAVAILABLE');
    try {
      await pool.start(this.sdkCode);
    } catch (err) {
      await pool.close();
      throw err;
    }
    if (this.closing) {
      await pool.close();
      throw new SvcError('SERVICE_UNAVAILABLE');
    }
    o.log.info({ sandboxGroup: group, processes }, shared ? "the tenants' shared sandbox processes started" : "a tenant's own sandbox processes started");
    return pool;
  }

  private async applyTenants(list: readonly TenantConfig[]): Promise<void> {
    const before = this.tenants;
    this.tenants = new Map(list.map((t) => [t.name, t]));
    this.ledger.configure(list);
    // Own processes that no longer fit their tenant (removed, or another `processes`) are left
    // behind: the tenant's services move first, and the calls running there finish there.
    const left = new Map(this.own);
    for (const [tenant, mine] of left) if (this.tenants.get(tenant)?.processes !== mine.processes) this.own.delete(tenant);
    // The groups start side by side (each waits about 0.2 s for its processes); then services move one by one.
    await Promise.all([...this.tenants.keys()].map((tenant) => this.groupFor(tenant)));
    for (const [tenant, config] of this.tenants) {
      const target = await this.groupFor(tenant);
      const moved = await this.moveTenant(tenant, target);
      // A new memory ceiling applies to isolates built from now: built again where they stay.
      const previous = before.get(tenant);
      if (previous && previous.quotas.memory_mb !== config.quotas.memory_mb) await this.redeployTenant(tenant, moved);
    }
    for (const [tenant, mine] of left) {
      if (this.own.get(tenant) === mine) continue;
      // A removed tenant's services go with its processes (the kernel undeploys them apart).
      for (const [name, pool] of this.placed) if (pool === mine.pool) this.placed.delete(name);
      this.retire(mine.pool);
    }
    this.stopSharedIfUnused();
  }

  /** Deploys a tenant's services where they run now, from wherever they ran; returns those it moved. */
  private async moveTenant(tenant: string, target: SandboxPool): Promise<Set<string>> {
    const moved = new Set<string>();
    for (const [name, pool] of [...this.placed]) {
      if (pool === target || tenantOf(name) !== tenant) continue;
      const source = pool.sources().get(name);
      if (!source) continue;
      const outcome = await target.deploy(name, source.file, source.code, source.sourceMap);
      if (!outcome.ok) {
        this.options.log.error({ service: name, error: outcome.error }, "a tenant's service did not deploy in the sandbox processes its tenant moved to; it stays where it ran");
        continue;
      }
      this.placed.set(name, target);
      pool.undeploy(name);
      moved.add(name);
    }
    return moved;
  }

  private async redeployTenant(tenant: string, skip: Set<string>): Promise<void> {
    for (const [name, pool] of this.placed) {
      if (tenantOf(name) !== tenant || skip.has(name)) continue;
      const source = pool.sources().get(name);
      if (source) await pool.deploy(name, source.file, source.code, source.sourceMap);
    }
  }

  /** The shared processes are needed while a tenant runs there or a service of an undeclared tenant is placed there. */
  private sharedNeeded(): boolean {
    for (const t of this.tenants.values()) if (t.processes === 0) return true;
    for (const pool of this.placed.values()) if (pool === this.shared) return true;
    return false;
  }

  private stopSharedIfUnused(): void {
    if (!this.shared || this.sharedNeeded()) return;
    this.retire(this.shared);
    this.shared = undefined;
  }

  /** A group no longer used stops once its calls are answered (at most the longest limit plus the margin). */
  private retire(pool: SandboxPool): void {
    this.leaving.add(pool);
    const until = monotonicNow() + this.options.caps.maxTimeoutMs + CALL_MARGIN_MS;
    const stop = async () => {
      while (pool.inFlight().length && monotonicNow() < until && !this.closing) await new Promise((r) => setTimeout(r, 50));
      const s = pool.stats();
      await pool.close();
      this.leaving.delete(pool);
      addCounters(this.carried, s);
      this.carried.restarts += s.processRestarts;
    };
    void stop();
  }
}

function add(map: Map<string, number>, key: string, n: number): void {
  map.set(key, (map.get(key) ?? 0) + n);
}

/** Adds a group's counters to totals: calls by `<outcome> <service>`, isolate rebuilds and their waits by service. */
function addCounters(totals: { calls: Map<string, number>; rebuilds: Map<string, number>; rebuildWaits: Map<string, number> }, s: Omit<SandboxStats, 'tenants'>): void {
  for (const c of s.calls) add(totals.calls, `${c.outcome} ${c.service}`, c.count);
  for (const r of s.isolateRebuilds) {
    add(totals.rebuilds, r.service, r.count);
    add(totals.rebuildWaits, r.service, r.waitedMs);
  }
}

/** Starts the platform's sandbox processes with the services' SDK compiled in; tenants' start with setTenants. */
export async function startServiceRunner(options: RunnerOptions, sdkCode: string): Promise<ServiceRunner> {
  const ids = { next: 1 };
  const platform = GroupedRunner.platformGroup(options, ids);
  await platform.start(sdkCode);
  return new GroupedRunner(platform, options, sdkCode, ids);
}
