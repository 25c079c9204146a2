import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../kernel/platform/clock.ts';
import { CpuWindow, REMOTE_TTL_MS, SlidingWindow, TenantLedger, THROTTLING_QUOTAS } from '../../../kernel/tenants/ledger.ts';
import { split } from '../../../kernel/tenants/cluster.ts';

const throttled = (some: Record<string, number>) => ({ ...Object.fromEntries(THROTTLING_QUOTAS.map((q) => [q, 0])), ...some });
import { tenant } from '../sandbox/tenant-runner.ts';

/** Per-tenant CPU in a sliding minute and the quotas checked against it (kernel/tenants/ledger.ts), on a clock moved by hand. */

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
    expect(acme).toEqual({ tenant: 'acme', cpuMs: 1001, cpuMsLastMinute: 0, cpuMsLastMinuteCluster: 0, outgoingCallsLastMinute: 0, inFlight: 0, throttled: throttled({ cpu_ms_per_minute: 3 }) });
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
    expect(ledger.figures()).toEqual([{ tenant: 'acme', cpuMs: 0, cpuMsLastMinute: 0, cpuMsLastMinuteCluster: 0, outgoingCallsLastMinute: 0, inFlight: 1, throttled: throttled({ concurrent_calls: 1 }) }]);
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

describe('metered quotas', () => {
  it('counts outgoing calls in a sliding minute and refuses past the limit without counting the refused', () => {
    const clock = new ManualClock(1_000_000);
    const ledger = new TenantLedger(clock);
    ledger.configure([tenant('acme', { quotas: { outgoing_calls_per_minute: 3 } })]);
    expect(ledger.take('acme', 'outgoing_calls_per_minute')).toBeUndefined();
    clock.advance(10_000);
    expect(ledger.take('acme', 'outgoing_calls_per_minute', 2)).toBeUndefined();
    const refused = ledger.take('acme', 'outgoing_calls_per_minute')!;
    expect(refused.code).toBe('TENANT_QUOTA');
    expect(refused.details).toBe('Quota outgoing_calls_per_minute reached: the tenant\'s services made 3 outgoing calls in the last minute, of 3');
    // The first call leaves the window 50 s later, the two others 60 s later.
    expect(refused.headers).toEqual({ 'Retry-After': '50' });
    clock.advance(50_000);
    expect(ledger.take('acme', 'outgoing_calls_per_minute')).toBeUndefined();
    expect(ledger.take('acme', 'outgoing_calls_per_minute')?.code).toBe('TENANT_QUOTA');
    // Nothing limits the platform, or a tenant without the quota.
    expect(ledger.take(undefined, 'outgoing_calls_per_minute')).toBeUndefined();
    expect(ledger.take('other', 'outgoing_calls_per_minute')).toBeUndefined();
    expect(ledger.figures()[0]!.throttled.outgoing_calls_per_minute).toBe(2);
    expect(ledger.figures()[0]!.outgoingCallsLastMinute).toBe(3);
  });

  it('counts publishes in a second that slides in tenths', () => {
    const clock = new ManualClock(1_000_000);
    const ledger = new TenantLedger(clock);
    ledger.configure([tenant('acme', { quotas: { publishes_per_second: 10 } })]);
    expect(ledger.take('acme', 'publishes_per_second', 10)).toBeUndefined();
    expect(ledger.take('acme', 'publishes_per_second')?.headers).toEqual({ 'Retry-After': '1' });
    // 900 ms later the ten are still in the last second; 1000 ms later they are not.
    clock.advance(900);
    expect(ledger.take('acme', 'publishes_per_second')?.code).toBe('TENANT_QUOTA');
    clock.advance(100);
    expect(ledger.take('acme', 'publishes_per_second', 10)).toBeUndefined();
  });

  it('refusals by quotas plugins measure themselves are counted with their Retry-After', () => {
    const ledger = new TenantLedger(new ManualClock());
    ledger.configure([tenant('acme', { quotas: { queued_events: 5 } })]);
    expect(ledger.limit('acme', 'queued_events')).toBe(5);
    expect(ledger.limit(undefined, 'queued_events')).toBeUndefined();
    const e = ledger.refuse('acme', 'queued_events', '5 events are waiting, of 5', 2.2);
    expect([e.status, e.code, e.details, e.headers]).toEqual([429, 'TENANT_QUOTA', 'Quota queued_events reached: 5 events are waiting, of 5', { 'Retry-After': '3' }]);
    expect(ledger.figures()[0]!.throttled.queued_events).toBe(1);
  });
});

describe('quotas across nodes', () => {
  it('adds what the other nodes last reported, until their figures grow stale', () => {
    const clock = new ManualClock(1_000_000);
    const ledger = new TenantLedger(clock);
    ledger.configure([tenant('acme', { quotas: { cpu_ms_per_minute: 1000 } })]);
    expect(ledger.hasWindowedQuotas()).toBe(true);
    ledger.addCpu('acme', 400);
    ledger.markReported(ledger.localUsage());
    ledger.setRemote('node-b', { acme: { cpu_ms_per_minute: 350 } });
    ledger.setRemote('node-c', { acme: { cpu_ms_per_minute: 300 } });
    expect(ledger.refusal('acme', false)?.code).toBe('TENANT_QUOTA');
    expect(ledger.figures()[0]!.cpuMsLastMinuteCluster).toBe(1050);
    // A newer report replaces the node's last one: 400 + 350 + 100 leaves room.
    ledger.setRemote('node-c', { acme: { cpu_ms_per_minute: 100 } });
    expect(ledger.refusal('acme', false)).toBeUndefined();
    // A node that stops reporting stops counting.
    clock.advance(REMOTE_TTL_MS + 1);
    ledger.setRemote('node-c', {});
    expect(ledger.remoteSum('acme', 'cpu_ms_per_minute')).toBe(0);
  });

  it('each node uses only its share of the room left at the last exchange, so the nodes together stay under the limit', () => {
    const clock = new ManualClock(1_000_000);
    const cluster = () => {
      const nodes = ['a', 'b', 'c'].map(() => new TenantLedger(clock));
      for (const n of nodes) n.configure([tenant('acme', { quotas: { outgoing_calls_per_minute: 300 } })]);
      const exchange = () => {
        const sums = nodes.map((n) => n.localUsage());
        nodes.forEach((n, i) => {
          n.markReported(sums[i]!);
          nodes.forEach((_, j) => j !== i && n.setRemote(`node-${j}`, sums[j]!));
        });
      };
      exchange();
      return { nodes, exchange };
    };
    // Every node floods between exchanges: each takes what its share allows, 100 of 300 at first.
    const all = cluster();
    const admitted = [0, 0, 0];
    for (let round = 0; round < 40; round++) {
      all.nodes.forEach((n, i) => {
        while (n.take('acme', 'outgoing_calls_per_minute') === undefined) admitted[i]!++;
      });
      if (round === 0) expect(admitted).toEqual([100, 100, 100]);
      all.exchange();
      clock.advance(100);
    }
    const total = admitted.reduce((a, b) => a + b, 0);
    expect(total).toBe(300);
    // Busy on one node only, the tenant still reaches its limit within a second of exchanges.
    const one = cluster();
    let taken = 0;
    for (let round = 0; round < 10; round++) {
      while (one.nodes[0]!.take('acme', 'outgoing_calls_per_minute') === undefined) taken++;
      if (round === 0) expect(taken).toBe(100);
      one.exchange();
    }
    expect(taken).toBeGreaterThanOrEqual(290);
    expect(taken).toBeLessThanOrEqual(300);
  });

  it('sends each node’s sums in parts under the notification limit', () => {
    const usage = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`tenant-number-${i}`, { cpu_ms_per_minute: 12345.6, outgoing_calls_per_minute: 12 }]));
    const parts = split('abc', usage).map((p) => JSON.parse(p) as { n: string; u: Record<string, unknown>; more?: boolean });
    expect(parts.length).toBeGreaterThan(1);
    for (const p of split('abc', usage)) expect(p.length).toBeLessThan(7000);
    expect(parts[0]!.more).toBeUndefined();
    expect(parts.slice(1).every((p) => p.more === true)).toBe(true);
    const ledger = new TenantLedger(new ManualClock());
    parts.forEach((p) => ledger.setRemote(p.n, p.u as never, p.more));
    expect(ledger.remoteSum('tenant-number-0', 'cpu_ms_per_minute')).toBe(12345.6);
    expect(ledger.remoteSum('tenant-number-399', 'cpu_ms_per_minute')).toBe(12345.6);
  });

  it('a sliding window of tenths', () => {
    const w = new SlidingWindow(10, 100);
    w.add(1_000, 3);
    w.add(1_550, 4);
    expect(w.sum(1_999)).toBe(7);
    expect(w.sum(2_000)).toBe(4);
    expect(w.sum(2_600)).toBe(0);
  });
});
