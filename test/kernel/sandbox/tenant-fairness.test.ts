import { availableParallelism } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceRunner } from '../../../kernel/sandbox/runner.ts';
import { deploy, median, request, startRunner, tenant, WORK } from './tenant-runner.ts';

/**
 * Fair shares of the tenants' processes (kernel/sandbox/fair.ts), with real processes and
 * isolates: tenant a floods its sandbox process with CPU-bound calls to many services at once
 * (each a busy isolate, a thread), while tenant b makes one call after another. Without fair
 * shares b's isolate gets one thread's turn among all of a's: on 2 cores with 8 of a's services
 * b's calls took 5 to 8 times as long as alone. With them, a holds its share of the cores while
 * b has work. The same whether the two share the tenants' processes or each has its own: the
 * OS shares the cores between threads, whichever process they are in.
 *
 * Latency is compared with b's own calls alone, measured before and after the flood in the same
 * run (the slower of the two), so the machine's other load weighs on both sides. And what each
 * tenant was charged while b ran under the flood is compared: their isolates run side by side in
 * one process, so outside load takes from both alike.
 */

const CORES = Math.max(2, availableParallelism());
/** Enough of a's services that, without fair shares, a would have 4 threads per core. */
const FLOODED = Math.min(16, 4 * CORES);
/** b's call: about 20 ms of CPU on this kind of machine; a's: about 40. */
const B_WORK = { n: 3_000_000 };
const A_WORK = { n: 6_000_000 };
/** b under a's flood takes at most this many times as long as alone (measured 1.2 to 1.6; 5 to 10 without fair shares). */
const MAX_RATIO = 3;
/**
 * a's CPU over b's while b runs under the flood, at most (measured 1.5 to 1.9 on a quiet machine,
 * once 3.6 at load 4.4 in a's own process; 8.4 to 8.9 without fair shares).
 */
const MAX_CPU_RATIO = 4.5;

describe.each([
  { placement: "the tenants' shared process", processes: 0 },
  { placement: 'a process of its own each', processes: 1 },
])('fair shares, tenants in $placement', ({ processes }) => {
  let runner: ServiceRunner;
  beforeAll(async () => {
    runner = await startRunner({ workers: 1, tenantWorkers: 1, fairCores: CORES });
    await runner.setTenants([tenant('a', { processes }), tenant('b', { processes })]);
    const services: Record<string, string> = { 'b/work': WORK };
    for (let i = 0; i < FLOODED; i++) services[`a/w${i}`] = WORK;
    await deploy(runner, services);
  }, 60_000);
  afterAll(() => runner?.close());

  const cpuOf = (name: string) => runner.stats().tenants.find((t) => t.tenant === name)!.cpuMs;

  /** b's calls one after another; how long each took, ms. */
  async function callsOfB(count: number): Promise<number[]> {
    const took: number[] = [];
    for (let i = 0; i < count; i++) {
      const started = performance.now();
      await runner.invoke(request('b/work', B_WORK));
      took.push(performance.now() - started);
    }
    return took;
  }

  // One retry: b's latencies are wall times on 2 cores that another test file shares (maxWorkers 2),
  // and one busy moment of that file during the flood has read 3.07 where quiet runs read 1.2–1.6.
  // Without fair shares b's calls take 5–10× as long, every time: a retry does not hide that.
  it("a tenant flooding them with CPU-bound calls does not raise another tenant's latency", { retry: 1, timeout: 60_000 }, async () => {
    // Warm: each isolate built and its code compiled.
    await callsOfB(3);
    await Promise.all(Array.from({ length: FLOODED }, (_, i) => runner.invoke(request(`a/w${i}`, { n: 1000 }))));
    const alone = await callsOfB(10);

    let flooding = true;
    let answeredToA = 0;
    const flood = Array.from({ length: 2 * FLOODED }, async (_, i) => {
      while (flooding) {
        await runner.invoke(request(`a/w${i % FLOODED}`, A_WORK));
        answeredToA++;
      }
    });
    // a's flood is under way, every one of its services busy.
    await new Promise((r) => setTimeout(r, 500));
    const cpuBefore = { a: cpuOf('a'), b: cpuOf('b') };
    const underFlood = await callsOfB(10);
    const answeredDuring = answeredToA;
    const cpu = { a: cpuOf('a') - cpuBefore.a, b: cpuOf('b') - cpuBefore.b };
    flooding = false;
    await Promise.all(flood);
    const aloneAfter = await callsOfB(10);

    const baseline = Math.max(median(alone), median(aloneAfter));
    const ratio = median(underFlood) / baseline;
    expect(ratio, `b alone ${median(alone).toFixed(0)} / ${median(aloneAfter).toFixed(0)} ms, under a's flood ${median(underFlood).toFixed(0)} ms`).toBeLessThan(MAX_RATIO);
    expect(cpu.a / cpu.b, `a ${cpu.a.toFixed(0)} ms, b ${cpu.b.toFixed(0)} ms of CPU`).toBeLessThan(MAX_CPU_RATIO);
    // a was held to its share, not stopped.
    expect(answeredDuring).toBeGreaterThan(0);
    expect(cpu.a).toBeGreaterThan(0);
  });
});
