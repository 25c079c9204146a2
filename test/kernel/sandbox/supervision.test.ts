import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';
import { waitFor } from '../../helpers/wait.ts';
import { CALL_MARGIN_MS } from '../../../kernel/sandbox/pool.ts';

/**
 * Crash loops and slow rebuilds, with one sandbox process shared by every service: a service
 * that kills its process at deploy must be quarantined, and nobody else may wait for it.
 */
const CRASH = `'1'.repeat(0xfffffff).split('')`;
/** The time limit of ok, bomb and fixed. */
const LIMIT_MS = 500;
const bombAfter = (at: number) => `import { service } from 'svc/sdk';
// Deploys fine until ${at}; after that its top-level code kills the process at every (re)deploy.
if (Date.now() > ${at}) ${CRASH};
export default service({ limits: { timeoutMs: ${LIMIT_MS} }, handle(ctx) { if (ctx.query.crash) ${CRASH}; return 'fine'; } });`;
const fixed = `import { service } from 'svc/sdk';
export default service({ limits: { timeoutMs: ${LIMIT_MS} }, handle() { return 'fixed'; } });`;
const slowTop = `import { service } from 'svc/sdk';
// Slow top-level code: rebuilding this isolate takes ~800 ms.
const until = Date.now() + 800; while (Date.now() < until) {}
export default service({ limits: { timeoutMs: 1000, memoryMb: 16 }, handle(ctx) {
  if (ctx.query.bomb) { const a = []; for (;;) a.push(new Array(100000).fill(1)); }
  return 'slow-top';
} });`;

const services: Record<string, string> = {
  'ok.js': `import { service } from 'svc/sdk';\nexport default service({ limits: { timeoutMs: ${LIMIT_MS} }, handle() { return { ok: true }; } });`,
  'bomb.js': bombAfter(Date.now() + 3_600_000),
  'slowtop.js': slowTop,
};

const config = `
channel_rest:
  - { name: ok, url_path: /ok, service: ok, security: none }
  - { name: bomb, url_path: /bomb, service: bomb, security: none }
  - { name: slowtop, url_path: /slowtop, service: slowtop, security: none }
`;

const logs: Array<Record<string, unknown>> = [];
let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config, services, listen: true, logs });
}, 60_000);
afterAll(() => k?.close());

async function timed(path: string): Promise<{ status: number; ms: number; body: Record<string, unknown> | string; cid: string | null }> {
  const started = Date.now();
  const res = await fetch(k.url + path);
  const text = await res.text();
  let body: Record<string, unknown> | string = text;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // plain text answer
  }
  return { status: res.status, ms: Date.now() - started, body, cid: res.headers.get('x-svc-cid') };
}

const rebuildsOf = (service: string) => k.kernel.pool.stats().isolateRebuilds.find((r) => r.service === service)?.count ?? 0;

describe('slow top-level code', () => {
  it('rebuilding an isolate with slow top-level code does not stall its neighbours', async () => {
    // The memory limit disposes slowtop's isolate; its next call rebuilds it, top-level code and all.
    expect((await timed('/slowtop?bomb=1')).status).toBe(500);
    const rebuildsBefore = rebuildsOf('slowtop');
    const rebuilding = timed('/slowtop');
    // Once the pool has sent the call, the sandbox process starts the rebuild as it reads it, and
    // the neighbours' calls reach it after that one, on the same pipe.
    await waitFor('the slowtop call to reach the pool', () => k.kernel.pool.inFlight().some((c) => c.service === 'slowtop'), 10_000);
    for (let i = 1; i <= 5; i++) {
      const n = await timed('/ok');
      expect(n.status).toBe(200);
      // Answered before the sandbox process reported the rebuild done (by order, not by ms): the
      // neighbour did not wait for it.
      expect(rebuildsOf('slowtop'), `neighbour ${i} was answered only after the rebuild`).toBe(rebuildsBefore);
    }
    const slow = await rebuilding;
    expect(slow.status).toBe(200);
    expect(slow.body).toBe('slow-top');
    // And there was a rebuild for them not to wait for.
    expect(rebuildsOf('slowtop')).toBe(rebuildsBefore + 1);
  });
});

describe('a service that crashes its sandbox at every deploy', () => {
  it('is quarantined; every other call is answered within its limit plus the margin; a fixed file brings it back', async () => {
    const bombAt = Date.now() + 1000;
    await k.writeService('bomb.js', bombAfter(bombAt));
    expect((await timed('/bomb')).body).toBe('fine');
    await new Promise((r) => setTimeout(r, Math.max(0, bombAt - Date.now() + 100)));
    // The first crash is at call time; every restart then dies redeploying bomb.
    const first = await timed('/bomb?crash=1');
    expect(first.status).toBe(503);
    const neighbours: Array<Awaited<ReturnType<typeof timed>>> = [];
    // Until bomb is quarantined and the restarted process serves again (restarts take longer on a loaded machine).
    const giveUp = Date.now() + 20_000;
    while (Date.now() < giveUp) {
      const n = await timed('/ok');
      neighbours.push(n);
      if (n.status === 200 && k.kernel.pool.quarantineOf('bomb')) break;
    }
    for (const n of neighbours) {
      // The deadline is the claim: the call's limit plus the pool's margin, twice over for a
      // loaded machine's timers. Past it the pool answers itself, so a neighbour never hangs.
      expect(n.ms).toBeLessThan((LIMIT_MS + CALL_MARGIN_MS) * 2);
      expect(n.cid).toBeTruthy();
      if (n.status !== 200) {
        expect(n.status).toBe(503);
        expect((n.body as Record<string, unknown>).cid).toBe(n.cid);
        expect((n.body as Record<string, unknown>).details).toMatch(/sandbox crashed|No sandbox process was ready|time limit/);
      }
    }
    expect(neighbours.at(-1)!.status).toBe(200);
    const q = await timed('/bomb');
    // Refused by the pool before any sandbox process is asked: that answer is the only one with
    // these details, and it comes sooner than the deadline (limit plus margin) any call sent to
    // a sandbox process could end at.
    expect(q.status).toBe(503);
    expect(q.body).toEqual({ result: 'Error', cid: q.cid, details: 'Service is quarantined after crashing its sandbox repeatedly' });
    expect(q.ms).toBeLessThan(LIMIT_MS + CALL_MARGIN_MS);
    expect(logs.some((l) => l.service === 'bomb' && /quarantined: it crashed its sandbox process 3 times/.test(String(l.msg)))).toBe(true);
    // Refused as a 429 is: the connection's next request is read after the pause (1 s, less up to a
    // quarter), and no warning is written per refused call.
    const warningsBefore = logs.filter((l) => l.code === 'SERVICE_QUARANTINED').length;
    const client = new Client(k.url!, { pipelining: 1 });
    try {
      const refused = await client.request({ method: 'GET', path: '/bomb' });
      await refused.body.dump();
      expect(refused.statusCode).toBe(503);
      const t0 = performance.now();
      const next = await client.request({ method: 'GET', path: '/ok' });
      await next.body.dump();
      expect(next.statusCode).toBe(200);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(700);
    } finally {
      await client.close();
    }
    expect(logs.filter((l) => l.code === 'SERVICE_QUARANTINED').length).toBe(warningsBefore);

    await k.writeService('bomb.js', fixed);
    const back = await timed('/bomb');
    expect(back.status).toBe(200);
    expect(back.body).toBe('fixed');
    expect((await timed('/ok')).status).toBe(200);
  }, 30_000);
});
