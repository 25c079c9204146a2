import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceRunner } from '../../../kernel/sandbox/runner.ts';
import { waitFor } from '../../helpers/wait.ts';
import { deploy, processCpuMs, request, startRunner, tenant, WORK } from './tenant-runner.ts';

/**
 * CPU accounting per tenant: what the sandbox process reports from its isolates' CPU clocks
 * (isolate.cpuTime), summed by the pool, against what the kernel of the machine says the whole
 * process used (/proc/PID/stat, utime + stime), in the same run. A tenant with a process of its
 * own runs a CPU-bound service; nothing else runs in that process.
 */

let runner: ServiceRunner;
/** acme's own process, and the one the other tenants share. */
let pid: number;
let sharedPid: number;
beforeAll(async () => {
  runner = await startRunner({ workers: 1, tenantWorkers: 1 });
  const platform = runner.pids();
  await runner.setTenants([tenant('acme', { processes: 1 })]);
  pid = runner.pids().find((p) => !platform.includes(p))!;
  await runner.setTenants([tenant('acme', { processes: 1 }), tenant('idle'), tenant('big'), tenant('small')]);
  sharedPid = runner.pids().find((p) => !platform.includes(p) && p !== pid)!;
  await deploy(runner, { 'acme/work': WORK, 'big/work': WORK, 'small/work': WORK });
}, 60_000);
afterAll(() => runner?.close());

const accounted = (name: string) => runner.stats().tenants.find((t) => t.tenant === name)!.cpuMs;

/** Waits until the tenant's account has not moved for a while: the process reported everything it used. */
async function settled(name: string): Promise<number> {
  let last = -1;
  let since = Date.now();
  return waitFor(`${name}'s CPU reports to settle`, () => {
    const now = accounted(name);
    if (now !== last) {
      last = now;
      since = Date.now();
      return false;
    }
    return Date.now() - since > 400 && now;
  });
}

describe("a tenant's CPU", () => {
  it("is what its own process used, within 10 %, by /proc in the same run", async () => {
    expect(runner.pids()).toContain(pid);
    await runner.invoke(request('acme/work', { n: 1_000_000 }));
    const accountedBefore = await settled('acme');
    const procBefore = processCpuMs(pid);
    // Four callers keep the isolate busy: about 2 s of CPU on this kind of machine.
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 6; i++) await runner.invoke(request('acme/work', { n: 15_000_000 }));
      }),
    );
    const accountedMs = (await settled('acme')) - accountedBefore;
    const procMs = processCpuMs(pid) - procBefore;
    expect(procMs).toBeGreaterThan(500);
    expect(Math.abs(accountedMs - procMs) / procMs, `accounted ${accountedMs.toFixed(1)} ms, /proc ${procMs.toFixed(1)} ms`).toBeLessThan(0.1);
  });

  it("in the shared processes, is the process's CPU, charged to the tenant whose isolates ran", async () => {
    const before = { big: await settled('big'), small: await settled('small'), proc: processCpuMs(sharedPid) };
    // One tenant after the other (side by side, the division by running time is an estimate:
    // kernel/sandbox/README.md): big does twice the work of small.
    const load = (service: string, n: number) =>
      Promise.all(
        Array.from({ length: 2 }, async () => {
          for (let i = 0; i < 5; i++) await runner.invoke(request(service, { n }));
        }),
      );
    await load('big/work', 15_000_000);
    const big = (await settled('big')) - before.big;
    await load('small/work', 7_500_000);
    const small = (await settled('small')) - before.small;
    expect((await settled('big')) - before.big).toBe(big);
    const procMs = processCpuMs(sharedPid) - before.proc;
    expect(Math.abs(big + small - procMs) / procMs, `big ${big.toFixed(1)} + small ${small.toFixed(1)} ms, /proc ${procMs.toFixed(1)} ms`).toBeLessThan(0.1);
    expect(big / small).toBeGreaterThan(1.5);
    expect(big / small).toBeLessThan(2.7);
  });

  it('is reported only while its isolates work: an idle tenant is charged nothing', async () => {
    const before = await settled('acme');
    await new Promise((r) => setTimeout(r, 500));
    expect(accounted('acme')).toBe(before);
    expect(accounted('idle')).toBe(0);
  });
});
