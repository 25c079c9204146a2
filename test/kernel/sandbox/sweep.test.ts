import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxPool } from '../../../kernel/sandbox/pool.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';
import { waitFor } from '../../helpers/wait.ts';

/**
 * The pool's sweep (deadlines, wedged processes, probation, recycling) runs every 50 ms only while
 * a call is pending, and once a second otherwise, so an idle kernel is not woken 20 times a second
 * (kernel/platform/ticker.ts). A call's deadline is kept as before: the first fast sweep comes
 * 50 ms after the call, whatever the quiet sweep was doing. The sandbox process's own timers are
 * measured from outside in test/e2e/idle.test.ts.
 */

const config = `
server: { sandbox: { workers: 1, timeout_ms: 300, max_timeout_ms: 1000 } }
channel_rest:
  - { name: work, url_path: /work, service: work, security: none }
  - { name: slow, url_path: /slow, service: slow, security: none }
`;
/** Busy for 250 ms: it answers within its 300 ms limit when its process runs. */
const work = `import { service } from 'svc/sdk';
export default service({ handle() { const until = Date.now() + 250; while (Date.now() < until) {} return { worked: true }; } });`;
/** Busy for 800 ms (its limit is 1 s): long enough to look at the sweep while the call is pending, on a loaded machine too. */
const slow = `import { service } from 'svc/sdk';
export default service({ limits: { timeoutMs: 1000 }, handle() { const until = Date.now() + 800; while (Date.now() < until) {} return { worked: true }; } });`;

describe("the pool's sweep", () => {
  let k: TestKernel;
  let pool: SandboxPool;
  beforeAll(async () => {
    k = await startKernel({ config, services: { 'work.js': work, 'slow.js': slow }, listen: true });
    // The platform's group: a runner with no tenants has only it (kernel/sandbox/groups.ts).
    pool = (k.kernel.pool as unknown as { platform: SandboxPool }).platform;
  }, 60_000);
  afterAll(() => k?.close());

  it('runs once a second with no call pending, every 50 ms while one is, and once a second again after', async () => {
    await waitFor('the quiet cadence', () => pool.sweepEveryMs === 1_000);
    const answer = fetch(`${k.url}/slow`);
    await waitFor('the call to be pending', () => pool.inFlight().length === 1);
    expect(pool.sweepEveryMs).toBe(50);
    expect((await answer).status).toBe(200);
    await waitFor('the quiet cadence again', () => pool.sweepEveryMs === 1_000, 2_000);
  });

  it("answers a call to a stalled process at the pool's deadline, though the sweep was quiet when the call came", async () => {
    await waitFor('the quiet cadence', () => pool.sweepEveryMs === 1_000);
    const [pid] = pool.pids();
    // Stopped, the process's own watchdog cannot answer: only the pool's deadline can.
    process.kill(pid!, 'SIGSTOP');
    try {
      const started = performance.now();
      const res = await fetch(`${k.url}/work`);
      const tookMs = performance.now() - started;
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ details: 'Service exceeded its time limit' });
      // The limit (300 ms) plus the pool's margin (500) plus at most one fast sweep (50), and slack
      // for a loaded machine: a quiet sweep could have let it wait up to a second more.
      expect(tookMs).toBeGreaterThanOrEqual(800);
      expect(tookMs).toBeLessThan(800 + 50 + 400);
    } finally {
      process.kill(pid!, 'SIGCONT');
    }
  });
});
