import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedVmAdvisory } from '../../../../kernel/sandbox/ivm.ts';
import { HeldCalls } from '../../../helpers/held-calls.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { rows, until } from './support.ts';

/**
 * An attempt its tenant's quota refuses is not an attempt (plugins/delivery/use-queue/scheduler.ts,
 * waitForQuota): the event goes back to pending with its attempts unchanged, due after the
 * refusal's Retry-After, and its channel's queue waits whole until then, so a backlog costs one
 * refusal per wait, not two store writes and a log line per event per backoff, and nothing goes
 * to the dead-letter queue. Once the quota has room the events run. Real tenant processes; the
 * quota is concurrent_calls: 1, held by a call the test holds open.
 */
const HOLD = `import { service, outgoing } from 'svc/sdk';
export default service({ async handle(ctx) { await outgoing('gate').post(ctx.cid, { payload: { tag: 'hold' } }); return { held: true }; } });`;
/** Queues background work, then holds its own call (the tenant's one concurrent call) open. */
const SPAWN = `import { service, invokeAsync, outgoing } from 'svc/sdk';
export default service({ async handle(ctx) { for (let i = 0; i < 5; i++) await invokeAsync('echo', { i }); await outgoing('gate').post(ctx.cid, { payload: { tag: 'spawn' } }); return { spawned: 5 }; } });`;
const ECHO = `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ echo: ctx.input }) });\n`;

describe.runIf(isolatedVmAdvisory() === undefined)("queued events of a tenant over its quota", () => {
  const gate = new HeldCalls();
  const logs: Array<Record<string, unknown>> = [];
  let root: string;
  let k: TestKernel;

  beforeAll(async () => {
    await gate.start();
    root = mkdtempSync(join(tmpdir(), 'svc-queue-quota-'));
    mkdirSync(join(root, 'acme'));
    writeFileSync(join(root, 'acme', 'hold.ts'), HOLD);
    writeFileSync(join(root, 'acme', 'echo.ts'), ECHO);
    writeFileSync(join(root, 'acme', 'spawn.ts'), SPAWN);
    k = await startKernel({
      logs,
      config: `
tenants:
  - name: acme
    services_dir: ${join(root, 'acme')}
    processes: 1
    quotas: { concurrent_calls: 1 }
    config:
      outgoing_rest: [${gate.outgoing('gate')}]
      channel_rest:
        - { name: hold, url_path: /hold, service: hold, security: none }
        - { name: spawn, url_path: /spawn, service: spawn, security: none }
        - { name: ingest, url_path: /ingest, service: echo, security: none, use_queue: true, delivery: { max_attempts: 2, base_delay_ms: 50, max_delay_ms: 100 } }
`,
    });
  });
  afterAll(async () => {
    await k?.close();
    await gate.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('wait, their attempts not counted, and run once the quota has room', async () => {
    const holding = k.app.inject({ method: 'GET', url: '/t/acme/hold' });
    await gate.waitHeld('hold');
    for (let i = 0; i < 5; i++) {
      const res = await k.app.inject({ method: 'POST', url: '/t/acme/ingest', payload: { i } });
      expect(res.statusCode, res.body).toBe(200);
    }
    // Long enough for max_attempts (2) retries of 50-100 ms each many times over.
    await new Promise((r) => setTimeout(r, 1_500));
    const waiting = await rows(k);
    expect(waiting).toHaveLength(5);
    for (const row of waiting) expect(row).toMatchObject({ state: 'pending', attempts: 0 });
    // One refusal per wait of the queue (Retry-After: 1 s), not one per event per backoff.
    const throttled = k.kernel.api.sandboxStats().tenants.find((t) => t.tenant === 'acme')!.throttled.concurrent_calls;
    expect(throttled).toBeGreaterThanOrEqual(1);
    expect(throttled).toBeLessThanOrEqual(3);
    const said = logs.filter((l) => l.msg === "queue: the tenant's quota refused an attempt; it waits, not counted as one (logged at most once a minute per queue)");
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ channel: 'acme/ingest', service: 'acme/echo', waitMs: 1_000 });
    expect(String(said[0]!.reason)).toMatch(/concurrent_calls/);

    expect(gate.release('hold')).toBe(1);
    expect((await holding).statusCode).toBe(200);
    await until(k, (r) => r.length === 0, 10_000);
    expect(logs.filter((l) => l.msg === 'queue: event moved to the dead-letter queue')).toHaveLength(0);
  });

  it("in the background queue (invokeAsync), wait as the tenant's events alone, their attempts not counted", async () => {
    const before = k.kernel.api.sandboxStats().tenants.find((t) => t.tenant === 'acme')!.throttled.concurrent_calls;
    // The service queues 5 events, then holds the tenant's one call open: their attempts are refused.
    const spawning = k.app.inject({ method: 'GET', url: '/t/acme/spawn' });
    await gate.waitHeld('spawn');
    await new Promise((r) => setTimeout(r, 1_500));
    const waiting = (await rows(k)).filter((r) => r.channel === null);
    expect(waiting).toHaveLength(5);
    for (const row of waiting) expect(row).toMatchObject({ state: 'pending', attempts: 0 });
    // The tenant's events wait together: one refusal per wait (Retry-After: 1 s), not one per event.
    const throttled = k.kernel.api.sandboxStats().tenants.find((t) => t.tenant === 'acme')!.throttled.concurrent_calls - before;
    expect(throttled).toBeGreaterThanOrEqual(1);
    expect(throttled).toBeLessThanOrEqual(3);

    expect(gate.release('spawn')).toBe(1);
    expect((await spawning).statusCode).toBe(200);
    await until(k, (r) => r.length === 0, 10_000);
    expect(logs.filter((l) => l.msg === 'queue: event moved to the dead-letter queue')).toHaveLength(0);
  });
});
