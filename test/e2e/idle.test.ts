import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { makeProject, startCli, type CliServer } from '../helpers/cli.ts';
import { mainThreadWakeups } from '../helpers/proc.ts';
import { sandboxPids } from '../../bench/lib.ts';

/**
 * A server left alone, then used again (issue 39): the first call after a quiet spell longer than
 * the sandbox's longest time limit (plus the pool's 5 s wedge margin) was answered 503 "sandbox
 * crashed", because a process with nothing to do looked wedged the moment a call reached it.
 * Against `svc start` over a real socket, with the limits shortened so the gap is seconds.
 */

const MAX_TIMEOUT_MS = 500;
/** Longer than max_timeout_ms plus the pool's 5 s wedge margin: long enough to have looked wedged before the fix. */
const QUIET_MS = MAX_TIMEOUT_MS + 5_000 + 1_500;

const config = `
server:
  data_dir: ./data
  services_dir: ./services
  sandbox: { workers: 1, timeout_ms: 400, max_timeout_ms: ${MAX_TIMEOUT_MS}, idle_ms: 1000 }
channel_rest:
  - { name: work, url_path: /work, service: work, security: none }
  - { name: echo, url_path: /echo, service: echo, method: POST, data_format: json, security: none }
`;
// Busy for 150 ms, so the pool's sweep (every 50 ms) always finds the call in flight.
const services: Record<string, string> = {
  'work.ts': `import { service } from 'svc/sdk';\nexport default service({ handle() { const until = Date.now() + 150; while (Date.now() < until) {} return { worked: true }; } });\n`,
  'echo.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ got: ctx.input }) });\n`,
};

let server: CliServer;
beforeAll(async () => {
  server = await startCli(makeProject(config, services));
}, 60_000);
afterAll(async () => {
  if (server?.proc.exitCode === null) await server.stop('SIGKILL');
});

async function call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; body: unknown; cid: string | undefined }> {
  const res = await request(`${server.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.statusCode, body: await res.body.json(), cid: res.headers['x-svc-cid'] as string | undefined };
}

const quiet = () => new Promise((r) => setTimeout(r, QUIET_MS));

describe('a server left idle', () => {
  it('answers the first calls after quiet spells longer than the longest time limit, and blames no service', async () => {
    expect(await call('GET', '/work')).toMatchObject({ status: 200, body: { worked: true } });
    for (let round = 1; round <= 2; round++) {
      await quiet();
      const first = await call('GET', '/work');
      expect(first, `round ${round}: ${JSON.stringify(first.body)}`).toMatchObject({ status: 200, body: { worked: true } });
      expect(await call('POST', '/echo', { round })).toMatchObject({ status: 200, body: { got: { round } } });
    }
    const out = server.output();
    expect(out).not.toMatch(/said nothing|stopped answering|crashed its sandbox|sandbox process died/);
  }, 60_000);

  /**
   * An idle server's sandbox processes sleep: each one's watchdog ran every 20 ms whether or not a
   * call was in flight, waking it 50 times a second (0.55 % of a core each on this project's VM,
   * so a platform with many tenants' processes paid for all of them while nothing happened). Now
   * its timers run only while it has calls, cooling isolates or isolates to drop.
   * The kernel's own sweeps are tested in test/kernel/sandbox/sweep.test.ts; its main thread
   * still wakes 100 times a second for prom-client's event-loop delay monitor (docs/decisions.md).
   */
  it('leaves its sandbox process asleep once the last call is over', async () => {
    expect(await call('GET', '/work')).toMatchObject({ status: 200 });
    // The call's deadline (400 ms), the isolate's cooling, idle_ms (1 s) and one idle sweep: all over by then.
    await new Promise((r) => setTimeout(r, 3_000));
    const sandboxes = sandboxPids(server.proc.pid!);
    expect(sandboxes).toHaveLength(1);
    const before = mainThreadWakeups(sandboxes[0]!);
    await new Promise((r) => setTimeout(r, 4_000));
    const wakeups = mainThreadWakeups(sandboxes[0]!) - before;
    // None at all, but a few for what the OS or V8 may do now and then; it was 200.
    expect(wakeups, 'sandbox process main thread').toBeLessThan(10);
    // And it still answers at once.
    expect(await call('POST', '/echo', { after: 'sleep' })).toMatchObject({ status: 200, body: { got: { after: 'sleep' } } });
  }, 30_000);
});
