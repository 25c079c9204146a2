import { describe, expect, it } from 'vitest';
import { defaultDemoteCores, Demotion, DEMOTE_WINDOW_MS, newCpuWatch, processCpuMs } from '../../../kernel/sandbox/demotion.ts';

/** A process whose CPU clock the test moves, read by a Demotion on the test's clock. */
function setup(aboveCores = 0.5) {
  const clock = { now: 0, cpuMs: 0 };
  const lowered: number[] = [];
  const demotion = new Demotion(aboveCores, { now: () => clock.now, readCpuMs: () => clock.cpuMs, lower: (pid) => lowered.push(pid) });
  /** `ms` pass while the process uses `cores`; then one reading. */
  const run = (ms: number, cores: number, watch = newCpuWatch(false)) => {
    clock.now += ms;
    clock.cpuMs += ms * cores;
    return demotion.sample(42, watch);
  };
  return { clock, lowered, demotion, run };
}

describe('demotion of a busy tenant process', () => {
  it('lowers a process that used more than its cores, averaged over half a window at least, once, and says how busy it was', () => {
    const { lowered, run } = setup(0.5);
    const watch = newCpuWatch(false);
    run(0, 0, watch);
    // 400 ms of a whole core: a busy moment, not yet a busy process.
    expect(run(200, 1, watch)).toBeUndefined();
    expect(run(200, 1, watch)).toBeUndefined();
    expect(lowered).toEqual([]);
    // 600 ms at a whole core: over half a window, above 0.5.
    expect(run(200, 1, watch)).toBeCloseTo(1, 5);
    expect(lowered).toEqual([42]);
    expect(watch.demoted).toBe(true);
  });

  it('keeps a process that stays at or below its cores, however long', () => {
    const { lowered, run } = setup(0.5);
    const watch = newCpuWatch(false);
    run(0, 0, watch);
    for (let i = 0; i < 100; i++) expect(run(200, 0.45, watch)).toBeUndefined();
    expect(lowered).toEqual([]);
    // Only the readings of the last window are kept.
    expect(watch.samples.length).toBeLessThanOrEqual(DEMOTE_WINDOW_MS / 200 + 2);
  });

  it('an old busy spell ages out of the window: a burst long ago and quiet since is not busy', () => {
    const { lowered, run } = setup(0.5);
    const watch = newCpuWatch(false);
    run(0, 0, watch);
    expect(run(200, 1, watch)).toBeUndefined();
    for (let i = 0; i < 10; i++) expect(run(200, 0.1, watch)).toBeUndefined();
    expect(lowered).toEqual([]);
  });

  it('a reset forgets the readings (the kernel made it busy: starting, deploying)', () => {
    const { lowered, run } = setup(0.5);
    const watch = newCpuWatch(false);
    run(0, 0, watch);
    run(400, 1, watch);
    Demotion.reset(watch);
    expect(run(200, 1, watch)).toBeUndefined();
    expect(lowered).toEqual([]);
  });

  it('a lowered process (or one started low) is not read again, only its threads lowered again: new ones may have started', () => {
    const { lowered, run, clock } = setup(0.5);
    const watch = newCpuWatch(true);
    clock.cpuMs = Number.NaN;
    expect(run(200, 1, watch)).toBeUndefined();
    expect(run(200, 1, watch)).toBeUndefined();
    expect(lowered).toEqual([42, 42]);
  });

  it('a process that cannot be read (gone) is left alone', () => {
    const lowered: number[] = [];
    const demotion = new Demotion(0.5, { readCpuMs: () => undefined, lower: (pid) => lowered.push(pid) });
    const watch = newCpuWatch(false);
    for (let i = 0; i < 10; i++) expect(demotion.sample(1, watch)).toBeUndefined();
    expect(lowered).toEqual([]);
  });

  it('by default a quarter of the cores, at least half of one', () => {
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
