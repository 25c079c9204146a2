import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openTestStore } from '../../../helpers/store.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { errorsOf, rows, thrown, until } from './support.ts';

/** Pending, running and dead events survive a stop; interrupted attempts run again. */

const BUSY = `import { service } from 'svc/sdk';
export default service({ limits: { timeoutMs: 20000 }, handle: (ctx) => { const end = Date.now() + 10000; while (Date.now() < end) {} return {}; } });
`;
/** After the restart: fails with what it saw, so the attempts can be checked. */
const REPORT = `import { service } from 'svc/sdk';
export default service({ handle: (ctx) => { if (ctx.input.ok) return {}; throw new Error(JSON.stringify(ctx.delivery)); } });
`;

const CONFIG = `
plugins:
  use-queue: { config: { stop_wait_ms: 0 } }
channel_rest:
  - { name: work, url_path: /work, service: work, security: none, use_queue: true, delivery: { concurrency: 1, max_attempts: 3, base_delay_ms: 10 } }
  - { name: dead, url_path: /dead, service: work, security: none, use_queue: true, delivery: { max_attempts: 1 } }
`;

let dir: string;
let k: TestKernel | undefined;
afterEach(async () => {
  await k?.close();
  k = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe('restart with the same data directory', () => {
  it('resumes pending events, runs interrupted ones again with the interruption recorded, and keeps dead ones', async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-queue-restart-'));
    k = await startKernel({ dir, config: CONFIG, services: { 'work.ts': BUSY } });
    const cids: string[] = [];
    for (const ok of [false, true, true]) cids.push((await k.app.inject({ method: 'POST', url: '/work', payload: { ok } })).json().cid);
    await until(k, (r) => r[0]?.state === 'running');
    await k.close();
    k = undefined;

    // Restarted with a service that reports its attempts; a new event on 'dead' goes to the dead-letter queue.
    k = await startKernel({ dir, config: CONFIG, services: { 'work.ts': REPORT } });
    const deadCid = (await k.app.inject({ method: 'POST', url: '/dead', payload: { ok: false } })).json().cid;
    const settled = await until(k, (r) => r.length === 2 && r.every((x) => x.state === 'dead'));
    const interrupted = settled.find((r) => r.cid === cids[0])!;
    expect(interrupted.attempts).toBe(3);
    const errors = errorsOf(interrupted);
    expect(errors[0]).toMatchObject({ attempt: 1, kind: 'Interrupted', message: 'the server stopped during this attempt' });
    expect(errors[0]!.cid).toMatch(/^[0-9a-f]+$/);
    expect(errors.slice(1).map((e) => thrown<{ attempt: number; cid: string }>(e))).toEqual([
      expect.objectContaining({ attempt: 2, cid: cids[0] }),
      expect.objectContaining({ attempt: 3, cid: cids[0] }),
    ]);
    // The two pending events ran after the restart and are gone.
    expect(settled.map((r) => r.cid).sort()).toEqual([cids[0], deadCid].sort());
    await k.close();

    k = await startKernel({ dir, config: CONFIG, services: { 'work.ts': REPORT } });
    expect((await rows(k)).map((r) => [r.cid, r.state])).toEqual([
      [cids[0], 'dead'],
      [deadCid, 'dead'],
    ]);
    // New ids continue after the kept ones: arrival order holds across restarts.
    await k.app.inject({ method: 'POST', url: '/dead', payload: { ok: false } });
    const after = await until(k, (r) => r.length === 3 && r[2]!.state === 'dead');
    expect(after[2]!.id).toBeGreaterThan(after[1]!.id);
  });

  it('a stop lets a running attempt finish within stop_wait_ms, and starts no new one', async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-queue-restart-'));
    const SHORT = `import { service } from 'svc/sdk';
export default service({ handle: () => { const end = Date.now() + 700; while (Date.now() < end) {} return {}; } });
`;
    const config = CONFIG.replace('stop_wait_ms: 0', 'stop_wait_ms: 5000');
    k = await startKernel({ dir, config, services: { 'work.ts': SHORT } });
    const first = (await k.app.inject({ method: 'POST', url: '/work', payload: {} })).json().cid;
    const second = (await k.app.inject({ method: 'POST', url: '/work', payload: {} })).json().cid;
    await until(k, (r) => r[0]?.state === 'running');
    await k.close();
    k = undefined;
    // Read the table without starting the plugin (which would resume the second event at once).
    const store = await openTestStore(join(dir, 'data', 'svc.db'));
    const left = await store.all<{ cid: string; state: string; attempts: number }>('SELECT cid, state, attempts FROM use_queue_event');
    await store.close();
    expect(left).toEqual([{ cid: second, state: 'pending', attempts: 0 }]);
    expect(left.map((r) => r.cid)).not.toContain(first);
  });
});
