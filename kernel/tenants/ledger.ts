import type { TenantConfig } from '../../sdk/plugin/config.ts';
import type { MeteredQuota, TenantQuotaApi, TenantQuotaName } from '../../sdk/plugin/contract.ts';
import type { SandboxStats } from '../../sdk/plugin/protocol.ts';
import type { Clock } from '../platform/clock.ts';
import { SvcError } from '../errors.ts';

/**
 * What each tenant uses, and its quotas (docs/tenants.md, "Quotas"): the CPU its isolates used
 * in a sliding minute (`cpu_ms_per_minute`), its calls in flight (`concurrent_calls`), its
 * outgoing calls in a sliding minute and its publishes in a sliding second (metered quotas, taken
 * by the plugins that make them), and the calls refused by each quota, whoever measured it.
 *
 * In a cluster, what the other nodes used in their windows arrives through `remote` (sent by
 * kernel/tenants/cluster.ts every 100 ms while it changes): the windowed quotas hold for the
 * cluster's sum. What a node used since it last reported is unknown to the others, so each node
 * may use, until its next report, only its share of what was left at the last exchange: the
 * room under the limit divided by the nodes sending. The nodes together then never pass the
 * limit by more than the calls already running; the room shrinks by a share per exchange, so a
 * tenant busy on one node only reaches its limit within about a second of exchanges.
 * `concurrent_calls` and `memory_mb` stay per node: they protect a node's capacity.
 */

/** Counts in buckets of `bucketMs`: the sum over the last `buckets` of them, the current one included. */
export class SlidingWindow {
  private readonly counts: Float64Array;
  /** The bucket number each slot holds (time / bucketMs, floored); a slot of an older bucket is stale. */
  private readonly slot: Float64Array;

  constructor(
    private readonly buckets: number,
    private readonly bucketMs: number,
  ) {
    this.counts = new Float64Array(buckets);
    this.slot = new Float64Array(buckets).fill(-Infinity);
  }

  add(now: number, amount: number): void {
    const b = Math.floor(now / this.bucketMs);
    const i = ((b % this.buckets) + this.buckets) % this.buckets;
    if (this.slot[i] !== b) {
      this.slot[i] = b;
      this.counts[i] = 0;
    }
    this.counts[i]! += amount;
  }

  sum(now: number): number {
    const oldest = Math.floor(now / this.bucketMs) - this.buckets + 1;
    let total = 0;
    for (let i = 0; i < this.buckets; i++) if (this.slot[i]! >= oldest) total += this.counts[i]!;
    return total;
  }

  /** Whole seconds (at least 1) until the window's sum falls under `limit`, if nothing more is added. */
  secondsUntilUnder(now: number, limit: number): number {
    const oldest = Math.floor(now / this.bucketMs) - this.buckets + 1;
    const live: Array<[number, number]> = [];
    for (let i = 0; i < this.buckets; i++) if (this.slot[i]! >= oldest && this.counts[i]! > 0) live.push([this.slot[i]!, this.counts[i]!]);
    live.sort((a, b) => a[0] - b[0]);
    let total = live.reduce((sum, [, n]) => sum + n, 0);
    if (total < limit) return 1;
    for (const [bucket, n] of live) {
      total -= n;
      // That bucket leaves the window when the window after it begins.
      if (total < limit) return Math.max(1, Math.ceil(((bucket + this.buckets) * this.bucketMs - now) / 1000));
    }
    return Math.max(1, Math.ceil((this.buckets * this.bucketMs) / 1000));
  }
}

/** CPU ms in one-second buckets over a minute. */
export class CpuWindow extends SlidingWindow {
  constructor() {
    super(60, 1000);
  }
}

/** The windowed quotas: what each counts over, and in what unit its message speaks. */
const WINDOWED = {
  cpu_ms_per_minute: { buckets: 60, bucketMs: 1000, what: (used: number, limit: number) => `the tenant's services used ${Math.round(used)} ms of CPU in the last minute, of ${limit}` },
  outgoing_calls_per_minute: { buckets: 60, bucketMs: 1000, what: (used: number, limit: number) => `the tenant's services made ${used} outgoing calls in the last minute, of ${limit}` },
  // Ten buckets of 100 ms: a second that slides, so a burst at a second's edge does not pass twice.
  publishes_per_second: { buckets: 10, bucketMs: 100, what: (used: number, limit: number) => `the tenant published ${used} messages in the last second, of ${limit}` },
} as const;
type WindowedQuota = keyof typeof WINDOWED;
const WINDOWED_QUOTAS = Object.keys(WINDOWED) as WindowedQuota[];

/** Every quota a refusal can name, in the order figures list them. */
export const THROTTLING_QUOTAS = ['cpu_ms_per_minute', 'concurrent_calls', 'outgoing_calls_per_minute', 'publishes_per_second', 'queued_events', 'pubsub_bytes'] as const;
type ThrottlingQuota = (typeof THROTTLING_QUOTAS)[number];

interface Usage {
  /** CPU ms since the node started (the counter). */
  cpuMs: number;
  windows: Record<WindowedQuota, SlidingWindow>;
  /** Calls from outside (channels, queues, schedules) in flight: what `concurrent_calls` counts. */
  inFlight: number;
  throttled: Record<ThrottlingQuota, number>;
}

/** One node's windowed sums per tenant, as it last sent them. */
export type NodeUsage = Record<string, Partial<Record<WindowedQuota, number>>>;

/** Another node's figures count for this long after they arrived: a node that stopped sending stops counting. */
export const REMOTE_TTL_MS = 3_000;

export class TenantLedger implements TenantQuotaApi {
  private readonly usage = new Map<string, Usage>();
  private configs = new Map<string, TenantConfig>();
  private readonly remote = new Map<string, { at: number; usage: NodeUsage }>();
  /** This node's sums as it last reported them to the others (`report`). */
  private reported: NodeUsage = {};

  constructor(private readonly clock: Clock) {}

  configure(tenants: readonly TenantConfig[]): void {
    this.configs = new Map(tenants.map((t) => [t.name, t]));
    // A removed tenant's figures go once nothing of it is running (its series leave /metrics).
    for (const [name, u] of this.usage) if (!this.configs.has(name) && u.inFlight === 0) this.usage.delete(name);
  }

  configOf(tenant: string): TenantConfig | undefined {
    return this.configs.get(tenant);
  }

  weightOf(tenant: string): number {
    return this.configs.get(tenant)?.weight ?? 1;
  }

  memoryCapOf(tenant: string): number | undefined {
    return this.configs.get(tenant)?.quotas.memory_mb;
  }

  limit(tenant: string | undefined, quota: TenantQuotaName): number | undefined {
    return tenant === undefined ? undefined : this.configs.get(tenant)?.quotas[quota];
  }

  addCpu(tenant: string, ms: number): void {
    const u = this.of(tenant);
    u.cpuMs += ms;
    u.windows.cpu_ms_per_minute.add(this.clock.now(), ms);
  }

  /** CPU ms the tenant used in the last minute on this node. */
  cpuLastMinute(tenant: string): number {
    return this.usage.get(tenant)?.windows.cpu_ms_per_minute.sum(this.clock.now()) ?? 0;
  }

  /**
   * Why a new call of the tenant is refused now (TENANT_QUOTA), or undefined; a refusal is
   * counted. A call made by invoke (`nested`) is part of its caller's call: the concurrency quota
   * does not count it (refusing it would fail a call already admitted, halfway), the CPU quota does.
   */
  refusal(tenant: string, nested: boolean): SvcError | undefined {
    const quotas = this.configs.get(tenant)?.quotas;
    if (!quotas) return undefined;
    const cpuLimit = quotas.cpu_ms_per_minute;
    if (cpuLimit !== undefined) {
      const over = this.overWindow(tenant, 'cpu_ms_per_minute', cpuLimit, 0);
      if (over) return over;
    }
    const callLimit = quotas.concurrent_calls;
    if (callLimit !== undefined && !nested) {
      const u = this.of(tenant);
      // When one ends is not known; a second is the shortest wait worth a client's retry.
      if (u.inFlight >= callLimit) return this.refuse(tenant, 'concurrent_calls', `the tenant has ${callLimit} calls running`, 1);
    }
    return undefined;
  }

  take(tenant: string | undefined, quota: MeteredQuota, amount = 1): SvcError | undefined {
    if (tenant === undefined) return undefined;
    const limit = this.configs.get(tenant)?.quotas[quota];
    if (limit === undefined) return undefined;
    const over = this.overWindow(tenant, quota, limit, amount);
    if (over) return over;
    this.of(tenant).windows[quota].add(this.clock.now(), amount);
    return undefined;
  }

  refuse(tenant: string, quota: TenantQuotaName, reason: string, retryAfterS = 1): SvcError {
    if (quota !== 'memory_mb') this.of(tenant).throttled[quota]++;
    return new SvcError('TENANT_QUOTA', `Quota ${quota} reached: ${reason}`, { headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterS))) } });
  }

  started(tenant: string, nested: boolean): void {
    if (!nested) this.of(tenant).inFlight++;
  }

  ended(tenant: string, nested: boolean): void {
    if (nested) return;
    const u = this.usage.get(tenant);
    if (u && u.inFlight > 0) u.inFlight--;
  }

  /** This node's windowed sums as sent to the other nodes now: its share is counted from them on. */
  markReported(usage: NodeUsage): void {
    this.reported = usage;
  }

  /** This node's windowed sums: only tenants with something in a window. */
  localUsage(): NodeUsage {
    const now = this.clock.now();
    const out: NodeUsage = {};
    for (const [tenant, u] of this.usage) {
      const sums: Partial<Record<WindowedQuota, number>> = {};
      let any = false;
      for (const q of WINDOWED_QUOTAS) {
        const s = u.windows[q].sum(now);
        if (s > 0) {
          sums[q] = Math.round(s * 10) / 10;
          any = true;
        }
      }
      if (any) out[tenant] = sums;
    }
    return out;
  }

  /** Another node's latest sums (kernel/tenants/cluster.ts); `more` adds tenants to the figures its last message began. */
  setRemote(node: string, usage: NodeUsage, more = false): void {
    const before = this.remote.get(node);
    this.remote.set(node, { at: this.clock.now(), usage: more && before ? { ...before.usage, ...usage } : usage });
  }

  /** Whether some tenant has a quota counted in a window (the only ones nodes share). */
  hasWindowedQuotas(): boolean {
    for (const t of this.configs.values()) for (const q of WINDOWED_QUOTAS) if (t.quotas[q] !== undefined) return true;
    return false;
  }

  forgetRemote(node: string): void {
    this.remote.delete(node);
  }

  /** What the other nodes used of a windowed quota, from figures fresh enough to count. */
  remoteSum(tenant: string, quota: WindowedQuota): number {
    return this.others(tenant, quota).sum;
  }

  /** The other nodes sending figures, and their sum for a windowed quota. */
  private others(tenant: string, quota: WindowedQuota): { sum: number; nodes: number } {
    if (this.remote.size === 0) return { sum: 0, nodes: 0 };
    const now = this.clock.now();
    let sum = 0;
    for (const [node, r] of this.remote) {
      if (now - r.at > REMOTE_TTL_MS) {
        this.remote.delete(node);
        continue;
      }
      sum += r.usage[tenant]?.[quota] ?? 0;
    }
    return { sum, nodes: this.remote.size };
  }

  /** SandboxStats.tenants: every declared tenant, and any other that used something. */
  figures(): SandboxStats['tenants'] {
    const names = new Set([...this.configs.keys(), ...this.usage.keys()]);
    const now = this.clock.now();
    return [...names].sort().map((tenant) => {
      const u = this.usage.get(tenant);
      return {
        tenant,
        cpuMs: u?.cpuMs ?? 0,
        cpuMsLastMinute: u?.windows.cpu_ms_per_minute.sum(now) ?? 0,
        cpuMsLastMinuteCluster: (u?.windows.cpu_ms_per_minute.sum(now) ?? 0) + this.remoteSum(tenant, 'cpu_ms_per_minute'),
        outgoingCallsLastMinute: u?.windows.outgoing_calls_per_minute.sum(now) ?? 0,
        inFlight: u?.inFlight ?? 0,
        throttled: u ? { ...u.throttled } : zeroThrottled(),
      };
    });
  }

  /** The refusal when the window's use (this node's and the others') plus `amount` passes `limit`. */
  private overWindow(tenant: string, quota: WindowedQuota, limit: number, amount: number): SvcError | undefined {
    const now = this.clock.now();
    const window = this.usage.get(tenant)?.windows[quota];
    const { sum: remote, nodes } = this.others(tenant, quota);
    const local = window?.sum(now) ?? 0;
    const used = local + remote;
    // Alone, the limit itself; with other nodes, this node's share of the room left at the last exchange.
    const reported = nodes === 0 ? 0 : (this.reported[tenant]?.[quota] ?? 0);
    const room = nodes === 0 ? limit - used : (limit - reported - remote) / (nodes + 1) - (local - reported);
    // A call is admitted while the CPU is under its room (amount 0); a count, while it fits.
    if (amount === 0 ? room > 0 : amount <= room) return undefined;
    const spec = WINDOWED[quota];
    const retry = window ? window.secondsUntilUnder(now, Math.max(1, limit - remote)) : (spec.buckets * spec.bucketMs) / 1000;
    return this.refuse(tenant, quota, spec.what(Math.round(used), limit), retry);
  }

  private of(tenant: string): Usage {
    let u = this.usage.get(tenant);
    if (!u) {
      const windows = Object.fromEntries(WINDOWED_QUOTAS.map((q) => [q, new SlidingWindow(WINDOWED[q].buckets, WINDOWED[q].bucketMs)])) as Record<WindowedQuota, SlidingWindow>;
      this.usage.set(tenant, (u = { cpuMs: 0, windows, inFlight: 0, throttled: zeroThrottled() }));
    }
    return u;
  }
}

function zeroThrottled(): Record<ThrottlingQuota, number> {
  return Object.fromEntries(THROTTLING_QUOTAS.map((q) => [q, 0])) as Record<ThrottlingQuota, number>;
}
