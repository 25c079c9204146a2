import type { TenantConfig } from '../../sdk/plugin/config.ts';
import type { SandboxStats } from './protocol.ts';
import type { Clock } from '../platform/clock.ts';
import { SvcError } from '../errors.ts';

/**
 * What each tenant uses of the sandbox on this node, and its quotas there (README.md, "Tenants"):
 * the CPU its isolates used, summed in a sliding one-minute window (`cpu_ms_per_minute`), the calls
 * it has in flight (`concurrent_calls`), and the calls refused by each quota.
 */

/** The quotas the sandbox runner enforces; `memory_mb` is a ceiling, never a refusal. */
export type ThrottlingQuota = 'cpu_ms_per_minute' | 'concurrent_calls';

const WINDOW_S = 60;

/** CPU ms in one-second buckets: the last minute's sum, and when it falls under a limit. */
export class CpuWindow {
  private readonly ms = new Float64Array(WINDOW_S);
  /** The second each bucket holds (ms / 1000, floored); a bucket of an older second is stale. */
  private readonly second = new Float64Array(WINDOW_S).fill(-Infinity);

  add(now: number, ms: number): void {
    const sec = Math.floor(now / 1000);
    const i = ((sec % WINDOW_S) + WINDOW_S) % WINDOW_S;
    if (this.second[i] !== sec) {
      this.second[i] = sec;
      this.ms[i] = 0;
    }
    this.ms[i]! += ms;
  }

  /** CPU ms used in the last minute (its current second included). */
  sum(now: number): number {
    const oldest = Math.floor(now / 1000) - WINDOW_S + 1;
    let total = 0;
    for (let i = 0; i < WINDOW_S; i++) if (this.second[i]! >= oldest) total += this.ms[i]!;
    return total;
  }

  /** Whole seconds (at least 1) until the minute's use falls under `limit`, if nothing more is used. */
  secondsUntilUnder(now: number, limit: number): number {
    const oldest = Math.floor(now / 1000) - WINDOW_S + 1;
    const live: Array<[number, number]> = [];
    for (let i = 0; i < WINDOW_S; i++) if (this.second[i]! >= oldest && this.ms[i]! > 0) live.push([this.second[i]!, this.ms[i]!]);
    live.sort((a, b) => a[0] - b[0]);
    let total = live.reduce((sum, [, ms]) => sum + ms, 0);
    for (const [sec, ms] of live) {
      if (total < limit) break;
      total -= ms;
      // That second's bucket leaves the window when the minute after it begins.
      if (total < limit) return Math.max(1, Math.ceil(((sec + WINDOW_S) * 1000 - now) / 1000));
    }
    return 1;
  }
}

interface Usage {
  /** CPU ms since the node started (the counter). */
  cpuMs: number;
  window: CpuWindow;
  /** Calls from outside (channels, queues, schedules) in flight: what `concurrent_calls` counts. */
  inFlight: number;
  throttled: Record<ThrottlingQuota, number>;
}

export class TenantLedger {
  private readonly usage = new Map<string, Usage>();
  private configs = new Map<string, TenantConfig>();

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

  addCpu(tenant: string, ms: number): void {
    const u = this.of(tenant);
    u.cpuMs += ms;
    u.window.add(this.clock.now(), ms);
  }

  cpuLastMinute(tenant: string): number {
    return this.usage.get(tenant)?.window.sum(this.clock.now()) ?? 0;
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
      const u = this.usage.get(tenant);
      const now = this.clock.now();
      const used = u?.window.sum(now) ?? 0;
      if (used >= cpuLimit) {
        u!.throttled.cpu_ms_per_minute++;
        const retry = u!.window.secondsUntilUnder(now, cpuLimit);
        return new SvcError('TENANT_QUOTA', `Quota cpu_ms_per_minute reached: the tenant's services used ${Math.round(used)} ms of CPU in the last minute, of ${cpuLimit}`, {
          headers: { 'Retry-After': String(retry) },
        });
      }
    }
    const callLimit = quotas.concurrent_calls;
    if (callLimit !== undefined && !nested) {
      const u = this.of(tenant);
      if (u.inFlight >= callLimit) {
        u.throttled.concurrent_calls++;
        // When one ends is not known; a second is the shortest wait worth a client's retry.
        return new SvcError('TENANT_QUOTA', `Quota concurrent_calls reached: the tenant has ${callLimit} calls running`, { headers: { 'Retry-After': '1' } });
      }
    }
    return undefined;
  }

  started(tenant: string, nested: boolean): void {
    if (!nested) this.of(tenant).inFlight++;
  }

  ended(tenant: string, nested: boolean): void {
    if (nested) return;
    const u = this.usage.get(tenant);
    if (u && u.inFlight > 0) u.inFlight--;
  }

  /** SandboxStats.tenants: every declared tenant, and any other that used the sandbox. */
  figures(): SandboxStats['tenants'] {
    const names = new Set([...this.configs.keys(), ...this.usage.keys()]);
    const now = this.clock.now();
    return [...names].sort().map((tenant) => {
      const u = this.usage.get(tenant);
      return {
        tenant,
        cpuMs: u?.cpuMs ?? 0,
        cpuMsLastMinute: u?.window.sum(now) ?? 0,
        inFlight: u?.inFlight ?? 0,
        throttled: { cpu_ms_per_minute: u?.throttled.cpu_ms_per_minute ?? 0, concurrent_calls: u?.throttled.concurrent_calls ?? 0 },
      };
    });
  }

  private of(tenant: string): Usage {
    let u = this.usage.get(tenant);
    if (!u) this.usage.set(tenant, (u = { cpuMs: 0, window: new CpuWindow(), inFlight: 0, throttled: { cpu_ms_per_minute: 0, concurrent_calls: 0 } }));
    return u;
  }
}
