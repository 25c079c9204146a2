import { execFileSync, spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { Worker } from 'node:worker_threads';
import { metered, onOwnCores, PUBSUB, publishBody } from '../../bench/lib.ts';

const affinity = (pid: number) => execFileSync('taskset', ['-c', '-p', String(pid)], { encoding: 'utf8' }).split(':').pop()!.trim();

describe("onOwnCores (the publish suite's one-core table)", () => {
  it.runIf(availableParallelism() >= 2)('puts the servers on CPU 0 and the bench on the last CPU while the work runs, then restores both', async () => {
    const server = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
    try {
      const serverBefore = affinity(server.pid!);
      const benchBefore = affinity(process.pid);
      const during = await onOwnCores([server.pid!], async () => ({ server: affinity(server.pid!), bench: affinity(process.pid) }));
      expect(during).toEqual({ server: '0', bench: String(availableParallelism() - 1) });
      expect(affinity(server.pid!)).toBe(serverBefore);
      expect(affinity(process.pid)).toBe(benchBefore);
    } finally {
      server.kill();
    }
  });

  it('restores the affinities when the work fails', async () => {
    const before = affinity(process.pid);
    await expect(onOwnCores([], async () => Promise.reject(new Error('round failed')))).rejects.toThrow('round failed');
    expect(affinity(process.pid)).toBe(before);
  });
});

describe('publishBody, the message of the publish suites', () => {
  it('is PUBSUB.message as before without a length, and exactly `bytes` long with one', () => {
    expect(publishBody('B', true)).toBe(JSON.stringify(PUBSUB.message));
    expect(publishBody('A', true)).toBe(JSON.stringify({ ...PUBSUB.message, has_gd: true }));
    for (const variant of ['A', 'B'] as const) {
      const body = publishBody(variant, true, 106);
      expect(Buffer.byteLength(body)).toBe(106);
      expect(JSON.parse(body).data.order).toBe(PUBSUB.message.data.order);
    }
    expect(() => publishBody('A', true, 20)).toThrow(/shorter/);
  });
});

describe("metered: the event loop's part of a process's CPU (Cost.loopUs)", () => {
  const spin = (ms: number) => {
    const until = performance.now() + ms;
    while (performance.now() < until);
  };

  it('counts work on the main thread in both mainUs and loopUs', async () => {
    const { cost } = await metered([process.pid], async () => spin(300), () => 1);
    expect(cost.loopUs).toBeGreaterThanOrEqual(200_000);
    // Ticks of 10 ms: the thread's figure is at most the process's, give or take one tick.
    expect(cost.loopUs).toBeLessThanOrEqual(cost.mainUs + 10_000);
  });

  it('leaves work on another thread out of loopUs', async () => {
    const busy = new Worker('const until = Date.now() + 400; while (Date.now() < until);', { eval: true });
    const { cost } = await metered(
      [process.pid],
      () => new Promise<void>((resolve) => busy.once('exit', () => resolve())),
      () => 1,
    );
    expect(cost.mainUs).toBeGreaterThanOrEqual(250_000);
    expect(cost.loopUs).toBeLessThan(cost.mainUs / 2);
  });
});
