import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { control, errorsOf, rows, thrown, until } from './support.ts';

/** invokeAsync: background work from a synchronous channel through the same durable queue. */

const FRONT = `import { service, invokeAsync } from 'svc/sdk';
export default service({ handle: async (ctx) => ({ queued: await invokeAsync(ctx.input.target ?? 'worker', { order: ctx.input.order }) }) });
`;
/** Reports what it saw by failing; with ok it logs what it saw and succeeds. */
const WORKER = `import { service } from 'svc/sdk';
export default service({ handle: (ctx) => {
  if (ctx.input.order === 'ok') { ctx.log.info(JSON.stringify({ input: ctx.input, delivery: ctx.delivery })); return {}; }
  throw new Error(JSON.stringify({ input: ctx.input, channel: ctx.channel ?? null, method: ctx.method, delivery: ctx.delivery, cid: ctx.cid }));
} });
`;
const SLOW = `import { service } from 'svc/sdk';
export default service({ limits: { timeoutMs: 8000 }, handle: () => { const end = Date.now() + 1000; while (Date.now() < end) {} return {}; } });
`;

const config = (background: string) => `
plugins:
  use-queue: { config: { stop_wait_ms: 0, background: ${background} } }
channel_rest:
  - { name: front, url_path: /front, service: front, security: none }
`;

let k: TestKernel;
afterEach(async () => k?.close());

describe('invokeAsync', () => {
  it('queues another service and returns the CID it runs under; the work runs with ctx.delivery and no channel', async () => {
    k = await startKernel({ config: config('{ max_attempts: 2, base_delay_ms: 5 }'), services: { 'front.ts': FRONT, 'worker.ts': WORKER } });
    const res = await k.app.inject({ method: 'POST', url: '/front', payload: { order: 42 } });
    expect(res.statusCode).toBe(200);
    const queued = res.json().queued as string;
    expect(queued).toMatch(/^[0-9a-f]+$/);
    expect(queued).not.toBe(res.headers['x-svc-cid']);
    const [dead] = await until(k, (r) => r[0]?.state === 'dead');
    expect(dead).toMatchObject({ channel: null, service: 'worker', cid: queued, attempts: 2 });
    const seen = errorsOf(dead!).map((e) => thrown<Record<string, unknown>>(e));
    expect(seen[0]).toMatchObject({ input: { order: 42 }, channel: null, method: 'POST', delivery: { attempt: 1, cid: queued } });
    expect(seen[1]).toMatchObject({ delivery: { attempt: 2, cid: queued } });
    // Operators find background work with channel null.
    expect(((await control(k, 'queue.list', { channel: null })) as unknown[]).length).toBe(1);
    expect(((await control(k, 'queue.list', { channel: 'front' })) as unknown[]).length).toBe(0);
  });

  it('runs the work and deletes it once done', async () => {
    const logs: Array<Record<string, unknown>> = [];
    k = await startKernel({ config: config('{}'), services: { 'front.ts': FRONT, 'worker.ts': WORKER }, logs });
    const res = await k.app.inject({ method: 'POST', url: '/front', payload: { order: 'ok' } });
    expect(res.statusCode).toBe(200);
    const queued = res.json().queued as string;
    expect(queued).toMatch(/^[0-9a-f]+$/);
    // An empty queue alone would hold had nothing been queued: the work must be seen to run, with
    // its input, and to succeed; the row is deleted before 'event processed' is logged.
    const processed = await waitFor('the background work to be processed', () => logs.find((l) => l.msg === 'queue: event processed' && l.original === queued), 10_000);
    expect(processed).toMatchObject({ channel: null, service: 'worker', attempt: 1 });
    const seen = logs.filter((l) => l.service === 'worker' && l.cid === processed.cid && String(l.msg).startsWith('{'));
    expect(seen.map((l) => JSON.parse(String(l.msg)))).toEqual([{ input: { order: 'ok' }, delivery: expect.objectContaining({ attempt: 1, cid: queued }) }]);
    expect(await rows(k)).toEqual([]);
  });

  it('a full background queue is ServiceUnavailable (503) to the caller, with nothing queued', async () => {
    k = await startKernel({ config: config('{ max_depth: 1, concurrency: 1 }'), services: { 'front.ts': FRONT, 'slow.ts': SLOW } });
    expect((await k.app.inject({ method: 'POST', url: '/front', payload: { target: 'slow' } })).statusCode).toBe(200);
    const refused = await k.app.inject({ method: 'POST', url: '/front', payload: { target: 'slow' } });
    expect(refused.statusCode).toBe(503);
    expect(refused.json()).toEqual({ result: 'Error', cid: refused.headers['x-svc-cid'], details: 'Queue is full' });
    expect((await until(k, (r) => r.length <= 1)).length).toBe(1);
  });

  it('refuses arguments that are not a service name and an input object', async () => {
    const BAD = `import { service, invokeAsync } from 'svc/sdk';
export default service({ handle: async () => { try { await invokeAsync('', [1] as never); return {}; } catch (e) { return { error: String(e) }; } } });
`;
    k = await startKernel({ config: config('{}'), services: { 'front.ts': BAD } });
    const res = await k.app.inject({ method: 'POST', url: '/front', payload: {} });
    expect(res.json().error).toMatch(/invalid arguments for queue.invokeAsync/);
  });
});
