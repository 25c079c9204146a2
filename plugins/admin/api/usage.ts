import type { TenantQuotas } from '../../../sdk/plugin/config.ts';
import type { KernelApi } from '../../../sdk/plugin/index.ts';
import { tenantOf } from '../../../sdk/plugin/tenants.ts';
import type { Principal } from './roles.ts';

/** The outcome of a call refused by its tenant's quota (the sandbox's label of TENANT_QUOTA). */
const THROTTLED = 'tenant_quota';

export interface TenantUsage {
  tenant: string;
  /** Calls of the tenant's services since this node started, whatever their outcome. */
  calls: number;
  /** Calls that did not end with a result: the service's errors, time and memory limits, crashes. */
  errors: number;
  /** Calls refused by the tenant's quotas. */
  throttled: number;
  /** CPU of the tenant's isolates in the last minute (the sandbox's figure) against `cpu_ms_per_minute`; null before its services ran on this node. */
  cpu: { used_ms_last_minute: number | null; quota_ms_per_minute: number | null };
  quotas: TenantQuotas;
  services: Array<{ service: string; calls: number; errors: number; throttled: number }>;
}

/** The per-tenant view of this node's sandbox figures: every declared tenant for the platform, its own for a tenant's administrator. */
export function tenantUsage(kernel: KernelApi, p: Principal): { tenants: TenantUsage[] } {
  const declared = (kernel.config().tenants ?? []).filter((t) => p.tenant === undefined || t.name === p.tenant);
  const byService = new Map<string, { calls: number; errors: number; throttled: number }>();
  for (const { service, outcome, count } of kernel.sandboxStats().calls) {
    const s = byService.get(service) ?? { calls: 0, errors: 0, throttled: 0 };
    s.calls += count;
    if (outcome === THROTTLED) s.throttled += count;
    else if (outcome !== 'ok') s.errors += count;
    byService.set(service, s);
  }
  const stats = kernel.sandboxStats();
  const cpuOf = new Map((stats.tenants ?? []).map((u) => [u.tenant, u.cpuMsLastMinute]));
  const tenants = declared.map((t) => {
    const services = [...byService].filter(([service]) => tenantOf(service) === t.name).map(([service, s]) => ({ service, ...s }));
    const sum = (key: 'calls' | 'errors' | 'throttled') => services.reduce((n, s) => n + s[key], 0);
    return {
      tenant: t.name,
      calls: sum('calls'),
      errors: sum('errors'),
      throttled: sum('throttled'),
      cpu: { used_ms_last_minute: cpuOf.has(t.name) ? Math.round(cpuOf.get(t.name)!) : null, quota_ms_per_minute: t.quotas.cpu_ms_per_minute ?? null },
      quotas: t.quotas,
      services: services.sort((a, b) => a.service.localeCompare(b.service)),
    };
  });
  return { tenants };
}
