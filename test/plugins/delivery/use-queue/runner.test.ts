import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { definePlugin, type DurableRunner, type InvokeRequest, type KernelApi } from '../../../../sdk/plugin/index.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { rows, until } from './support.ts';

/**
 * DurableEvents.addRunner: events of a runner's queues run in the plugin's host function, never
 * as a service; an attempt that comes before the runner is registered (a restart) waits for it
 * without using an attempt.
 */
const CONFIG = `
channel_rest: []
`;

/** A plugin with a runner for the queues `late:`; `registerAfterMs` delays the registration (undefined: at setup). */
function runnerPlugin(run: DurableRunner, opts: { registerAfterMs?: number; enqueue?: boolean }) {
  return definePlugin<Record<string, never>, { kernel: KernelApi; done: boolean }>({
    name: 'late-runner',
    kind: 'other',
    version: '1.0.0',
    sdk: '^1.9.0',
    configSchema: z.object({}).strict().default({}),
    setup(kernel) {
      const durable = kernel.lookup('events.durable')!;
      durable.declareQueue('late:q', { max_attempts: 5, base_delay_ms: 600_000, max_delay_ms: 600_000, jitter: false });
      if (opts.registerAfterMs === undefined) durable.addRunner('late:', run);
      else setTimeout(() => durable.addRunner('late:', run), opts.registerAfterMs);
      return { kernel, done: false };
    },
    async onConfig(state) {
      if (!opts.enqueue || state.done) return;
      state.done = true;
      const durable = state.kernel.lookup('events.durable')!;
      const stored = await state.kernel.store.transaction((tx) => durable.enqueue(tx, 'late:q', { source: 'late', name: 'q', service: 'anything', input: { n: 1 } }), { durable: true });
      stored.committed();
    },
    hooks: {},
  });
}

const dir = mkdtempSync(join(tmpdir(), 'svc-queue-runner-'));
let k: TestKernel | undefined;

afterAll(async () => {
  await k?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('DurableEvents.addRunner', () => {
  it("runs a runner's event in the runner; an attempt before the runner is registered after a restart waits, uncounted", async () => {
    const seen: InvokeRequest[] = [];
    const failing: DurableRunner = async (req) => {
      seen.push(req);
      return { ok: false, kind: 'SERVICE_UNAVAILABLE', message: 'not now', permanent: false };
    };
    k = await startKernel({ dir, config: CONFIG, extraPlugins: [runnerPlugin(failing, { enqueue: true })] });
    const [stored] = await until(k, (r) => r.length === 1 && r[0]!.attempts === 1 && r[0]!.state === 'pending');
    // Stored as the runner's: under a name no service answers to.
    expect(stored).toMatchObject({ channel: 'late:q', service: '@late' });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ service: '@late', input: { n: 1 }, delivery: { attempt: 1, source: { kind: 'late', name: 'q' } } });
    await k.close();

    // After the restart the retry is due at once (the clock is past it), but the runner comes 400 ms later.
    const later: InvokeRequest[] = [];
    const logs: Array<Record<string, unknown>> = [];
    const ok: DurableRunner = async (req) => {
      later.push(req);
      return { ok: true, status: 200 };
    };
    k = await startKernel({ dir, config: CONFIG, logs, clock: { now: () => Date.now() + 700_000 }, extraPlugins: [runnerPlugin(ok, { registerAfterMs: 400 })] });
    await expect.poll(() => logs.some((l) => String(l.msg).startsWith('queue: no runner for this event yet')), { timeout: 5_000 }).toBe(true);
    expect((await rows(k))[0]).toMatchObject({ state: 'pending', attempts: 1 });
    await until(k, (r) => r.length === 0);
    expect(later).toHaveLength(1);
    // The wait used no attempt: this is the second.
    expect(later[0]!.delivery).toMatchObject({ attempt: 2 });
  });
});
