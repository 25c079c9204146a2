import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SvcError } from '../../../../kernel/errors.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { ECHO, request, tenant, WORK } from '../../../kernel/sandbox/tenant-runner.ts';
import { parseExposition, sampleValue, startObserved, type ObservedKernel, type Sample } from '../support.ts';

/**
 * Per-tenant series: the sandbox runner's figures for each tenant (CPU, calls in flight, calls
 * refused by quota), and the tenant label on the per-service series (empty for the platform).
 * The tenants are given to the kernel's runner directly, as the kernel gives them on a config
 * apply, and their services deployed there.
 */

let k: ObservedKernel;
beforeAll(async () => {
  k = await startObserved({
    config: 'channel_rest:\n  - { name: ok, url_path: /ok, service: ok, security: none }\n',
    services: { 'ok.ts': ECHO },
  });
  const pool = k.kernel.pool;
  await pool.setTenants([tenant('acme', { quotas: { concurrent_calls: 1 } }), tenant('quiet')]);
  for (const [name, code] of [['acme/work', WORK], ['acme/echo', ECHO]]) {
    const outcome = await pool.deploy(name!, `${name!.replace('/', '-')}.js`, code!);
    if (!outcome.ok) throw new Error(outcome.error);
  }
}, 60_000);
afterAll(() => k?.close());

async function scrape(): Promise<Sample[]> {
  const res = await fetch(`${k.admin}/metrics`);
  expect(res.status).toBe(200);
  return parseExposition(await res.text());
}

describe('tenant series', () => {
  it("export each tenant's CPU, calls in flight and refusals by quota, and the tenant of each service's calls", async () => {
    const pool = k.kernel.pool;
    const running = pool.invoke(request('acme/work', { n: 5_000_000 }));
    const refused = await pool.invoke(request('acme/echo')).catch((e: unknown) => e as SvcError);
    expect((refused as SvcError).code).toBe('TENANT_QUOTA');
    await running;
    expect((await fetch(`${k.url}/ok`)).status).toBe(200);
    // The process reports its CPU within 100 ms of the work.
    const cpuMs = await waitFor('acme’s CPU to be reported', () => pool.stats().tenants.find((t) => t.tenant === 'acme')!.cpuMs);

    const samples = await scrape();
    expect(sampleValue(samples, 'svc_tenant_cpu_seconds_total', { tenant: 'acme' })).toBeGreaterThanOrEqual(cpuMs / 1000);
    expect(sampleValue(samples, 'svc_tenant_cpu_seconds_total', { tenant: 'quiet' })).toBe(0);
    expect(samples.some((s) => s.name === 'svc_tenant_cpu_seconds_total' && s.labels.tenant === 'quiet')).toBe(true);
    expect(sampleValue(samples, 'svc_tenant_calls_in_flight', { tenant: 'acme' })).toBe(0);
    expect(sampleValue(samples, 'svc_tenant_throttled_total', { tenant: 'acme', quota: 'concurrent_calls' })).toBe(1);
    expect(sampleValue(samples, 'svc_tenant_throttled_total', { tenant: 'acme', quota: 'cpu_ms_per_minute' })).toBe(0);
    expect(sampleValue(samples, 'svc_sandbox_calls_total', { service: 'acme/work', tenant: 'acme', outcome: 'ok' })).toBe(1);
    expect(sampleValue(samples, 'svc_sandbox_calls_total', { service: 'acme/echo', tenant: 'acme', outcome: 'tenant_quota' })).toBe(1);
    expect(sampleValue(samples, 'svc_sandbox_calls_total', { service: 'ok', tenant: '', outcome: 'ok' })).toBe(1);
    // The platform's processes and the tenants' shared one.
    expect(sampleValue(samples, 'svc_sandbox_processes')).toBe(k.kernel.pool.pids().length);
  });

  it("metrics.show gives a tenant's administrators their tenant's series only, HELP and TYPE above them; the platform everything", async () => {
    const show = k.kernel.api.controlOps().find((o) => o.op === 'metrics.show')!;
    expect(show).toMatchObject({ readOnly: true, tenantScoped: true });
    const acme = ((await show.handler({}, { tenant: 'acme' })) as { text: string }).text;
    const samples = parseExposition(acme);
    expect(samples.length).toBeGreaterThan(0);
    for (const s of samples) expect(Object.values(s.labels).some((v) => v === 'acme' || v.startsWith('acme/')), JSON.stringify(s)).toBe(true);
    expect(sampleValue(samples, 'svc_tenant_throttled_total', { tenant: 'acme', quota: 'concurrent_calls' })).toBe(1);
    expect(acme).toContain('# TYPE svc_tenant_cpu_seconds_total counter');
    expect(acme).not.toMatch(/tenant="quiet"|service="ok"|^process_/m);
    const all = ((await show.handler({}, undefined)) as { text: string }).text;
    expect(all).toMatch(/tenant="quiet"/);
    expect(all).toMatch(/service="ok"/);
  });
});
