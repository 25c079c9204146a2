import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../../kernel/platform/clock.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';
import { waitFor } from '../../helpers/wait.ts';

/**
 * What "a sandbox process stopped answering" means (issue 39): it owes an answer and has said
 * nothing since it began to owe it, for the longest time limit plus a margin. Not: it has said
 * nothing for that long, which every idle process does. The pool's clock for durations is
 * injected, so minutes pass in a test without sleeping; a wall clock that jumps is not that clock.
 */

const MAX_TIMEOUT_MS = 1_000;
const config = `
server: { sandbox: { workers: 1, timeout_ms: 500, max_timeout_ms: ${MAX_TIMEOUT_MS} } }
channel_rest:
  - { name: work, url_path: /work, service: work, security: none }
`;
// Busy for 150 ms: the pool's sweep (every 50 ms) always finds the call in flight.
const work = `import { service } from 'svc/sdk';
export default service({ handle() { const until = Date.now() + 150; while (Date.now() < until) {} return { worked: true }; } });`;

async function get(k: TestKernel): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${k.url}/work`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const sweeps = () => new Promise((r) => setTimeout(r, 200));
const wedgeLogs = (logs: Array<Record<string, unknown>>) => logs.filter((l) => /said nothing|stopped answering/.test(String(l.msg)));

describe('with the pool clock moved by hand', () => {
  const clock = new ManualClock(0);
  const logs: Array<Record<string, unknown>> = [];
  let k: TestKernel;
  beforeAll(async () => {
    k = await startKernel({ config, services: { 'work.js': work }, listen: true, monotonic: clock, logs });
  }, 60_000);
  afterAll(() => k?.close());

  it('an hour of quiet does not make the next call look wedged', async () => {
    const [pid] = k.kernel.pool.pids();
    expect(await get(k)).toMatchObject({ status: 200, body: { worked: true } });
    clock.advance(3_600_000);
    await sweeps();
    expect(await get(k)).toMatchObject({ status: 200, body: { worked: true } });
    expect(k.kernel.pool.pids()).toEqual([pid]);
    expect(wedgeLogs(logs)).toEqual([]);
    expect(k.kernel.pool.stats().processRestarts).toBe(0);
  });

  it('a process that answers nothing is stopped, even when its calls come minutes apart, and the next call is served by its replacement', async () => {
    const [pid] = k.kernel.pool.pids();
    process.kill(pid!, 'SIGSTOP');
    try {
      const stalled = get(k);
      await waitFor('the call to be in flight', () => k.kernel.pool.inFlight().length === 1);
      // Past the call's limit and the pool's margin: the pool answers it, the process never did.
      clock.advance(500 + 500 + 1);
      expect(await stalled).toMatchObject({ status: 503, body: { details: 'Service exceeded its time limit' } });
      await sweeps();
      // Not wedged yet: the longest limit plus the margin has not passed since it began to owe.
      expect(k.kernel.pool.pids()).toEqual([pid]);
      // A minute later, with no call in flight, it still owes that answer.
      clock.advance(60_000);
      await waitFor('the silent process to be replaced', () => {
        const pids = k.kernel.pool.pids();
        return pids.length === 1 && pids[0] !== pid;
      });
    } finally {
      // Already SIGKILLed by the pool; SIGCONT is harmless if not.
      try {
        process.kill(pid!, 'SIGCONT');
      } catch {
        // gone
      }
    }
    expect(wedgeLogs(logs)).toHaveLength(1);
    await waitFor('the replacement to serve', async () => (await get(k)).status === 200);
    expect(await get(k)).toMatchObject({ status: 200, body: { worked: true } });
  });
});

describe('a wall clock that jumps', () => {
  let k: TestKernel;
  beforeAll(async () => {
    k = await startKernel({ config, services: { 'work.js': work }, listen: true });
  }, 60_000);
  afterAll(() => k?.close());
  afterEach(() => void vi.useRealTimers());

  it('an hour forward in the middle of a call does not time it out; the call is answered', async () => {
    expect((await get(k)).status).toBe(200);
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    const answer = get(k);
    await waitFor('the call to be in flight', () => k.kernel.pool.inFlight().length === 1);
    vi.setSystemTime(Date.now() + 3_600_000);
    expect(await answer).toMatchObject({ status: 200, body: { worked: true } });
  });

  it('an hour back in the middle of a call does not stretch its deadline: a process that stalls is still answered for at its limit', async () => {
    const [pid] = k.kernel.pool.pids();
    process.kill(pid!, 'SIGSTOP');
    try {
      vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
      const answer = get(k);
      await waitFor('the call to be in flight', () => k.kernel.pool.inFlight().length === 1);
      vi.setSystemTime(Date.now() - 3_600_000);
      // The pool answers at the call's limit plus its margin (500 + 500 ms); read by the wall clock it would be an hour away.
      const settled = await Promise.race([answer, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 20_000))]);
      expect(settled).toMatchObject({ status: 503, body: { details: 'Service exceeded its time limit' } });
    } finally {
      process.kill(pid!, 'SIGKILL');
    }
  });
});
