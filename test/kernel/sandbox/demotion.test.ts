import { describe, expect, it } from 'vitest';
import { defaultDemoteCores, Demotion, DEMOTE_WINDOW_MS, MEMORY_LIMIT_WINDOW_MS, MEMORY_LIMITS_TO_LOWER, newCpuWatch, processCpuMs, RELOWER_WALKS } from '../../../kernel/sandbox/demotion.ts';

/** A process whose CPU clock the test moves, read by a Demotion on the test's clock. */
function setup() {
  const clock = { now: 0, cpuMs: 0 };
  const lowered: number[] = [];
  const demotion = new Demotion(0.5, { now: () => clock.now, readCpuMs: () => clock.cpuMs, lower: (pid) => lowered.push(pid) });
  const watch = newCpuWatch(false);
  /** `ms` pass while the process uses `cores`; then one reading. */
  const run = (ms: number, cores: number) => {
    clock.now += ms;
    clock.cpuMs += ms * cores;
    return demotion.cores(42, watch);
  };
  run(0, 0);
  return { clock, lowered, demotion, watch, run };
}

describe('demotion: reading a process', () => {
  it('says how busy it was once its readings span half a window, then over the last window', () => {
    const { run } = setup();
    // 400 ms of a whole core: a busy moment, not yet a busy process.
    expect(run(200, 1)).toBeUndefined();
    expect(run(200, 1)).toBeUndefined();
    expect(run(200, 1)).toBeCloseTo(1, 5);
    for (let i = 0; i < 10; i++) run(200, 0.25);
    // A window later only the quiet readings count.
    expect(run(200, 0.25)).toBeCloseTo(0.25, 5);
  });

  it('keeps only the readings of about one window, however long it runs', () => {
    const { run, watch } = setup();
    for (let i = 0; i < 100; i++) run(200, 0.45);
    expect(watch.samples.length).toBeLessThanOrEqual(DEMOTE_WINDOW_MS / 200 + 2);
  });

  it('an old busy spell ages out: a burst long ago and quiet since reads as quiet', () => {
    const { run } = setup();
    run(200, 1);
    for (let i = 0; i < 10; i++) run(200, 0.1);
    expect(run(200, 0.1)).toBeCloseTo(0.1, 5);
  });

  it('a reset forgets the readings (the kernel made it busy: starting, deploying)', () => {
    const { run, watch } = setup();
    run(400, 1);
    Demotion.reset(watch);
    expect(run(200, 1)).toBeUndefined();
  });

  it('a process that cannot be read (gone) reads as nothing', () => {
    const demotion = new Demotion(0.5, { readCpuMs: () => undefined });
    const watch = newCpuWatch(false);
    for (let i = 0; i < 5; i++) expect(demotion.cores(1, watch)).toBeUndefined();
    expect(watch.samples).toEqual([]);
  });
});

describe('demotion: lowering', () => {
  it('lowers every thread and marks the process, then walks its threads again a few times only (threads started during a walk)', () => {
    const { demotion, watch, lowered, run } = setup();
    run(200, 1);
    demotion.lower(42, watch);
    expect(watch.demoted).toBe(true);
    expect(watch.samples).toEqual([]);
    for (let i = 0; i < 20; i++) demotion.lower(42, watch);
    expect(lowered).toEqual(Array(1 + RELOWER_WALKS).fill(42));
  });

  it('a process started low has its threads walked as many times (the walk of its own may race a thread)', () => {
    const lowered: number[] = [];
    const demotion = new Demotion(0.5, { lower: (pid) => lowered.push(pid) });
    const watch = newCpuWatch(true);
    for (let i = 0; i < 20; i++) demotion.lower(7, watch);
    expect(lowered).toEqual(Array(RELOWER_WALKS).fill(7));
  });

  it('a process whose isolates meet their memory limit MEMORY_LIMITS_TO_LOWER times within the window is one to lower; the calls of one limit met count once', () => {
    const { clock, demotion, watch } = setup();
    const met = () => demotion.memoryLimitMet(watch);
    expect(MEMORY_LIMITS_TO_LOWER).toBe(3);
    expect(met()).toBe(false);
    // The other calls of the same isolate, failing with it: the same limit met.
    for (let i = 0; i < 7; i++) expect(met()).toBe(false);
    clock.now += 1_000;
    expect(met()).toBe(false);
    clock.now += 1_000;
    expect(met()).toBe(true);
    // Lowered already: nothing more to say.
    demotion.lower(42, watch);
    clock.now += 1_000;
    expect(met()).toBe(false);
  });

  it('memory limits met further apart than the window never make one to lower', () => {
    const { clock, demotion, watch } = setup();
    for (let i = 0; i < 20; i++) {
      expect(demotion.memoryLimitMet(watch)).toBe(false);
      clock.now += MEMORY_LIMIT_WINDOW_MS / 2 + 1;
    }
    expect(watch.memoryLimits.length).toBeLessThanOrEqual(2);
  });

  it('by default the bar is a quarter of the cores, at least half of one', () => {
    expect(defaultDemoteCores(1)).toBe(0.5);
    expect(defaultDemoteCores(2)).toBe(0.5);
    expect(defaultDemoteCores(16)).toBe(4);
  });

  it.runIf(process.platform === 'linux')("reads a process's CPU from /proc: this one's grows with work", () => {
    const before = processCpuMs(process.pid)!;
    expect(before).toBeGreaterThanOrEqual(0);
    const end = performance.now() + 120;
    let x = 0;
    while (performance.now() < end) x += Math.sqrt(x + 1);
    expect(x).toBeGreaterThan(0);
    expect(processCpuMs(process.pid)!).toBeGreaterThanOrEqual(before + 50);
    expect(processCpuMs(2 ** 22 + 12345)).toBeUndefined();
  });
});
