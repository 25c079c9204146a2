import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, TENANTS_RUN_HERE, type TestKernel } from '../../helpers/kernel.ts';

/**
 * The quotas plugins take (docs/tenants.md, "Quotas"), through real channels, isolates and the
 * Use queue's SQLite table: `outgoing_calls_per_minute` on an outgoing REST connection, and
 * `queued_events` on a queued channel and on invokeAsync. The platform's services, and another
 * tenant, are not limited by them.
 */

/** Calls the outgoing connection `n` times; answers each call's status, or the error that stopped it. */
const CALLER = `import { service, outgoing } from 'svc/sdk';
export default service({ async handle(ctx) {
  const out = [];
  for (let i = 0; i < Number(ctx.input.n ?? 1); i++) {
    try { out.push((await outgoing('target').get(ctx.cid)).status); }
    catch (e) { out.push(e.name + ' ' + e.status + ' ' + e.message + ' (retry after ' + e.retryAfterSeconds + ' s)'); }
  }
  return { out };
} });`;

/** Fails every attempt: its events wait for a retry an hour away, so they stay queued. */
const FAILING = `import { service } from 'svc/sdk';
export default service({ handle() { throw new Error('not now'); } });`;

/** Queues background work for `failing`; answers the error a refusal raised. */
const QUEUER = `import { service, invokeAsync } from 'svc/sdk';
export default service({ async handle() {
  try { return { cid: await invokeAsync('failing', {}) }; }
  catch (e) { return { refused: e.name + ' ' + e.status + ' ' + e.message, retryAfterSeconds: e.retryAfterSeconds, code: e.code }; }
} });`;

/** Lets a refused outgoing call fail the request. */
const UNCAUGHT = `import { service, outgoing } from 'svc/sdk';
export default service({ async handle(ctx) { return (await outgoing('target').get(ctx.cid)).status; } });`;

const SLOW_RETRY = '{ max_attempts: 5, base_delay_ms: 3600000, max_delay_ms: 3600000, jitter: false }';

/** server.refusal_pause_ms here: how long each refused host call waits for its answer. */
const PAUSE_MS = 300;

describe.runIf(TENANTS_RUN_HERE)('metered and counted tenant quotas', () => {
  let root: string;
  let k: TestKernel;
  let target: Server;
  let hits = 0;

  beforeAll(async () => {
    target = createServer((_req, res) => {
      hits++;
      res.end('{}');
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    const address = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
    root = mkdtempSync(join(tmpdir(), 'svc-tenant-metered-'));
    for (const t of ['acme', 'other']) {
      mkdirSync(join(root, t), { recursive: true });
      writeFileSync(join(root, t, 'caller.ts'), CALLER);
      writeFileSync(join(root, t, 'failing.ts'), FAILING);
      writeFileSync(join(root, t, 'queuer.ts'), QUEUER);
      writeFileSync(join(root, t, 'uncaught.ts'), UNCAUGHT);
    }
    const tenantConfig = `{
      outgoing_rest: [{ name: target, address: '${address}' }],
      channel_rest: [
        { name: call, url_path: /call, service: caller, security: none },
        { name: queued, url_path: /queued, service: failing, security: none, use_queue: true, delivery: ${SLOW_RETRY} },
        { name: queuer, url_path: /queuer, service: queuer, security: none },
        { name: uncaught, url_path: /uncaught, service: uncaught, security: none }
      ] }`;
    k = await startKernel({
      services: { 'failing.ts': FAILING },
      config: `
server: { refusal_pause_ms: ${PAUSE_MS} }
plugins:
  use-queue:
    config: { background: ${SLOW_RETRY} }
channel_rest:
  - { name: platform-queued, url_path: /platform-queued, service: failing, security: none, use_queue: true, delivery: ${SLOW_RETRY} }
tenants:
  - { name: acme, services_dir: ${join(root, 'acme')}, quotas: { outgoing_calls_per_minute: 3, queued_events: 2 }, config: ${tenantConfig} }
  - { name: other, services_dir: ${join(root, 'other')}, config: ${tenantConfig} }
`,
    });
  }, 60_000);
  afterAll(async () => {
    await k?.close();
    target?.close();
    rmSync(root, { recursive: true, force: true });
  });

  const throttled = (tenant: string) => k.kernel.api.sandboxStats().tenants.find((t) => t.tenant === tenant)!.throttled;

  it('refuses outgoing calls past outgoing_calls_per_minute inside the service (TooManyRequests, 429), sending nothing; the other tenant calls on', async () => {
    const before = hits;
    const started = performance.now();
    const res = await k.app.inject({ method: 'GET', url: '/t/acme/call?n=5' });
    expect(res.statusCode, res.body).toBe(200);
    // Each refused call was answered after the refusal pause (3/4 of it at least): a service that
    // retries in a loop costs the kernel one refusal per pause, not thousands a second.
    expect(performance.now() - started).toBeGreaterThanOrEqual(2 * 0.75 * PAUSE_MS);
    const out = (res.json() as { out: Array<number | string> }).out;
    expect(out.slice(0, 3)).toEqual([200, 200, 200]);
    // The refusal says when another call may pass (the quota's Retry-After, seconds until the minute's oldest call leaves it).
    expect(out[3]).toMatch(/^TooManyRequests 429 Quota outgoing_calls_per_minute reached: the tenant's services made 3 outgoing calls in the last minute, of 3 \(retry after ([1-9]|[1-5]\d|60) s\)$/);
    expect(out[4]).toMatch(/^TooManyRequests 429/);
    expect(hits - before).toBe(3);
    expect(throttled('acme').outgoing_calls_per_minute).toBe(2);
    const other = await k.app.inject({ method: 'GET', url: '/t/other/call?n=5' });
    expect((other.json() as { out: unknown[] }).out).toEqual([200, 200, 200, 200, 200]);
  });

  it('an uncaught refusal answers the channel 429 with the CID, the quota named and its Retry-After', async () => {
    const res = await k.app.inject({ method: 'GET', url: '/t/acme/uncaught' });
    expect(res.statusCode, res.body).toBe(429);
    expect(res.json()).toMatchObject({ result: 'Error', cid: res.headers['x-svc-cid'], details: expect.stringMatching(/^Quota outgoing_calls_per_minute reached/) });
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
  });

  it('refuses events past queued_events on a queued channel (429 TENANT_QUOTA with the CID) and on invokeAsync (TooManyRequests), not the platform’s', async () => {
    for (let i = 0; i < 2; i++) {
      const ok = await k.app.inject({ method: 'POST', url: '/t/acme/queued', payload: { i } });
      expect(ok.statusCode, ok.body).toBe(200);
    }
    const refused = await k.app.inject({ method: 'POST', url: '/t/acme/queued', payload: { i: 3 } });
    expect(refused.statusCode, refused.body).toBe(429);
    expect(refused.json()).toMatchObject({ result: 'Error', cid: refused.headers['x-svc-cid'], details: "Quota queued_events reached: 2 events of the tenant's services are waiting in the Use queue, of 2" });
    expect(refused.headers['retry-after']).toBe('1');
    const queuer = await k.app.inject({ method: 'GET', url: '/t/acme/queuer' });
    expect(queuer.json()).toEqual({ refused: expect.stringMatching(/^TooManyRequests 429 Quota queued_events reached/), retryAfterSeconds: 1, code: 'TENANT_QUOTA' });
    expect(throttled('acme').queued_events).toBe(2);
    // The other tenant and the platform queue as they like.
    for (let i = 0; i < 3; i++) {
      expect((await k.app.inject({ method: 'POST', url: '/t/other/queued', payload: { i } })).statusCode).toBe(200);
      expect((await k.app.inject({ method: 'POST', url: '/platform-queued', payload: { i } })).statusCode).toBe(200);
    }
    expect((await k.app.inject({ method: 'GET', url: '/t/other/queuer' })).json()).toEqual({ cid: expect.any(String) });
  });

  it('counts what the store holds: deleting the waiting events makes room again', async () => {
    const del = await k.kernel.runControl('queue.delete', { all: true, state: 'pending', channel: 'acme/queued' });
    expect(del, JSON.stringify(del)).toBeDefined();
    // The count is read again a second after the last read.
    await new Promise((r) => setTimeout(r, 1_100));
    const ok = await k.app.inject({ method: 'POST', url: '/t/acme/queued', payload: { again: true } });
    expect(ok.statusCode, ok.body).toBe(200);
  });
});
