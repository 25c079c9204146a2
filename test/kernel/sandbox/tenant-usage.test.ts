import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../kernel/platform/clock.ts';
import { CpuWindow, TenantLedger } from '../../../kernel/sandbox/tenant-usage.ts';
import { tenant } from './tenant-runner.ts';

/** Per-tenant CPU in a sliding minute and the quotas checked against it (kernel/sandbox/tenant-usage.ts), on a clock moved by hand. */

describe('the CPU window', () => {
  it('sums the last minute, in whole seconds', () => {
    const w = new CpuWindow();
    const t0 = 1_000_000;
    w.add(t0, 100);
    w.add(t0 + 30_000, 50);
    expect(w.sum(t0 + 30_000)).toBe(150);
    // The first second's use leaves when the minute after it begins.
    expect(w.sum(t0 + 59_999)).toBe(150);
    expect(w.sum(t0 + 60_000)).toBe(50);
    expect(w.sum(t0 + 90_000)).toBe(0);
  });

  it('a bucket reused a minute later starts from nothing', () => {
    const w = new CpuWindow();
    w.add(5_000, 100);
    w.add(65_000, 7);
    expect(w.sum(65_000)).toBe(7);
  });

  it('tells how long until the use falls under a limit', () => {
    const w = new CpuWindow();
    const t0 = 1_000_000;
    w.add(t0, 600);
    w.add(t0 + 20_000, 600);
    // At t0 + 30 s: 1200 used; under 1000 once t0's second leaves, 30 s later.
    expect(w.secondsUntilUnder(t0 + 30_000, 1000)).toBe(30);
    // Under 500 only once both left: 50 s.
    expect(w.secondsUntilUnder(t0 + 30_000, 500)).toBe(50);
    expect(w.secondsUntilUnder(t0 + 30_000, 5000)).toBe(1);
  });
});

describe('the tenant ledger', () => {
  it('refuses calls over cpu_ms_per_minute with TENANT_QUOTA and Retry-After until the minute’s use falls under it', () => {
    const clock = new ManualClock(1_000_000);
    const ledger = new TenantLedger(clock);
    ledger.configure([tenant('acme', { quotas: { cpu_ms_per_minute: 1000 } }), tenant('other')]);
    ledger.addCpu('acme', 999);
    expect(ledger.refusal('acme', false)).toBeUndefined();
    ledger.addCpu('acme', 2);
    const refused = ledger.refusal('acme', false)!;
    expect(refused.code).toBe('TENANT_QUOTA');
    expect(refused.status).toBe(429);
    expect(refused.details).toMatch(/cpu_ms_per_minute/);
    expect(refused.headers).toEqual({ 'Retry-After': '60' });
    // Calls made by invoke are refused too: the CPU is the tenant's whoever asked.
    expect(ledger.refusal('acme', true)?.code).toBe('TENANT_QUOTA');
    expect(ledger.refusal('other', false)).toBeUndefined();
    clock.advance(59_000);
    expect(ledger.refusal('acme', false)?.headers).toEqual({ 'Retry-After': '1' });
    clock.advance(1_000);
    expect(ledger.refusal('acme', false)).toBeUndefined();
    const acme = ledger.figures().find((f) => f.tenant === 'acme')!;
    expect(acme).toEqual({ tenant: 'acme', cpuMs: 1001, cpuMsLastMinute: 0, inFlight: 0, throttled: { cpu_ms_per_minute: 3, concurrent_calls: 0 } });
  });

  it('counts calls from outside against concurrent_calls, not the calls they invoke', () => {
    const ledger = new TenantLedger(new ManualClock());
    ledger.configure([tenant('acme', { quotas: { concurrent_calls: 2 } })]);
    ledger.started('acme', false);
    ledger.started('acme', false);
    ledger.started('acme', true);
    const refused = ledger.refusal('acme', false)!;
    expect(refused.code).toBe('TENANT_QUOTA');
    expect(refused.details).toMatch(/concurrent_calls/);
    expect(refused.headers).toEqual({ 'Retry-After': '1' });
    expect(ledger.refusal('acme', true)).toBeUndefined();
    ledger.ended('acme', true);
    ledger.ended('acme', false);
    expect(ledger.refusal('acme', false)).toBeUndefined();
    expect(ledger.figures()).toEqual([{ tenant: 'acme', cpuMs: 0, cpuMsLastMinute: 0, inFlight: 1, throttled: { cpu_ms_per_minute: 0, concurrent_calls: 1 } }]);
  });

  it('forgets a removed tenant once nothing of it runs', () => {
    const ledger = new TenantLedger(new ManualClock());
    ledger.configure([tenant('acme'), tenant('gone')]);
    ledger.addCpu('gone', 5);
    ledger.started('gone', false);
    ledger.configure([tenant('acme')]);
    expect(ledger.figures().map((f) => f.tenant)).toEqual(['acme', 'gone']);
    ledger.ended('gone', false);
    ledger.configure([tenant('acme')]);
    expect(ledger.figures().map((f) => f.tenant)).toEqual(['acme']);
  });
});
