import { execFileSync, spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { onOwnCores, PUBSUB, publishBody } from '../../bench/lib.ts';

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
