import { afterEach, describe, expect, it } from 'vitest';
import { residentMb } from '../../../kernel/sandbox/resident.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/**
 * A sandbox process that grew and then went idle is replaced by a fresh one (server.sandbox.
 * recycle_idle_ms and recycle_above_mb): its memory goes back to the system, and no call is lost
 * on the way. Module state shows which process answered: a fresh one runs the top-level code again.
 */
const grower = `import { service } from 'svc/sdk';
const token = Math.random();
// Kept in module state: the isolate holds it, so the process stays this much bigger.
const kept = [];
export default service({
  handle: (ctx) => {
    if (ctx.query.grow) for (let i = 0; i < 600_000; i++) kept.push({ i, s: 'x' + i });
    return { token, kept: kept.length };
  },
});`;

const slow = `import { service } from 'svc/sdk';
// Services have no timers: a busy wait. Calls to one isolate run one after another, so 6 of them keep the old process busy ≈ 900 ms.
export default service({ handle: () => { const until = Date.now() + 150; while (Date.now() < until) {} return 'slow'; } });`;

const config = (idleMs: number, aboveMb: number) => `
server: { sandbox: { workers: 1, recycle_idle_ms: ${idleMs}, recycle_above_mb: ${aboveMb} } }
channel_rest:
  - { name: grower, url_path: /grower, service: grower, security: none }
  - { name: slow, url_path: /slow, service: slow, security: none }
`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function call(k: TestKernel, query = ''): Promise<{ token: number; kept: number }> {
  const res = await fetch(`${k.url}/grower${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as { token: number; kept: number };
}

async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await sleep(25);
  }
}

const alive = (pid: number) => residentMb(pid) !== undefined;

describe('recycling an idle sandbox process', () => {
  let k: TestKernel | undefined;
  afterEach(async () => {
    await k?.close();
    k = undefined;
  });

  it('replaces a process that grew under calls and then went idle; the fresh one is smaller and answers', async () => {
    k = await startKernel({ config: config(400, 1), services: { 'grower.js': grower, 'slow.js': slow }, listen: true });
    const [first] = k.kernel.pool.pids();
    const before = await call(k, '?grow=1');
    expect(before.kept).toBe(600_000);
    const grown = residentMb(first)!;
    await until('the old process is gone', () => !alive(first!));
    const [second] = k.kernel.pool.pids();
    expect(second).not.toBe(first);
    // A fresh process ran the service's top-level code again: new module state, none of the old array.
    const after = await call(k);
    expect(after.token).not.toBe(before.token);
    expect(after.kept).toBe(0);
    expect(residentMb(second)!).toBeLessThan(grown - 16);
  }, 60_000);

  it('does not replace a process that did not grow, however long it is idle', async () => {
    k = await startKernel({ config: config(200, 1), services: { 'grower.js': grower, 'slow.js': slow }, listen: true });
    const [first] = k.kernel.pool.pids();
    const before = await call(k);
    await sleep(1500);
    expect(k.kernel.pool.pids()).toEqual([first]);
    expect((await call(k)).token).toBe(before.token);
  }, 60_000);

  it('does not replace a process above the limit that keeps getting calls', async () => {
    k = await startKernel({ config: config(600, 1), services: { 'grower.js': grower, 'slow.js': slow }, listen: true });
    const [first] = k.kernel.pool.pids();
    const { token } = await call(k, '?grow=1');
    for (let i = 0; i < 12; i++) {
      await sleep(150);
      expect((await call(k)).token).toBe(token);
    }
    expect(k.kernel.pool.pids()).toEqual([first]);
  }, 60_000);

  it('loses no call while the fresh process takes over: calls in flight on the old one finish there', async () => {
    k = await startKernel({ config: config(300, 1), services: { 'grower.js': grower, 'slow.js': slow }, listen: true });
    const [first] = k.kernel.pool.pids();
    await call(k, '?grow=1');
    // The successor is starting once a second process shows up.
    await until('a successor starts', () => k!.kernel.pool.pids().length === 2);
    // Until it is ready, calls still go to the old process; slow ones are still running there when it takes over.
    const answers = await Promise.all(Array.from({ length: 6 }, () => fetch(`${k!.url}/slow`).then(async (r) => [r.status, await r.json()])));
    expect(answers).toEqual(Array.from({ length: 6 }, () => [200, 'slow']));
    await until('the old process is gone', () => !alive(first!));
    expect(k.kernel.pool.pids()).toHaveLength(1);
    expect(await (await fetch(`${k.url}/slow`)).json()).toBe('slow');
  }, 60_000);

  it('keeps the old process when its successor dies before it is ready, and does not try again', async () => {
    k = await startKernel({ config: config(300, 1), services: { 'grower.js': grower, 'slow.js': slow }, listen: true });
    const [first] = k.kernel.pool.pids();
    const { token } = await call(k, '?grow=1');
    await until('a successor starts', () => k!.kernel.pool.pids().length === 2);
    const successor = k.kernel.pool.pids().find((p) => p !== first)!;
    process.kill(successor, 'SIGKILL');
    await until('the successor is gone', () => k!.kernel.pool.pids().length === 1);
    await sleep(1200);
    expect(k.kernel.pool.pids()).toEqual([first]);
    expect((await call(k)).token).toBe(token);
  }, 60_000);

  it('is off with recycle_idle_ms 0', async () => {
    k = await startKernel({ config: config(0, 1), services: { 'grower.js': grower, 'slow.js': slow }, listen: true });
    const [first] = k.kernel.pool.pids();
    const { token } = await call(k, '?grow=1');
    await sleep(1500);
    expect(k.kernel.pool.pids()).toEqual([first]);
    expect((await call(k)).token).toBe(token);
  }, 60_000);
});
