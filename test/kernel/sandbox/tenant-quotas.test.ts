import { afterEach, describe, expect, it } from 'vitest';
import { monotonicNow } from '../../../kernel/platform/clock.ts';
import type { SvcError } from '../../../kernel/errors.ts';
import type { ServiceRunner } from '../../../kernel/sandbox/runner.ts';
import { deploy, ECHO, request, startRunner, tenant, WORK } from './tenant-runner.ts';

/**
 * A tenant's quotas in the sandbox runner, with real processes and isolates: CPU per minute
 * (measured by the isolates, reported by the processes), calls at once, and the memory ceiling
 * of its isolates. Over a quota a call is refused TENANT_QUOTA (429) naming it, with Retry-After,
 * and counted; other tenants are untouched.
 */

let runner: ServiceRunner | undefined;
afterEach(async () => {
  await runner?.close();
  runner = undefined;
});

const failure = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as SvcError);
const figures = (r: ServiceRunner, name: string) => r.stats().tenants.find((t) => t.tenant === name)!;

/** About 50 to 150 ms of CPU on this kind of machine. */
const SOME_WORK = { n: 10_000_000 };

describe('cpu_ms_per_minute', () => {
  it("refuses the tenant's calls once its isolates used the quota in the last minute, until the minute's use falls under it", async () => {
    // A clock the test can move a minute on; real time otherwise (deadlines run on it).
    let skipped = 0;
    runner = await startRunner({ clock: { now: () => monotonicNow() + skipped } });
    await runner.setTenants([tenant('acme', { quotas: { cpu_ms_per_minute: 300 } }), tenant('other')]);
    await deploy(runner, { 'acme/work': WORK, 'other/work': WORK, work: WORK });
    let refused: SvcError | undefined;
    let answered = 0;
    // Reports come every 100 ms: the call after one that crossed the quota may still pass.
    for (let i = 0; i < 60 && !refused; i++) {
      refused = await failure(runner.invoke(request('acme/work', SOME_WORK)));
      if (!refused) answered++;
    }
    expect(refused?.code).toBe('TENANT_QUOTA');
    expect(refused?.status).toBe(429);
    expect(refused?.details).toMatch(/^Quota cpu_ms_per_minute reached: the tenant's services used \d+ ms of CPU in the last minute, of 300$/);
    const retry = Number(refused?.headers?.['Retry-After']);
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    expect(answered).toBeGreaterThanOrEqual(2);
    const acme = figures(runner, 'acme');
    expect(acme.cpuMsLastMinute).toBeGreaterThanOrEqual(300);
    expect(acme.throttled).toMatchObject({ cpu_ms_per_minute: 1, concurrent_calls: 0 });
    expect(runner.stats().calls).toContainEqual({ service: 'acme/work', outcome: 'tenant_quota', count: 1 });
    // Nothing was taken from another tenant, nor from the platform.
    expect(await failure(runner.invoke(request('other/work', SOME_WORK)))).toBeUndefined();
    expect(await failure(runner.invoke(request('work', SOME_WORK)))).toBeUndefined();
    // A call made by invoke is refused as well: the CPU would be the tenant's.
    expect((await failure(runner.invoke(request('acme/work', SOME_WORK), { caller: 1, timeoutMs: 5000, depth: 1 })))?.code).toBe('TENANT_QUOTA');
    skipped += 61_000;
    expect(await failure(runner.invoke(request('acme/work', SOME_WORK)))).toBeUndefined();
    expect(figures(runner, 'acme').throttled.cpu_ms_per_minute).toBe(2);
  });
});

describe('concurrent_calls', () => {
  it('refuses calls from outside past the quota; the calls they invoke are not counted', async () => {
    runner = await startRunner();
    await runner.setTenants([tenant('acme', { quotas: { concurrent_calls: 2 } })]);
    await deploy(runner, { 'acme/work': WORK, 'acme/echo': ECHO });
    const r = runner;
    // Invoked in one go: the first two are in flight when the third is asked.
    const running = [r.invoke(request('acme/work', SOME_WORK)), r.invoke(request('acme/work', SOME_WORK))];
    const third = await failure(r.invoke(request('acme/echo')));
    expect(third?.code).toBe('TENANT_QUOTA');
    expect(third?.details).toBe('Quota concurrent_calls reached: the tenant has 2 calls running');
    expect(third?.headers).toEqual({ 'Retry-After': '1' });
    expect(figures(r, 'acme').inFlight).toBe(2);
    // A call one of them would make with invoke is part of its caller's: it runs.
    expect(await failure(r.invoke(request('acme/echo'), { caller: 1, timeoutMs: 5000, depth: 1 }))).toBeUndefined();
    await Promise.all(running);
    expect(figures(r, 'acme').inFlight).toBe(0);
    expect(await failure(r.invoke(request('acme/echo')))).toBeUndefined();
    expect(figures(r, 'acme').throttled).toMatchObject({ cpu_ms_per_minute: 0, concurrent_calls: 1 });
  });
});

describe('memory_mb', () => {
  /** Declares 64 MB; keeps `n` small objects (300,000 of them are past 16 MB and well under 64). */
  const HOARD = `import { service } from 'svc/sdk';
export default service({ limits: { memoryMb: 64 }, handle(ctx) { const a = []; for (let i = 0; i < ctx.input.n; i++) a.push({ i, s: 'x' + i }); return a.length; } });`;

  it("is the ceiling of each of the tenant's isolates, below what its services declare; a new quota applies at once", async () => {
    runner = await startRunner();
    await runner.setTenants([tenant('small', { quotas: { memory_mb: 16 } }), tenant('roomy')]);
    const small = await runner.deploy('small/hoard', 'hoard.js', HOARD);
    const roomy = await runner.deploy('roomy/hoard', 'hoard.js', HOARD);
    expect(small.ok && small.meta.limits.memoryMb).toBe(16);
    expect(roomy.ok && roomy.meta.limits.memoryMb).toBe(64);
    expect((await failure(runner.invoke(request('small/hoard', { n: 300_000 }))))?.code).toBe('SERVICE_MEMORY_LIMIT');
    expect(await failure(runner.invoke(request('roomy/hoard', { n: 300_000 })))).toBeUndefined();
    // Lifted: its isolates are built again with what the service declares.
    await runner.setTenants([tenant('small'), tenant('roomy')]);
    expect(await failure(runner.invoke(request('small/hoard', { n: 300_000 })))).toBeUndefined();
    await runner.setTenants([tenant('small', { quotas: { memory_mb: 16 } }), tenant('roomy')]);
    expect((await failure(runner.invoke(request('small/hoard', { n: 300_000 }))))?.code).toBe('SERVICE_MEMORY_LIMIT');
  });

  it("spaces the rebuilds of a tenant whose isolates keep meeting the limit; another tenant's go at once", async () => {
    runner = await startRunner();
    await runner.setTenants([tenant('bomber', { quotas: { memory_mb: 16 } }), tenant('other', { quotas: { memory_mb: 16 } })]);
    await deploy(runner, { 'bomber/hoard': HOARD, 'other/hoard': HOARD });
    const r = runner;
    const timed = async (name: string, n: number) => {
      const started = performance.now();
      const e = await failure(r.invoke(request(name, { n })));
      return { code: e?.code, ms: performance.now() - started };
    };
    const waitedMs = (service: string) => r.stats().isolateRebuilds.find((x) => x.service === service)?.waitedMs ?? 0;
    const bombs = [];
    for (let i = 0; i < 10; i++) bombs.push(await timed('bomber/hoard', 300_000));
    expect(bombs.every((b) => b.code === 'SERVICE_MEMORY_LIMIT')).toBe(true);
    // Rebuilt at once at first, then one per spacing, doubling from 50 ms to 1 s (rebuild-gate.ts).
    // A call that itself takes longer than the spacing leaves no wait: on a loaded machine a bomb
    // took 700 ms, so only the last turns, 800 ms and 1 s apart, are sure to wait.
    expect(waitedMs('bomber/hoard')).toBeGreaterThan(0);
    // The other tenant meets its limit twice; neither of its rebuilds waits its turn.
    const other = [await timed('other/hoard', 300_000), await timed('other/hoard', 300_000), await timed('other/hoard', 10)];
    expect(other.map((o) => o.code)).toEqual(['SERVICE_MEMORY_LIMIT', 'SERVICE_MEMORY_LIMIT', undefined]);
    expect(r.stats().isolateRebuilds.find((x) => x.service === 'other/hoard')?.count).toBe(2);
    expect(waitedMs('other/hoard')).toBe(0);
    // The bomber's service still answers what fits (after its turn).
    expect((await timed('bomber/hoard', 10)).code).toBeUndefined();
  });
});
